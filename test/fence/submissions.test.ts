import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import type { SubmissionCommand } from '../../src/fence/operations.js';
import * as transitions from '../../src/fence/transitions.js';
import { SUBMISSION_RETENTION, type Fence, type LeaseRecord } from '../../src/fence/types.js';
import { checkFence } from '../../src/fence/verdict.js';
import { claimCommandArb, digestArb, KEY, presentedArb, secretArb } from './arbitraries.js';

const submissionArb: fc.Arbitrary<SubmissionCommand> = fc.record({
  runId: fc.constantFrom('s1', 's2', 'fresh'),
  digest: digestArb,
  receiptJson: fc.option(fc.constantFrom('{"id":7}', '[]'), { nil: null }),
  bindToGrant: fc.boolean(),
});

/** The state after `fence` (which holds at `now`) recorded `submission` with a write. */
function recorded(record: LeaseRecord | null, fence: Fence, submission: SubmissionCommand, now: number): LeaseRecord {
  expect(transitions.checkSubmission(record, fence, submission, now)).toBeNull();
  return transitions.recordSubmission(record!, fence, submission, now).record;
}

describe('submissions', () => {
  test.prop([presentedArb, submissionArb])(
    'a run id not recorded yet: the fence decides, exactly as checkFence',
    ({ reached, fence, now }, submission) => {
      fc.pre(reached.record?.submissions.every((kept) => kept.runId !== submission.runId) ?? true);
      const verdict = checkFence(reached.record, fence, now);
      const checked = transitions.checkSubmission(reached.record, fence, submission, now);
      expect(checked).toEqual(verdict.ok ? null : verdict);
    },
  );

  test.prop([presentedArb, submissionArb, fc.nat({ max: 5_000 }), claimCommandArb])(
    'the lookup comes before the fence: after the lease ended (or another holder took the key) the same payload is replayed, another is replay-conflict',
    ({ reached, fence, now }, submission, later, takeover) => {
      fc.pre(checkFence(reached.record, fence, now).ok);
      fc.pre(reached.record!.submissions.every((kept) => kept.runId !== submission.runId));
      const unbound = { ...submission, bindToGrant: false };
      let record = recorded(reached.record, fence, unbound, now);
      const stored = record.submissions.at(-1)!;
      expect(stored).toEqual({
        runId: submission.runId,
        digest: submission.digest,
        token: fence.token,
        holder: fence.holder,
        at: now,
        receiptJson: submission.receiptJson,
      });
      // The lease ends: released, then maybe claimed by someone else.
      record = transitions.release(record, { fence }, now).record!;
      const at = Math.max(now + later, record.heldUntil ?? 0);
      if (!record.recoveryRequired) record = transitions.claim(record, takeover, at).record!;
      expect(transitions.checkSubmission(record, fence, unbound, at)).toEqual({
        ok: false,
        reason: 'replayed',
        key: KEY,
        submission: stored,
        now: at,
      });
      const other = unbound.digest === 'a'.repeat(64) ? 'b'.repeat(64) : 'a'.repeat(64);
      expect(transitions.checkSubmission(record, fence, { ...unbound, digest: other }, at)).toEqual({
        ok: false,
        reason: 'replay-conflict',
        key: KEY,
        expected: { runId: submission.runId, digest: other, token: fence.token },
        found: stored,
        now: at,
      });
    },
  );

  test.prop([presentedArb, submissionArb, claimCommandArb, secretArb])(
    'bindToGrant: the recording grant is replayed; another grant gets its fence refusal, or replay-conflict when it holds the key',
    ({ reached, fence, now }, submission, takeover, secret) => {
      fc.pre(checkFence(reached.record, fence, now).ok);
      fc.pre(reached.record!.submissions.every((kept) => kept.runId !== submission.runId));
      const bound = { ...submission, bindToGrant: true };
      let record = recorded(reached.record, fence, bound, now);
      expect(transitions.checkSubmission(record, fence, bound, now)).toMatchObject({ reason: 'replayed' });
      record = transitions.release(record, { fence }, now).record!;
      const at = Math.max(now, record.heldUntil ?? 0);
      fc.pre(!record.recoveryRequired);
      record = transitions.claim(record, { ...takeover, secret }, at).record!;
      const grant = record.grant!;
      const current: Fence = { key: KEY, token: grant.token, secret, holder: grant.holder, runId: grant.runId };
      // The old grant still learns its submission landed.
      expect(transitions.checkSubmission(record, fence, bound, at)).toMatchObject({ reason: 'replayed' });
      // The current grant presenting the same run id: a conflict, never the stored receipt.
      expect(transitions.checkSubmission(record, current, bound, at)).toMatchObject({
        ok: false,
        reason: 'replay-conflict',
        expected: { token: grant.token },
        found: { token: fence.token },
      });
      // A fence that does not hold (forged: a token never issued) gets the fence's refusal.
      const forged: Fence = { ...current, token: grant.token + 5n };
      expect(transitions.checkSubmission(record, forged, bound, at)).toEqual(checkFence(record, forged, at));
    },
  );

  test.prop([presentedArb, fc.integer({ min: 1, max: SUBMISSION_RETENTION + 3 })])(
    `retention: the newest ${SUBMISSION_RETENTION} submissions are kept, oldest first; a forgotten run id applies again`,
    ({ reached, fence, now }, count) => {
      fc.pre(checkFence(reached.record, fence, now).ok);
      let record: LeaseRecord = { ...reached.record!, submissions: [] };
      for (let i = 0; i < count; i += 1) {
        record = recorded(record, fence, { runId: `run-${i}`, digest: 'a'.repeat(64), receiptJson: null, bindToGrant: false }, now);
        expect(record.submissions.length).toBe(Math.min(i + 1, SUBMISSION_RETENTION));
      }
      const kept = record.submissions.map((submission) => submission.runId);
      const first = Math.max(0, count - SUBMISSION_RETENTION);
      expect(kept).toEqual(Array.from({ length: count - first }, (_, i) => `run-${first + i}`));
      const newest = { runId: `run-${count - 1}`, digest: 'a'.repeat(64), receiptJson: null, bindToGrant: false };
      expect(transitions.checkSubmission(record, fence, newest, now)).toMatchObject({ reason: 'replayed' });
      if (first > 0) {
        const forgotten = { ...newest, runId: 'run-0' };
        expect(transitions.checkSubmission(record, fence, forgotten, now)).toBeNull();
      }
    },
  );
});
