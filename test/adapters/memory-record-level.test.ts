/**
 * The memory store's own side of issue 24's record-level operations (the conformance suite covers the rest):
 * its token floor outlives removed records, its fenced write records submissions and answers its callback's
 * `context.refuse`, and its release watchers hear a removal or a key-state change that ended a grant.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createManualClock } from '../../src/clock.js';
import type { ClaimCommand, SubmissionCommand } from '../../src/fence/operations.js';
import type { Fence } from '../../src/fence/types.js';

const EPOCH = Date.UTC(2026, 0, 1);

function setup(options: { tokenFloor?: () => bigint } = {}) {
  const clock = createManualClock(EPOCH);
  const store = createMemoryStore({ clock, ...options });
  let secrets = 0;
  /** Claims `key` for `holder`; returns its fence (fails the test when refused). */
  const claim = async (key: string, holder = 'w1', extra: Partial<ClaimCommand> = {}): Promise<Fence> => {
    const secret = `${++secrets}`.padStart(32, '0');
    const outcome = await store.claim({ key, holder, runId: null, secret, ttlMs: 1_000, attributes: {}, recovering: false, ...extra });
    if (!outcome.ok) throw new Error(`claim refused: ${outcome.reason}`);
    return { key, token: outcome.token, secret, holder, runId: null };
  };
  return { clock, store, claim };
}

const submission = (runId: string, digest = 'a'.repeat(64)): SubmissionCommand => ({
  runId,
  digest,
  receiptJson: '{"id":1}',
  bindToGrant: false,
});

describe('memory store: tokens after remove', () => {
  it('a removed key claimed again gets a token above every token it had (before the fix: the same token again)', async () => {
    const { store, claim } = setup();
    const first = await claim('k');
    await store.release({ fence: first });
    const second = await claim('k');
    await store.revoke({ key: 'k', reason: 'x', by: 'ops', requireRecovery: false, expectedToken: null });
    const burned = (await store.inspect('k')).token;
    expect(burned).toBe(second.token + 1n);
    expect(await store.remove({ key: 'k', force: false, expectedToken: null })).toMatchObject({ ok: true, token: burned });
    expect(await store.renew({ fence: second, ttlMs: 1_000 })).toMatchObject({ ok: false, reason: 'missing' });
    const again = await claim('k');
    expect(again.token).toBeGreaterThan(burned);
    // NOTE: once the key is claimed again, an old fence is superseded by the newer grant.
    expect(await store.renew({ fence: second, ttlMs: 1_000 })).toMatchObject({ ok: false, reason: 'superseded' });
  });

  it('a removed and re-created key keeps tokens above the removed ones, also removed again and again', async () => {
    const { store, claim } = setup();
    let highest = 0n;
    for (let round = 0; round < 5; round += 1) {
      const fence = await claim('k');
      expect(fence.token).toBeGreaterThan(highest);
      highest = fence.token;
      expect(await store.remove({ key: 'k', force: true, expectedToken: null })).toMatchObject({ ok: true, token: fence.token });
      expect(await store.fencedWrite(fence, () => 'late')).toMatchObject({ ok: false, reason: 'missing' });
    }
  });

  it('a removed key whose state is set before it is claimed again still mints above its old tokens (before: token 1 again)', async () => {
    const { store, claim } = setup();
    const first = await claim('k');
    await store.remove({ key: 'k', force: true, expectedToken: null });
    await store.setKeyState({ key: 'k', values: { rev: '1' }, by: 'scanner' });
    expect((await store.inspect('k')).token).toBe(0n);
    expect((await claim('k')).token).toBeGreaterThan(first.token);
  });

  it('a store that never removes mints every key from 1, as before', async () => {
    const { claim } = setup();
    expect((await claim('a')).token).toBe(1n);
    expect((await claim('b')).token).toBe(1n);
  });

  it('the tokenFloor option still applies, and a removed token floor above it wins', async () => {
    const { store, claim } = setup({ tokenFloor: () => 10n });
    const first = await claim('k');
    expect(first.token).toBe(10n);
    await store.remove({ key: 'k', force: true, expectedToken: null });
    expect((await claim('k')).token).toBe(11n);
  });
});

