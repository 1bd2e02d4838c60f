/**
 * Issue 24's record-level capabilities through the public API, on the memory store: key state that fences
 * (`claim` `expect`, `setKeyState`), hold-back (`release` `holdMs`), `remove`, idempotent submissions and
 * write refusals (`fencedWrite` `submission`, `context.refuse`), `check` before a side effect and the local
 * deadline, and a second claim by the same run. Each test names the production error it replaces (the seeds).
 */
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { describeRefusal } from '../../src/describe.js';
import {
  KeyHeldBackError,
  LeaseLostError,
  ReplayConflictError,
  RunAlreadyAcquiredError,
  StateMismatchError,
  SubmissionReplayedError,
  TtlInsufficientError,
  WriteRefusedError,
} from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import { createOperator } from '../../src/operator.js';
import { submissionDigest } from '../../src/submission.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';

const KEY = 'ramp:current';
const HOUR = 3_600_000;

function setup() {
  const clock = createManualClock(MEMORY_EPOCH);
  let mono = 0;
  const monotonicClock = Object.assign(() => mono, { advance: (ms: number) => (mono += ms) });
  const store = createMemoryStore({ clock });
  const a = createLeases(store, { holder: 'a', ttlMs: 60_000, monotonicClock });
  const b = createLeases(store, { holder: 'b', ttlMs: 60_000 });
  return { clock, monotonicClock, store, a, b, operator: createOperator(store, { by: 'ops:alice' }) };
}

