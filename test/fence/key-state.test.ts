import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import type { SetKeyStateCommand } from '../../src/fence/operations.js';
import * as transitions from '../../src/fence/transitions.js';
import type { Fence, KeyState, LeaseRecord } from '../../src/fence/types.js';
import { checkFence, expiredEnding, isLive } from '../../src/fence/verdict.js';
import { claimCommandArb, KEY, reachedArb, stateValueArb, stateValuesArb } from './arbitraries.js';

const dtArb = fc.integer({ min: 0, max: 2_000 });

/** Code-unit order (what `<` does on strings), written out here rather than imported from the core. */
const codeUnitOrder = (names: readonly string[]): string[] => [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

/** The names `values` would change in `state`, in code-unit order. */
function changedNames(state: KeyState, values: Readonly<Record<string, string | null>>): string[] {
  return codeUnitOrder(Object.keys(values).filter((name) => (values[name] ?? null) !== (state[name] ?? null)));
}

/** The fence of the record's current grant. */
function currentFence(record: LeaseRecord | null): Fence | null {
  const grant = record?.grant;
  if (grant == null) return null;
  return { key: KEY, token: grant.token, secret: grant.secret, holder: grant.holder, runId: grant.runId };
}

/** A reached state with a live grant at `now`. */
const liveArb = fc
  .tuple(reachedArb, dtArb)
  .map(([reached, dt]) => ({ record: reached.record, now: reached.now + dt }))
  .filter(({ record, now }) => record?.grant != null && isLive(record.grant, now));

const setState = (values: Record<string, string | null>): SetKeyStateCommand => ({ key: KEY, values, by: 'scanner' });

describe('setKeyState', () => {
  test.prop([reachedArb, dtArb])('setting values the key already has changes nothing and keeps the grant (live or not)', (reached, dt) => {
    const now = reached.now + dt;
    const state = reached.record?.state ?? {};
    const same = transitions.setKeyState(reached.record, setState({ ...state }), now);
    expect(same.changed).toBe(false);
    expect(same.record).toBe(reached.record);
    expect(same.outcome).toEqual({
      ok: true,
      key: KEY,
      state,
      heldUntil: reached.record?.heldUntil ?? null,
      changed: [],
      ended: null,
      now,
    });
    // Removing a name that is absent is no change either.
    const absent = transitions.setKeyState(reached.record, setState({ 'never-set': null }), now);
    expect(absent.changed).toBe(false);
  });

  test.prop([liveArb, stateValuesArb])(
    'a changed value ends a live grant as state-changed, naming the first changed name in code-unit order; the token stays',
    ({ record, now }, values) => {
      const before = record!;
      const changed = changedNames(before.state, values);
      fc.pre(changed.length > 0);
      const grant = before.grant!;
      const first = changed[0]!;
      const result = transitions.setKeyState(before, setState(values), now);
      const ending = {
        kind: 'state-changed',
        token: grant.token,
        holder: grant.holder,
        runId: grant.runId,
        at: now,
        reason: null,
        by: 'scanner',
        change: { name: first, from: before.state[first] ?? null, to: values[first] ?? null },
      };
      const state: Record<string, string> = { ...before.state };
      for (const [name, value] of Object.entries(values)) {
        if (value === null) delete state[name];
        else state[name] = value;
      }
      expect(result.outcome).toEqual({ ok: true, key: KEY, state, heldUntil: before.heldUntil, changed, ended: ending, now });
      expect(result.record).toEqual({ ...before, state, grant: null, ending });
      expect(result.record!.token).toBe(before.token);
    },
  );

  test.prop([liveArb, stateValuesArb, fc.nat({ max: 1_000 }), stateValueArb])(
    "the ended grant's every operation is then refused state-changed, with the name, its value at grant time and now",
    ({ record, now }, values, later, moved) => {
      const before = record!;
      const changed = changedNames(before.state, values);
      fc.pre(changed.length > 0);
      const fence = currentFence(before)!;
      const first = changed[0]!;
      let after = transitions.setKeyState(before, setState(values), now).record;
      // NOTE: the value may move on again before the old holder comes back: `found` is the value now.
      after = transitions.setKeyState(after, setState({ [first]: moved }), now + later).record;
      const at = now + later;
      const refusal = {
        ok: false,
        reason: 'state-changed',
        key: KEY,
        expected: { token: fence.token, holder: fence.holder, runId: fence.runId },
        attribute: { name: first, expected: before.state[first] ?? null, found: after!.state[first] ?? null },
        now: at,
      };
      expect(checkFence(after, fence, at)).toMatchObject(refusal);
      expect(transitions.renew(after, { fence, ttlMs: 100 }, at).outcome).toMatchObject(refusal);
      expect(transitions.checkpoint(after, { fence, json: '{}' }, at).outcome).toMatchObject(refusal);
      expect(transitions.release(after, { fence }, at).outcome).toMatchObject(refusal);
      expect(transitions.recover(after, { fence, action: 'resume' }, at).outcome).toMatchObject(refusal);
      const submission = { runId: 'fresh-run', digest: 'c'.repeat(64), receiptJson: null, bindToGrant: false };
      expect(transitions.checkSubmission(after, fence, submission, at)).toMatchObject(refusal);
      for (const refused of [
        transitions.renew(after, { fence, ttlMs: 100 }, at),
        transitions.checkpoint(after, { fence, json: '{}' }, at),
        transitions.release(after, { fence }, at),
        transitions.recover(after, { fence, action: 'resume' }, at),
      ]) {
        expect(refused.changed).toBe(false);
        expect(refused.record).toBe(after);
      }
    },
  );

  test.prop([reachedArb, dtArb, stateValuesArb])(
    'a changed value records an expired grant as expired (as a takeover would); its fence then says expired',
    (reached, dt, values) => {
      const { record } = reached;
      const now = reached.now + dt;
      fc.pre(record?.grant != null && !isLive(record.grant, now));
      fc.pre(changedNames(record!.state, values).length > 0);
      const fence = currentFence(record)!;
      const result = transitions.setKeyState(record, setState(values), now);
      expect(result.outcome.ended).toEqual(expiredEnding(record!.grant!));
      expect(result.record).toMatchObject({ grant: null, ending: expiredEnding(record!.grant!), token: record!.token });
      expect(checkFence(result.record, fence, now)).toMatchObject({ ok: false, reason: 'expired', attribute: null });
    },
  );

  test.prop([reachedArb, dtArb, stateValuesArb])(
    'with no grant, a change ends nothing and keeps the last ending; on no record it creates one at token 0',
    (reached, dt, values) => {
      const { record } = reached;
      const now = reached.now + dt;
      fc.pre(record === null || record.grant === null);
      fc.pre(changedNames(record?.state ?? {}, values).length > 0);
      const result = transitions.setKeyState(record, setState(values), now);
      expect(result.changed).toBe(true);
      expect(result.outcome.ended).toBeNull();
      expect(result.record).toMatchObject({ grant: null, ending: record?.ending ?? null, token: record?.token ?? 0n });
      expect(result.record!.submissions).toEqual(record?.submissions ?? []);
    },
  );

  test.prop([liveArb, claimCommandArb, fc.nat({ max: 1_000 })])(
    'the next claim after a state change is granted the next token and told the grant ended state-changed',
    ({ record, now }, command, later) => {
      const name = 'rev';
      const next = (record!.state[name] ?? '') === '1' ? '2' : '1';
      const ended = transitions.setKeyState(record, setState({ [name]: next }), now);
      fc.pre(ended.record!.heldUntil === null || now + later >= ended.record!.heldUntil);
      fc.pre(!ended.record!.recoveryRequired || command.recovering);
      const claimed = transitions.claim(ended.record, command, now + later);
      expect(claimed.outcome).toMatchObject({ ok: true, token: record!.token + 1n, previous: { kind: 'state-changed', by: 'scanner' } });
      expect(claimed.record!.state).toEqual(ended.record!.state);
    },
  );
});

describe('claim with expect', () => {
  test.prop([reachedArb, dtArb, claimCommandArb, stateValuesArb])(
    'refused state-mismatch, changing nothing, before a live grant is named: the first differing name in code-unit order',
    (reached, dt, command, expected) => {
      const { record } = reached;
      const now = reached.now + dt;
      const state = record?.state ?? {};
      const differing = codeUnitOrder(Object.keys(expected)).filter((name) => (expected[name] ?? null) !== (state[name] ?? null));
      const result = transitions.claim(record, { ...command, expect: expected }, now);
      if (differing.length === 0) {
        // Every expected value matches: the claim is judged as if it expected nothing.
        expect(result.outcome).toEqual(transitions.claim(record, command, now).outcome);
        return;
      }
      const name = differing[0]!;
      expect(result.changed).toBe(false);
      expect(result.record).toBe(record);
      expect(result.outcome).toEqual({
        ok: false,
        reason: 'state-mismatch',
        key: KEY,
        field: { name, expected: expected[name] ?? null, found: state[name] ?? null },
        now,
      });
    },
  );

  test.prop([claimCommandArb])('a null expected value requires the name to be absent', (command) => {
    const withState = transitions.setKeyState(null, setState({ rev: '1' }), 1_000).record;
    expect(transitions.claim(withState, { ...command, expect: { tier: null } }, 1_000).outcome.ok).toBe(true);
    expect(transitions.claim(withState, { ...command, expect: { rev: null } }, 1_000).outcome).toMatchObject({
      ok: false,
      reason: 'state-mismatch',
      field: { name: 'rev', expected: null, found: '1' },
    });
    expect(transitions.claim(null, { ...command, expect: { rev: '' } }, 1_000).outcome).toMatchObject({
      reason: 'state-mismatch',
      field: { name: 'rev', expected: '', found: null },
    });
  });
});

describe('key state names that are Object.prototype names', () => {
  it('__proto__ and constructor are names like any other (before: __proto__ set the prototype, constructor read a function)', () => {
    const setState = transitions.setKeyState(
      null,
      { key: 'k', values: JSON.parse('{"__proto__":"a","constructor":"b"}') as Record<string, string>, by: 'op' },
      0,
    );
    expect(Object.hasOwn(setState.outcome.state, '__proto__')).toBe(true);
    expect(setState.outcome.changed).toEqual(['__proto__', 'constructor']);
    const refused = transitions.claim(
      setState.record,
      {
        key: 'k',
        holder: 'w',
        runId: null,
        secret: 's'.repeat(32),
        ttlMs: 1000,
        attributes: {},
        recovering: false,
        expect: JSON.parse('{"__proto__":"x"}'),
      },
      1,
    );
    expect(refused.outcome).toMatchObject({ ok: false, reason: 'state-mismatch', field: { name: '__proto__', expected: 'x', found: 'a' } });
    const fresh = transitions.claim(
      null,
      {
        key: 'n',
        holder: 'w',
        runId: null,
        secret: 's'.repeat(32),
        ttlMs: 1000,
        attributes: {},
        recovering: false,
        expect: { constructor: null },
      },
      1,
    );
    expect(fresh.outcome.ok).toBe(true);
  });
});
