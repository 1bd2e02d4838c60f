/**
 * Conformance specs, part 3: progress. A fenced write with a checkpoint saves both or neither (the step the
 * exactly-once pattern rests on), and a release with an explicit checkpoint decision resolves a pending
 * recovery the way `checkpoint` and `recover` do.
 */
import { describe, expect, it } from 'vitest';
import type { Lease } from '../../src/lease.js';
import type { Leases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';
import { mustClaim, type SuiteContext } from './context.js';

/**
 * `leases` whose fenced writes carry `checkpoint` (and, with `failAfterWrite`, whose write callbacks throw
 * after the harness's write ran), so the harness's own ledger write can be combined with a checkpoint. The
 * specs also pass the checkpoint as `appendUnderFence`'s options, for harnesses that write another way.
 */
function withCheckpoint<S extends Store>(leases: Leases<S>, checkpoint: unknown, failAfterWrite = false): Leases<S> {
  return {
    ...leases,
    fencedWrite: (lease, write, options) =>
      leases.fencedWrite(
        lease,
        // NOTE: synchronous, so a Redis recorder's reply promise is passed through untouched (awaiting it
        // inside the callback is refused); Postgres has already queued the write when the callback throws.
        (context) => {
          const value = write(context);
          if (!failAfterWrite) return value;
          void Promise.resolve(value).catch(() => undefined);
          throw new Error('the write callback failed after writing');
        },
        { ...options, checkpoint },
      ),
  };
}

/** A key whose checkpoint is `{ cursor: 41 }` of a revoked grant, with recovery required, and a recovering grant on it. */
async function pendingRecovery<S extends Store>(context: SuiteContext<S>, label: string): Promise<{ key: string; b: Leases<S>; recovering: Lease; revokedToken: bigint }> {
  const key = context.harness.freshKey(label);
  const a = context.leasesFor('a');
  const first = await mustClaim(a, key);
  expect(await a.checkpoint(first, { cursor: 41 })).toMatchObject({ ok: true });
  expect(await context.leasesFor('ops').revoke(key, { reason: 'operator abort', requireRecovery: true })).toMatchObject({ ok: true, recoveryRequired: true });
  const b = context.leasesFor('b');
  const recovering = await mustClaim(b, key, { recovering: true });
  return { key, b, recovering, revokedToken: first.token };
}

export function describeProgressSpecs<S extends Store>(context: SuiteContext<S>): void {
  // NOTE: the memory store runs the write callback against plain JS data it cannot roll back, so only the
  // checkpoint half of "a throwing callback applies nothing" is the store's to keep there.
  const rollsBackWrites = (): boolean => !context.harness.store.id.startsWith('memory:');

  describe('fenced write with a checkpoint', () => {
    it('applies both: the write lands and the checkpoint is saved, stamped with the token, in one step', async () => {
      const key = context.harness.freshKey('write-checkpoint');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key);
      const outcome = await context.harness.appendUnderFence(withCheckpoint(a, { batch: 1 }), lease, 'batch-1', { checkpoint: { batch: 1 } });
      expect(outcome).toMatchObject({ ok: true, token: lease.token, checkpoint: { json: '{"batch":1}', token: lease.token } });
      expect(await context.harness.readLedger(key)).toEqual(['batch-1']);
      expect((await a.inspect(key)).checkpoint).toMatchObject({ value: { batch: 1 }, token: lease.token });
      const plain = await context.harness.appendUnderFence(a, lease, 'batch-2');
      expect(plain).toMatchObject({ ok: true, checkpoint: null });
      expect((await a.inspect(key)).checkpoint).toMatchObject({ value: { batch: 1 }, token: lease.token });
    });

    it('applies neither when the fence does not hold (expired, then superseded)', async () => {
      const key = context.harness.freshKey('write-checkpoint-refused');
      const a = context.leasesFor('a');
      const old = await mustClaim(a, key);
      await a.checkpoint(old, { batch: 0 });
      await context.harness.expireNow(key);
      expect(await context.harness.appendUnderFence(withCheckpoint(a, { batch: 1 }), old, 'expired', { checkpoint: { batch: 1 } })).toMatchObject({ ok: false, reason: 'expired' });
      const current = await mustClaim(context.leasesFor('b'), key);
      expect(await context.harness.appendUnderFence(withCheckpoint(a, { batch: 1 }), old, 'stale', { checkpoint: { batch: 1 } })).toMatchObject({ ok: false, reason: 'superseded', found: { token: current.token } });
      expect(await context.harness.readLedger(key)).toEqual([]);
      expect((await a.inspect(key)).checkpoint).toMatchObject({ value: { batch: 0 }, token: old.token });
    });

    it('applies neither when the write callback throws: the error propagates, the checkpoint is unchanged', async () => {
      const key = context.harness.freshKey('write-checkpoint-throws');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key);
      await a.checkpoint(lease, { batch: 0 });
      await expect(
        a.fencedWrite(
          lease,
          () => {
            throw new Error('no write');
          },
          { checkpoint: { batch: 1 } },
        ),
      ).rejects.toThrow('no write');
      await expect(context.harness.appendUnderFence(withCheckpoint(a, { batch: 1 }, true), lease, 'half', { checkpoint: { batch: 1 } })).rejects.toThrow('failed after writing');
      if (rollsBackWrites()) expect(await context.harness.readLedger(key)).toEqual([]);
      expect((await a.inspect(key)).checkpoint).toMatchObject({ value: { batch: 0 }, token: lease.token });
      expect(await context.harness.appendUnderFence(withCheckpoint(a, { batch: 1 }), lease, 'whole', { checkpoint: { batch: 1 } })).toMatchObject({ ok: true });
      expect((await a.inspect(key)).checkpoint).toMatchObject({ value: { batch: 1 }, token: lease.token });
    });

    it('resolves a pending recovery, as checkpoint does', async () => {
      const { key, b, recovering } = await pendingRecovery(context, 'write-checkpoint-recovery');
      expect(await context.harness.appendUnderFence(withCheckpoint(b, { cursor: 42 }), recovering, 'resumed', { checkpoint: { cursor: 42 } })).toMatchObject({ ok: true, checkpoint: { token: recovering.token } });
      expect(await b.inspect(key)).toMatchObject({ recoveryRequired: false, checkpoint: { value: { cursor: 42 }, token: recovering.token } });
      await b.release(recovering);
      expect(await context.leasesFor('c').claim(key)).toMatchObject({ ok: true, checkpoint: { value: { cursor: 42 } } });
    });
  });

  describe('release with a checkpoint decision', () => {
    it('clearing the checkpoint (null) resolves a pending recovery: the next plain claim is granted, with no checkpoint', async () => {
      const { key, b, recovering } = await pendingRecovery(context, 'release-clear-recovery');
      expect(await b.release(recovering, { checkpoint: null })).toMatchObject({ ok: true });
      expect(await b.inspect(key)).toMatchObject({ recoveryRequired: false, checkpoint: null });
      expect(await context.leasesFor('c').claim(key)).toMatchObject({ ok: true, checkpoint: null });
    });

    it('setting a checkpoint resolves a pending recovery: the next plain claim inherits it', async () => {
      const { key, b, recovering } = await pendingRecovery(context, 'release-set-recovery');
      expect(await b.release(recovering, { checkpoint: { cursor: 50 } })).toMatchObject({ ok: true });
      expect((await b.inspect(key)).recoveryRequired).toBe(false);
      expect(await context.leasesFor('c').claim(key)).toMatchObject({ ok: true, checkpoint: { value: { cursor: 50 }, token: recovering.token } });
    });

    it('keeping the checkpoint leaves the recovery pending: plain claims are still refused', async () => {
      const { key, b, recovering, revokedToken } = await pendingRecovery(context, 'release-keep-recovery');
      expect(await b.release(recovering)).toMatchObject({ ok: true });
      expect((await b.inspect(key)).recoveryRequired).toBe(true);
      expect(await context.leasesFor('c').claim(key)).toMatchObject({ ok: false, reason: 'recovery-required', checkpoint: { json: '{"cursor":41}', token: revokedToken } });
    });
  });
}
