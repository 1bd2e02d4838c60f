/**
 * Conformance specs, part 3: progress. A fenced write with a checkpoint saves both or neither (the step the
 * exactly-once pattern rests on), and a release with an explicit checkpoint decision resolves a pending
 * recovery the way `checkpoint` and `recover` do.
 */
import type { Lease } from '../lease.js';
import type { Leases } from '../leases-types.js';
import type { Store } from '../store.js';
import { expectEqual, expectMatch, expectRejects, expectSame, expectTrue } from './assertions.js';
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
async function pendingRecovery<S extends Store>(
  context: SuiteContext<S>,
  label: string,
): Promise<{ key: string; b: Leases<S>; recovering: Lease; revokedToken: bigint }> {
  const key = context.harness.freshKey(label);
  const a = context.leasesFor('a');
  const first = await mustClaim(a, key);
  expectMatch(await a.checkpoint(first, { cursor: 41 }), { ok: true });
  expectMatch(await context.leasesFor('ops').revoke(key, { reason: 'operator abort', requireRecovery: true }), {
    ok: true,
    recoveryRequired: true,
  });
  const b = context.leasesFor('b');
  const recovering = await mustClaim(b, key, { recovering: true });
  return { key, b, recovering, revokedToken: first.token };
}

/** Registers the progress specs: fenced writes with a checkpoint, release with a checkpoint decision. */
export function describeProgressSpecs<S extends Store>(context: SuiteContext<S>): void {
  const { runner } = context;
  // NOTE: a harness that declares `rollsBackWrites: false` (memory: the callback writes plain JS data) keeps
  // only the checkpoint half of "a throwing callback applies nothing"; see `StoreHarness.rollsBackWrites`.
  const rollsBackWrites = (): boolean => context.harness.rollsBackWrites !== false;

  runner.describe('fenced write with a checkpoint', () => {
    runner.it('applies both: the write lands and the checkpoint is saved, stamped with the token, in one step', async () => {
      const key = context.harness.freshKey('write-checkpoint');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key);
      const outcome = await context.harness.appendUnderFence(withCheckpoint(a, { batch: 1 }), lease, 'batch-1', {
        checkpoint: { batch: 1 },
      });
      expectMatch(outcome, { ok: true, token: lease.token, checkpoint: { json: '{"batch":1}', token: lease.token } });
      expectEqual(await context.harness.readLedger(key), ['batch-1']);
      expectMatch((await a.inspect(key)).checkpoint, { value: { batch: 1 }, token: lease.token });
      const plain = await context.harness.appendUnderFence(a, lease, 'batch-2');
      expectMatch(plain, { ok: true, checkpoint: null });
      expectMatch((await a.inspect(key)).checkpoint, { value: { batch: 1 }, token: lease.token });
    });

    runner.it('applies neither when the fence does not hold (expired, then superseded)', async () => {
      const key = context.harness.freshKey('write-checkpoint-refused');
      const a = context.leasesFor('a');
      const old = await mustClaim(a, key);
      await a.checkpoint(old, { batch: 0 });
      await context.harness.expireNow(key);
      expectMatch(await context.harness.appendUnderFence(withCheckpoint(a, { batch: 1 }), old, 'expired', { checkpoint: { batch: 1 } }), {
        ok: false,
        reason: 'expired',
      });
      const current = await mustClaim(context.leasesFor('b'), key);
      expectMatch(await context.harness.appendUnderFence(withCheckpoint(a, { batch: 1 }), old, 'stale', { checkpoint: { batch: 1 } }), {
        ok: false,
        reason: 'superseded',
        found: { token: current.token },
      });
      expectEqual(await context.harness.readLedger(key), []);
      expectMatch((await a.inspect(key)).checkpoint, { value: { batch: 0 }, token: old.token });
    });

    runner.it('applies neither when the write callback throws: the error propagates, the checkpoint is unchanged', async () => {
      const key = context.harness.freshKey('write-checkpoint-throws');
      const a = context.leasesFor('a');
      const lease = await mustClaim(a, key);
      await a.checkpoint(lease, { batch: 0 });
      await expectRejects(
        a.fencedWrite(
          lease,
          () => {
            throw new Error('no write');
          },
          { checkpoint: { batch: 1 } },
        ),
        'no write',
      );
      await expectRejects(
        context.harness.appendUnderFence(withCheckpoint(a, { batch: 1 }, true), lease, 'half', { checkpoint: { batch: 1 } }),
        'failed after writing',
      );
      if (rollsBackWrites()) expectEqual(await context.harness.readLedger(key), []);
      expectMatch((await a.inspect(key)).checkpoint, { value: { batch: 0 }, token: lease.token });
      expectMatch(await context.harness.appendUnderFence(withCheckpoint(a, { batch: 1 }), lease, 'whole', { checkpoint: { batch: 1 } }), {
        ok: true,
      });
      expectMatch((await a.inspect(key)).checkpoint, { value: { batch: 1 }, token: lease.token });
    });

    runner.it('resolves a pending recovery, as checkpoint does', async () => {
      const { key, b, recovering } = await pendingRecovery(context, 'write-checkpoint-recovery');
      expectMatch(
        await context.harness.appendUnderFence(withCheckpoint(b, { cursor: 42 }), recovering, 'resumed', { checkpoint: { cursor: 42 } }),
        { ok: true, checkpoint: { token: recovering.token } },
      );
      expectMatch(await b.inspect(key), { recoveryRequired: false, checkpoint: { value: { cursor: 42 }, token: recovering.token } });
      await b.release(recovering);
      expectMatch(await context.leasesFor('c').claim(key), { ok: true, checkpoint: { value: { cursor: 42 } } });
    });
  });

  runner.describe('release with a checkpoint decision', () => {
    runner.it(
      'clearing the checkpoint (null) resolves a pending recovery: the next plain claim is granted, with no checkpoint',
      async () => {
        const { key, b, recovering } = await pendingRecovery(context, 'release-clear-recovery');
        expectMatch(await b.release(recovering, { checkpoint: null }), { ok: true });
        expectMatch(await b.inspect(key), { recoveryRequired: false, checkpoint: null });
        expectMatch(await context.leasesFor('c').claim(key), { ok: true, checkpoint: null });
      },
    );

    runner.it('setting a checkpoint resolves a pending recovery: the next plain claim inherits it', async () => {
      const { key, b, recovering } = await pendingRecovery(context, 'release-set-recovery');
      expectMatch(await b.release(recovering, { checkpoint: { cursor: 50 } }), { ok: true });
      expectSame((await b.inspect(key)).recoveryRequired, false);
      expectMatch(await context.leasesFor('c').claim(key), { ok: true, checkpoint: { value: { cursor: 50 }, token: recovering.token } });
    });

    runner.it('keeping the checkpoint leaves the recovery pending: plain claims are still refused', async () => {
      const { key, b, recovering, revokedToken } = await pendingRecovery(context, 'release-keep-recovery');
      expectMatch(await b.release(recovering), { ok: true });
      expectTrue((await b.inspect(key)).recoveryRequired, 'recovery is still required');
      expectMatch(await context.leasesFor('c').claim(key), {
        ok: false,
        reason: 'recovery-required',
        checkpoint: { json: '{"cursor":41}', token: revokedToken },
      });
    });
  });
}
