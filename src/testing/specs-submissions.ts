/**
 * Conformance specs, part 6: idempotent submissions and writes that refuse themselves (issue 24), on the Store
 * contract. A submission lands once, with the write and the checkpoint; its run id is looked up before the fence
 * (a worker whose lease ended still learns it landed); a write that refuses itself applies nothing at all.
 */
import { SUBMISSION_RETENTION } from '../fence/types.js';
import type { Store } from '../store.js';
import { expectEqual, expectMatch } from './assertions.js';
import type { SuiteContext } from './context.js';
import { claimOnStore, digestOf, mustClaimOnStore, submissionOf } from './store-fences.js';

/** Registers the submission and write-refusal specs. */
export function describeSubmissionSpecs<S extends Store>(context: SuiteContext<S>): void {
  const { runner } = context;
  const store = (): S => context.harness.store;

  runner.describe('fenced write with a submission', () => {
    runner.it(
      'records it once with the write and the checkpoint; the same run is replayed even after the lease ended, another payload is replay-conflict; neither writes',
      async () => {
        const key = context.harness.freshKey('submit');
        const { fence } = await mustClaimOnStore(store(), key, 'a', { runId: 'r1' });
        const applied = await context.harness.fencedAppend(fence, 'decision-1', {
          checkpointJson: '{"done":1}',
          submission: submissionOf('run-7'),
        });
        const receiptJson = JSON.stringify({ runId: 'run-7', label: 'a' });
        expectMatch(applied, {
          ok: true,
          token: fence.token,
          checkpoint: { json: '{"done":1}', token: fence.token },
          submission: { runId: 'run-7', digest: digestOf('a'), token: fence.token, holder: 'a', receiptJson },
        });
        const recorded = applied.ok ? applied.submission : undefined;
        expectMatch(await context.harness.fencedAppend(fence, 'decision-again', { submission: submissionOf('run-7') }), {
          ok: false,
          reason: 'replayed',
          key,
          submission: recorded,
        });
        await store().release({ fence });
        const retried = await context.harness.fencedAppend(fence, 'decision-retry', {
          checkpointJson: '{"done":2}',
          submission: submissionOf('run-7'),
        });
        expectMatch(retried, { ok: false, reason: 'replayed', submission: recorded }, 'a retry after the release');
        const taken = await mustClaimOnStore(store(), key, 'b');
        expectMatch(await context.harness.fencedAppend(fence, 'decision-late', { submission: submissionOf('run-7') }), {
          ok: false,
          reason: 'replayed',
          submission: recorded,
        });
        expectMatch(await context.harness.fencedAppend(taken.fence, 'conflict', { submission: submissionOf('run-7', 'b') }), {
          ok: false,
          reason: 'replay-conflict',
          expected: { runId: 'run-7', digest: digestOf('b'), token: taken.fence.token },
          found: recorded,
        });
        expectMatch(await context.harness.fencedAppend(fence, 'stale-new-run', { submission: submissionOf('run-8') }), {
          ok: false,
          reason: 'superseded',
        });
        expectEqual(await context.harness.readLedger(key), ['decision-1'], 'the ledger');
        expectMatch((await store().inspect(key)).checkpoint, { json: '{"done":1}', token: fence.token });
      },
    );

    runner.it(
      'bindToGrant: the recording grant is replayed; the current holder presenting its run id gets replay-conflict, not the receipt',
      async () => {
        const key = context.harness.freshKey('submit-bound');
        const first = await mustClaimOnStore(store(), key, 'a');
        expectMatch(await context.harness.fencedAppend(first.fence, 'bound', { submission: submissionOf('run-1', 'a', true) }), {
          ok: true,
        });
        expectMatch(await context.harness.fencedAppend(first.fence, 'bound-again', { submission: submissionOf('run-1', 'a', true) }), {
          ok: false,
          reason: 'replayed',
        });
        await store().release({ fence: first.fence });
        const second = await mustClaimOnStore(store(), key, 'b');
        expectMatch(await context.harness.fencedAppend(second.fence, 'other-grant', { submission: submissionOf('run-1', 'a', true) }), {
          ok: false,
          reason: 'replay-conflict',
          expected: { token: second.fence.token },
          found: { token: first.fence.token, holder: 'a' },
        });
        expectMatch(await context.harness.fencedAppend(first.fence, 'old-grant', { submission: submissionOf('run-1', 'a', true) }), {
          ok: false,
          reason: 'replayed',
        });
        expectEqual(await context.harness.readLedger(key), ['bound'], 'the ledger');
      },
    );

    runner.it(`keeps the newest ${SUBMISSION_RETENTION} submissions per key: an older run id is forgotten and applies again`, async () => {
      const key = context.harness.freshKey('submit-retention');
      const { fence } = await mustClaimOnStore(store(), key, 'a');
      for (let i = 0; i <= SUBMISSION_RETENTION; i += 1) {
        expectMatch(
          await context.harness.fencedAppend(fence, `e${i}`, { submission: submissionOf(`run-${i}`) }),
          { ok: true },
          `submission ${i}`,
        );
      }
      expectMatch(await context.harness.fencedAppend(fence, 'newest-again', { submission: submissionOf(`run-${SUBMISSION_RETENTION}`) }), {
        ok: false,
        reason: 'replayed',
      });
      expectMatch(await context.harness.fencedAppend(fence, 'oldest-kept', { submission: submissionOf('run-1') }), {
        ok: false,
        reason: 'replayed',
      });
      expectMatch(await context.harness.fencedAppend(fence, 'forgotten', { submission: submissionOf('run-0') }), { ok: true });
    });
  });

  runner.describe('a fenced write that refuses itself', () => {
    runner.it('applies nothing (no write, no checkpoint, no submission) and answers write-refused with its code and detail', async () => {
      const key = context.harness.freshKey('write-refused');
      const { fence } = await mustClaimOnStore(store(), key, 'a');
      await store().checkpoint({ fence, json: '{"n":0}' });
      const refused = await context.harness.fencedAppend(
        fence,
        'refused',
        { checkpointJson: '{"n":1}', submission: submissionOf('run-1') },
        { code: 'owner-inactive', detail: 'account 7 is closed' },
      );
      expectMatch(refused, {
        ok: false,
        reason: 'write-refused',
        key,
        code: 'owner-inactive',
        detail: 'account 7 is closed',
        token: fence.token,
      });
      expectMatch(await context.harness.fencedAppend(fence, 'no-detail', {}, { code: 'stop' }), {
        ok: false,
        reason: 'write-refused',
        code: 'stop',
        detail: null,
      });
      expectEqual(await context.harness.readLedger(key), [], 'the ledger');
      expectMatch((await store().inspect(key)).checkpoint, { json: '{"n":0}', token: fence.token });
      // The submission was not recorded: the same run applies now, once.
      expectMatch(await context.harness.fencedAppend(fence, 'applied', { submission: submissionOf('run-1') }), { ok: true });
      expectEqual(await context.harness.readLedger(key), ['applied'], 'the ledger');
      // A refusal is only reached when the fence holds: a stale fence is told so first.
      await store().release({ fence });
      expectMatch(await context.harness.fencedAppend(fence, 'stale', {}, { code: 'owner-inactive' }), { ok: false, reason: 'released' });
      expectMatch(await claimOnStore(store(), key, 'b'), { ok: true });
    });
  });
}