describe('memory store: fenced write with a submission or a refusal', () => {
  it('records the submission with the write and the checkpoint; a retry after the lease ended is replayed, writing nothing', async () => {
    const { store, claim, clock } = setup();
    const fence = await claim('k');
    const ledger: string[] = [];
    const applied = await store.fencedWrite(fence, () => ledger.push('w1'), { checkpointJson: '{"n":1}', submission: submission('r7') });
    expect(applied).toMatchObject({
      ok: true,
      token: fence.token,
      checkpoint: { json: '{"n":1}', token: fence.token },
      submission: { runId: 'r7', token: fence.token, holder: 'w1', receiptJson: '{"id":1}', at: EPOCH },
    });
    clock.advance(5_000);
    let called = false;
    const retried = await store.fencedWrite(fence, () => (called = true), { submission: submission('r7') });
    expect(retried).toMatchObject({ ok: false, reason: 'replayed', submission: { runId: 'r7', token: fence.token } });
    expect(called).toBe(false);
    const conflict = await store.fencedWrite(fence, () => (called = true), { submission: submission('r7', 'b'.repeat(64)) });
    expect(conflict).toMatchObject({
      ok: false,
      reason: 'replay-conflict',
      expected: { digest: 'b'.repeat(64) },
      found: { digest: 'a'.repeat(64) },
    });
    expect(called).toBe(false);
    expect(ledger).toEqual(['w1']);
    expect(store.record('k')?.submissions).toHaveLength(1);
  });

  it('context.refuse answers write-refused with the code and detail, and saves no checkpoint or submission', async () => {
    const { store, claim } = setup();
    const fence = await claim('k');
    const before = store.record('k');
    const refused = await store.fencedWrite(fence, (context) => context.refuse('owner-inactive', 'account 7 closed'), {
      checkpointJson: '{"n":1}',
      submission: submission('r1'),
    });
    expect(refused).toEqual({
      ok: false,
      reason: 'write-refused',
      key: 'k',
      code: 'owner-inactive',
      detail: 'account 7 closed',
      token: fence.token,
      now: EPOCH,
    });
    expect(store.record('k')).toBe(before);
    // The run id was not recorded: the same submission applies afterwards.
    expect(await store.fencedWrite(fence, () => 'ok', { submission: submission('r1') })).toMatchObject({ ok: true, value: 'ok' });
  });

  it('a bad refusal code fails the write like any throw (INVALID_ARGUMENT), applying nothing', async () => {
    const { store, claim } = setup();
    const fence = await claim('k');
    await expect(store.fencedWrite(fence, (context) => context.refuse(' bad code'), { checkpointJson: '{}' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(store.record('k')?.checkpoint).toBeNull();
  });
});

describe('memory store: release watchers', () => {
  it('are told when remove deletes the record, and when a key-state change ends a grant, not when nothing ended', async () => {
    const { store, claim } = setup();
    const told: string[] = [];
    const stop = await store.watchFreed!('k', () => told.push('freed'));
    await claim('k');
    await store.setKeyState({ key: 'k', values: { rev: '1' }, by: 'scanner' });
    expect(told).toEqual(['freed']);
    await claim('k');
    await store.setKeyState({ key: 'k', values: { rev: '1' }, by: 'scanner' });
    expect(told).toEqual(['freed']);
    await store
      .remove({ key: 'k', force: false, expectedToken: null })
      .then((outcome) => expect(outcome).toMatchObject({ ok: false, reason: 'held' }));
    expect(told).toEqual(['freed']);
    await store.remove({ key: 'k', force: true, expectedToken: null });
    expect(told).toEqual(['freed', 'freed']);
    stop();
  });
});

describe('memory store: list after remove', () => {
  it('a removed key leaves the listing and a key created after it joins (before the fix: [a, b])', async () => {
    const { store, claim } = setup();
    await claim('a');
    await claim('b');
    const list = store.list;
    if (list === undefined) throw new Error('the memory store lists');
    await list({ prefix: '', limit: 10, cursor: null });
    await store.remove({ key: 'a', force: true, expectedToken: null });
    await claim('c');
    const page = await list({ prefix: '', limit: 10, cursor: null });
    expect(page.leases.map((lease) => lease.key)).toEqual(['b', 'c']);
    await claim('a');
    await store.remove({ key: 'b', force: true, expectedToken: null });
    const again = await list({ prefix: '', limit: 10, cursor: null });
    expect(again.leases.map((lease) => lease.key)).toEqual(['a', 'c']);
  });
});