describe('key state that fences (seed 002: "tier moved underneath us")', () => {
  it('a claim expects the tier; a commit after the tier moved is refused state-changed naming expected vs found', async () => {
    const { a, b } = setup();
    await b.setKeyState(KEY, { tier: '3' });
    const claimed = await a.claim(KEY, { runId: 'r1', expect: { tier: '3' } });
    if (!claimed.ok) throw new Error(describeRefusal(claimed));
    const moved = await b.setKeyState(KEY, { tier: '4' }, { by: 'ramp-admin' });
    expect(moved).toMatchObject({ ok: true, changed: ['tier'], state: { tier: '4' }, ended: { kind: 'state-changed', by: 'ramp-admin' } });
    const outcome = await a.fencedWrite(claimed.lease, () => 'commit');
    expect(outcome).toMatchObject({ ok: false, reason: 'state-changed', attribute: { name: 'tier', expected: '3', found: '4' } });
    if (outcome.ok) return;
    expect(describeRefusal(outcome)).toContain('(state-changed: the tier moved: expected tier=3, found 4)');
    expect(describeRefusal(outcome)).toContain('by ramp-admin');
    await expect(a.fencedWriteOrThrow(claimed.lease, () => 'commit')).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('an unchanged value keeps the grant', async () => {
    const { a, b } = setup();
    await b.setKeyState(KEY, { revision: 'r7' });
    const lease = await a.claimOrThrow(KEY, { runId: 'r1' });
    expect(await b.setKeyState(KEY, { revision: 'r7' })).toMatchObject({ ok: true, changed: [], ended: null });
    expect(await a.fencedWrite(lease, () => 1)).toMatchObject({ ok: true, value: 1 });
  });

  it('a claim whose expect differs is refused state-mismatch (also as StateMismatchError), before anything else', async () => {
    const { a, b } = setup();
    await b.setKeyState(KEY, { tier: '4' });
    await b.claimOrThrow(KEY);
    const refused = await a.claim(KEY, { expect: { tier: '3' } });
    expect(refused).toMatchObject({ ok: false, reason: 'state-mismatch', field: { name: 'tier', expected: '3', found: '4' } });
    if (refused.ok) return;
    expect(describeRefusal(refused)).toBe(
      "claim refused on ramp:current (state-mismatch: the key's state differs from the claim's expect: the tier moved: expected tier=3, found 4)",
    );
    await expect(a.claimOrThrow(KEY, { expect: { tier: '3' } })).rejects.toMatchObject({ code: 'STATE_MISMATCH' });
    await expect(a.claimOrThrow(KEY, { expect: { tier: '3' } })).rejects.toBeInstanceOf(StateMismatchError);
    // `null` requires the name to be absent.
    expect(await a.claim('fresh', { expect: { tier: null } })).toMatchObject({ ok: true });
  });
});

describe('hold back a key until a time (a retry schedule)', () => {
  it('release with holdMs refuses claims held-back until heldUntil; inspect and list show it; then the key is claimable', async () => {
    const { clock, a, b, operator } = setup();
    const lease = await a.claimOrThrow(KEY);
    await a.release(lease, { holdMs: 6 * HOUR });
    const refused = await b.claim(KEY);
    expect(refused).toMatchObject({ ok: false, reason: 'held-back', heldUntil: MEMORY_EPOCH + 6 * HOUR });
    if (refused.ok) return;
    expect(describeRefusal(refused)).toContain(`held-back: held back until ${new Date(MEMORY_EPOCH + 6 * HOUR).toISOString()}`);
    await expect(b.claimOrThrow(KEY)).rejects.toBeInstanceOf(KeyHeldBackError);
    expect(await operator.inspect(KEY)).toMatchObject({ heldUntil: MEMORY_EPOCH + 6 * HOUR });
    const page = await operator.list();
    expect(page.leases[0]).toMatchObject({ key: KEY, heldUntil: MEMORY_EPOCH + 6 * HOUR, keyState: {} });
    clock.advance(6 * HOUR);
    expect(await b.claim(KEY)).toMatchObject({ ok: true });
    expect(await operator.inspect(KEY)).toMatchObject({ heldUntil: null });
  });

  it('a waiting claim on a held-back key sleeps until heldUntil instead of polling', async () => {
    const store = createMemoryStore();
    const a = createLeases(store, { holder: 'a', ttlMs: 60_000 });
    const lease = await a.claimOrThrow(KEY);
    await a.release(lease, { holdMs: 300 });
    let attempts = 0;
    const counting = createLeases(
      {
        ...store,
        claim: (command: Parameters<typeof store.claim>[0]) => {
          attempts++;
          return store.claim(command);
        },
      } as typeof store,
      { holder: 'b', ttlMs: 60_000 },
    );
    const started = performance.now();
    const waited = await counting.claim(KEY, { wait: { timeoutMs: 5_000, pollMs: 20 } });
    expect(waited.ok).toBe(true);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    // NOTE: one refused attempt, then one at heldUntil (plus jitter): not one per pollMs (15 in 300 ms).
    expect(attempts).toBeLessThanOrEqual(4);
  });

  it('setKeyState sets and cancels a hold with no lease; bad holds are refused before any I/O', async () => {
    const { b, operator } = setup();
    expect(await operator.setKeyState(KEY, {}, { holdMs: HOUR })).toMatchObject({ ok: true, heldUntil: MEMORY_EPOCH + HOUR });
    expect(await b.claim(KEY)).toMatchObject({ reason: 'held-back' });
    expect(await operator.setKeyState(KEY, {}, { holdMs: null })).toMatchObject({ heldUntil: null });
    expect(await b.claim(KEY)).toMatchObject({ ok: true });
    for (const holdMs of [-1, 0, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 366 * 24 * HOUR, '10']) {
      await expect(operator.setKeyState(KEY, {}, { holdMs: holdMs as number })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
  });
});

describe('remove (seed 004: "no ramp configured")', () => {
  it('is refused held while live unless forced; the old grant is then told missing; a re-created key never reissues a token', async () => {
    const { a, b, operator } = setup();
    const lease = await a.claimOrThrow(KEY, { runId: 'r1' });
    expect(await operator.remove(KEY)).toMatchObject({ ok: false, reason: 'held', token: lease.token });
    expect(await operator.remove(KEY, { expectedToken: lease.token + 1n, force: true })).toMatchObject({ ok: false, reason: 'superseded' });
    expect(await operator.remove(KEY, { force: true, expectedToken: lease.token })).toMatchObject({
      ok: true,
      token: lease.token,
      grant: { holder: 'a', live: true },
    });
    const outcome = await a.checkpoint(lease, { wave: 2 });
    expect(outcome).toMatchObject({ ok: false, reason: 'missing' });
    if (!outcome.ok)
      expect(describeRefusal(outcome)).toContain('(missing: the lease record does not exist: never created, or deleted by an operator)');
    const again = await b.claimOrThrow(KEY);
    expect(again.token).toBeGreaterThan(lease.token);
    expect(await operator.remove('never-there')).toMatchObject({ ok: false, reason: 'missing', token: null });
  });
});

describe('idempotent submissions (seed 000: classifier submit)', () => {
  it('recorded once; a retry with reordered keys is replayed; another payload is replay-conflict; nothing written again', async () => {
    const { a } = setup();
    const lease = await a.claimOrThrow(KEY, { runId: 'r7' });
    let writes = 0;
    const submit = (payload: unknown) => a.fencedWrite(lease, () => ++writes, { submission: { payload, receipt: { decisionId: 'd1' } } });
    const first = await submit({ label: 'relevant', score: 0.9, evidence: { a: 1, b: [1, 2] } });
    expect(first).toMatchObject({ ok: true, value: 1, submission: { runId: 'r7', holder: 'a', receiptJson: '{"decisionId":"d1"}' } });
    const replayed = await submit({ evidence: { b: [1, 2], a: 1 }, score: 0.9, label: 'relevant' });
    expect(replayed).toMatchObject({ ok: false, reason: 'replayed', submission: { runId: 'r7', receiptJson: '{"decisionId":"d1"}' } });
    const conflict = await submit({ label: 'irrelevant', score: 0.9, evidence: { a: 1, b: [1, 2] } });
    expect(conflict).toMatchObject({ ok: false, reason: 'replay-conflict', expected: { runId: 'r7' }, found: { runId: 'r7' } });
    expect(writes).toBe(1);
    if (!conflict.ok) expect(describeRefusal(conflict)).toContain('replay-conflict: run r7 was recorded with another payload');
    await expect(a.fencedWriteOrThrow(lease, () => 0, { submission: { payload: { label: 'x' } } })).rejects.toBeInstanceOf(
      ReplayConflictError,
    );
    await expect(
      a.fencedWriteOrThrow(lease, () => 0, { submission: { payload: { score: 0.9, label: 'relevant', evidence: { a: 1, b: [1, 2] } } } }),
    ).rejects.toBeInstanceOf(SubmissionReplayedError);
    // Still the current grant: a replay is not a loss.
    expect(await a.renew(lease)).toMatchObject({ ok: true });
  });

  it('a worker retrying after its lease ended still learns that its submission landed (lookup before the fence)', async () => {
    const { clock, a, b } = setup();
    const lease = await a.claimOrThrow(KEY, { runId: 'r7' });
    await a.fencedWrite(lease, () => 'saved', { submission: { payload: { ok: 1 } } });
    clock.advance(60_000);
    await b.claimOrThrow(KEY);
    expect(await a.fencedWrite(lease, () => 'again', { submission: { payload: { ok: 1 } } })).toMatchObject({
      ok: false,
      reason: 'replayed',
    });
    expect(await a.fencedWrite(lease, () => 'again', { submission: { payload: { ok: 1 }, runId: 'r8' } })).toMatchObject({
      ok: false,
      reason: 'superseded',
    });
  });

  it('the digest is SHA-256 of canonical JSON; bad payloads and run ids are refused before any I/O', async () => {
    expect(submissionDigest({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: null } }, 1_000)).toBe(
      submissionDigest({ a: { c: null, d: [1, { x: 1, y: 2 }] }, b: 1 }, 1_000),
    );
    expect(submissionDigest({ a: 1 }, 1_000)).toMatch(/^[0-9a-f]{64}$/);
    const { store } = setup();
    let calls = 0;
    const counted = createLeases(
      {
        ...store,
        fencedWrite: (...args: Parameters<typeof store.fencedWrite>) => {
          calls++;
          return store.fencedWrite(...args);
        },
      } as typeof store,
      {
        holder: 'a',
        maxCheckpointBytes: 1_000,
      },
    );
    const noRun = await counted.claimOrThrow(KEY);
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    const bad: unknown[] = [
      null,
      'payload',
      {},
      { payload: undefined },
      { payload: cyclic, runId: 'r' },
      { payload: 1n, runId: 'r' },
      { payload: { f: () => 1 }, runId: 'r' },
      { payload: { n: Number.NaN }, runId: 'r' },
      { payload: new Date(0), runId: 'r' },
      { payload: 'x'.repeat(2_000), runId: 'r' },
      { payload: 1 }, // the lease has no run id and none is given
      { payload: 1, runId: '' },
      { payload: 1, runId: 'a\u0000b' },
      { payload: 1, runId: 'r', bindToGrant: 'yes' },
      { payload: 1, runId: 'r', receipt: { big: 1n } },
    ];
    for (const submission of bad) {
      await expect(counted.fencedWrite(noRun, () => 1, { submission: submission as never })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    }
    expect(calls).toBe(0);
  });

  it('bindToGrant: another grant presenting the same run id gets the refusal, not the stored receipt', async () => {
    const { a } = setup();
    const first = await a.claimOrThrow(KEY, { runId: 'r7' });
    await a.fencedWrite(first, () => 1, { submission: { payload: 1, bindToGrant: true, receipt: 'secret-ish' } });
    await a.release(first);
    const second = await a.claimOrThrow(KEY, { runId: 'r7' });
    expect(await a.fencedWrite(second, () => 1, { submission: { payload: 1, bindToGrant: true } })).toMatchObject({
      ok: false,
      reason: 'replay-conflict',
    });
    expect(await a.fencedWrite(first, () => 1, { submission: { payload: 1, bindToGrant: true } })).toMatchObject({
      ok: false,
      reason: 'replayed',
    });
  });
});

describe('a refusal from inside the fenced step', () => {
  it('context.refuse(code, detail) answers write-refused with the code, applies nothing, and is not a lease loss', async () => {
    const { a, operator } = setup();
    const lease = await a.claimOrThrow(KEY, { runId: 'r1' });
    const outcome = await a.fencedWrite(lease, (context) => context.refuse('owner-inactive', 'account 42 is inactive'), {
      checkpoint: { step: 9 },
      submission: { payload: { decision: 'x' } },
    });
    expect(outcome).toMatchObject({ ok: false, reason: 'write-refused', code: 'owner-inactive', detail: 'account 42 is inactive' });
    if (!outcome.ok)
      expect(describeRefusal(outcome)).toContain('write-refused: the write refused itself with owner-inactive: account 42 is inactive');
    expect((await operator.inspect(KEY)).checkpoint).toBeNull();
    // The submission was not recorded: the same run may submit now.
    expect(await a.fencedWrite(lease, () => 'ok', { submission: { payload: { decision: 'x' } } })).toMatchObject({ ok: true });
    await expect(a.fencedWriteOrThrow(lease, (context) => context.refuse('owner-inactive'))).rejects.toBeInstanceOf(WriteRefusedError);
  });
});

describe('check ownership before a side effect (seed 001: "lease lost: expected runId")', () => {
  it('passes with enough TTL left, refuses ttl-insufficient with what was left, and the fence reason otherwise', async () => {
    const { clock, a, b } = setup();
    const lease = await a.claimOrThrow(KEY, { runId: 'r1' });
    expect(await a.check(lease, { minTtlMs: 30_000 })).toMatchObject({ ok: true, remainingMs: 60_000, token: lease.token });
    clock.advance(45_000);
    const short = await a.check(lease, { minTtlMs: 30_000 });
    expect(short).toMatchObject({ ok: false, reason: 'ttl-insufficient', remainingMs: 15_000, minTtlMs: 30_000 });
    if (!short.ok) expect(describeRefusal(short)).toContain('ttl-insufficient: 15000 ms left, at least 30000 required');
    await expect(a.checkOrThrow(lease, { minTtlMs: 30_000 })).rejects.toBeInstanceOf(TtlInsufficientError);
    await b.revoke(KEY, { reason: 'operator abort', by: 'alice' });
    const lost = await a.check(lease);
    expect(lost).toMatchObject({ ok: false, reason: 'revoked', expected: { runId: 'r1' } });
    await expect(a.checkOrThrow(lease)).rejects.toMatchObject({ code: 'LEASE_LOST' });
    await b.claimOrThrow(KEY, { runId: 'r2' });
    const superseded = await a.check(lease);
    if (superseded.ok || superseded.reason === 'ttl-insufficient') throw new Error('expected a fence refusal');
    expect(describeRefusal(superseded)).toContain(
      `expected token 1 (holder a, run r1), found token ${superseded.found.token} (holder b, run r2)`,
    );
  });

  it('writes nothing, and refuses bad minTtlMs before any I/O', async () => {
    const { a, store } = setup();
    const lease = await a.claimOrThrow(KEY);
    const before = store.record(KEY);
    await a.check(lease, { minTtlMs: 1 });
    expect(store.record(KEY)).toBe(before);
    for (const minTtlMs of [-1, 1.5, Number.NaN, '5', 366 * 24 * HOUR]) {
      await expect(a.check(lease, { minTtlMs: minTtlMs as number })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
  });

  it('lease.timeLeftMs(reserve): the local deadline minus a reserve, from the last answer and the monotonic clock', async () => {
    const { a, monotonicClock } = setup();
    const lease = await a.claimOrThrow(KEY);
    expect(lease.timeLeftMs()).toBe(60_000);
    monotonicClock.advance(10_000);
    expect(lease.timeLeftMs(5_000)).toBe(45_000);
    monotonicClock.advance(60_000);
    expect(lease.timeLeftMs()).toBe(0);
    expect(() => lease.timeLeftMs(-1)).toThrow(/reserveMs/);
    expect((await a.claimOrThrow('forever', { ttlMs: null })).timeLeftMs(1_000)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('same run, second claim', () => {
  it('answers run-already-acquired with the live grant for the same holder and run; another run is held', async () => {
    const { a } = setup();
    const lease = await a.claimOrThrow(KEY, { runId: 'r1' });
    const again = await a.claim(KEY, { runId: 'r1' });
    expect(again).toMatchObject({ ok: false, reason: 'run-already-acquired', token: lease.token, expiresAt: lease.expiresAt, runId: 'r1' });
    await expect(a.claimOrThrow(KEY, { runId: 'r1' })).rejects.toBeInstanceOf(RunAlreadyAcquiredError);
    expect(await a.claim(KEY, { runId: 'r2' })).toMatchObject({ ok: false, reason: 'held' });
    expect(await a.claim(KEY)).toMatchObject({ ok: false, reason: 'held' });
  });
});

describe('bad input to the new options, before any I/O', () => {
  it('expect, setKeyState values and by, release holdMs and remove options', async () => {
    const { a, operator } = setup();
    const lease = await a.claimOrThrow(KEY);
    const bad: (() => Promise<unknown>)[] = [
      () => a.claim('k', { expect: 'tier=3' as never }),
      () => a.claim('k', { expect: { tier: 3 } as never }),
      () => a.claim('k', { expect: { tier: '' } }),
      () => a.claim('k', { expect: { '': '3' } }),
      () => a.claim('k', { expect: { tier: 'a\u0000' } }),
      () => a.setKeyState(KEY, {}),
      () => a.setKeyState(KEY, null as never),
      () => a.setKeyState(KEY, { tier: 4 } as never),
      () => a.setKeyState(KEY, { tier: '' }),
      () => a.setKeyState(KEY, { tier: '4' }, { by: '' }),
      () => a.setKeyState(KEY, Object.fromEntries(Array.from({ length: 65 }, (_, index) => [`n${index}`, 'v']))),
      () => a.release(lease, { holdMs: -5 }),
      () => a.release(lease, { holdMs: Number.POSITIVE_INFINITY }),
      () => operator.remove(KEY, { force: 'yes' as never }),
      () => operator.remove(KEY, { expectedToken: 3 as never }),
      () => operator.remove(''),
    ];
    for (const call of bad) await expect(call()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await a.renew(lease)).toMatchObject({ ok: true });
  });
});

describe('withLease and the new refusals', () => {
  it('answers a held-back or state-mismatch claim as its outcome; a write refusal or replay inside fn is no loss', async () => {
    const { a, b } = setup();
    await b.setKeyState('held', {}, { holdMs: HOUR });
    expect(await a.withLease('held', async () => 'ran')).toMatchObject({ ok: false, reason: 'held-back' });
    await b.setKeyState(KEY, { tier: '4' });
    expect(await a.withLease(KEY, async () => 'ran', { expect: { tier: '3' } })).toMatchObject({ ok: false, reason: 'state-mismatch' });
    const outcome = await a.withLease(
      KEY,
      async (lease, signal) => {
        await a.fencedWrite(lease, (context) => context.refuse('owner-inactive'));
        await a.fencedWrite(lease, () => 1, { submission: { payload: 1 } });
        await a.fencedWrite(lease, () => 1, { submission: { payload: 1 } });
        return signal.aborted;
      },
      { runId: 'r1', expect: { tier: '4' } },
    );
    expect(outcome).toMatchObject({ ok: true, value: false, lost: null });
  });

  it('a state change while fn runs is a loss: the signal aborts with state-changed', async () => {
    const { a, b } = setup();
    const outcome = await a.withLease(KEY, async (lease, signal) => {
      await b.setKeyState(KEY, { tier: '5' });
      await a.checkpoint(lease, { step: 1 });
      return signal.aborted;
    });
    expect(outcome).toMatchObject({ ok: false, reason: 'lost', lost: { code: 'LEASE_LOST', refusal: { reason: 'state-changed' } } });
  });
});

describe('check inside withLease', () => {
  it('a fence refusal aborts the run, too little TTL does not', async () => {
    const { a, b } = setup();
    const outcome = await a.withLease(KEY, async (lease, signal) => {
      expect(await a.check(lease, { minTtlMs: 120_000 })).toMatchObject({ reason: 'ttl-insufficient' });
      const before = signal.aborted;
      await b.revoke(KEY, { reason: 'abort' });
      expect(await a.check(lease)).toMatchObject({ reason: 'revoked' });
      return [before, signal.aborted];
    });
    expect(outcome).toMatchObject({ ok: false, reason: 'lost', returned: { value: [false, true] } });
  });
});
