// The classifier flow of the seeds, on leasefence: `node examples/classifier/main.mjs` (no server: the memory
// store, with a manual clock standing in for the five minutes a slow model call can take).
//
// Candidates wait in a set; a classifier claims the next one requested for its model version, calls the model
// and submits its decision once per run. A run that outlives its lease is recorded as abandoned by the next
// claimer, under its own run id, and retried after a hold. A re-scan that changes the evidence fences the
// running classifier; one that changes nothing keeps it. An owner turning inactive refuses the submit from
// inside the fenced step. Each refusal says what it expected and what it found; none writes anything.
import { createLeases, describeRefusal } from 'leasefence';
import { createManualClock, createMemoryStore } from 'leasefence/memory';

const LEASE_MS = 5 * 60_000; // the app's ADMISSION_LEASE_MS
const RETRY_HOLD_MS = 6 * 60 * 60_000; // the first retry of an abandoned classification: in 6 h
const MODEL = 'clf-2024-06';
const SET = 'classify';
const clock = createManualClock(Date.parse('2026-08-21T09:00:00Z'));
const store = createMemoryStore({ clock });
const classifier1 = createLeases(store, { holder: 'classifier-1', ttlMs: LEASE_MS });
const classifier2 = createLeases(store, { holder: 'classifier-2', ttlMs: LEASE_MS });
const scanner = createLeases(store, { holder: 'scanner' });

/** @type {Map<string, { decision: string, model: string, run: string | null }>} stands in for the candidates table */
const decisions = new Map();
/** @type {Map<string, 'active' | 'inactive'>} the owner account of each occurrence's company */
const owners = new Map([['acme', 'active']]);

/** @typedef {import('leasefence').Leases<import('leasefence/memory').MemoryStore>} ClassifierLeases */

/**
 * The scanner queues an occurrence: its evidence revision and requested model version are key state (they
 * belong to the candidate, not to a claim), and the key joins the set classifiers claim from.
 * @param {string} occurrence
 * @param {string} revision
 */
async function queue(occurrence, revision) {
  await scanner.setKeyState(`candidate:${occurrence}`, { revision, model: MODEL });
  await scanner.addItems(SET, [`candidate:${occurrence}`]);
}

/**
 * Claims the next candidate requested for this model version; the grant is bound to the version and to the
 * candidate's state as claimed (a changed revision fences it).
 * @param {ClassifierLeases} leases
 * @param {string} runId
 * @param {'take-over' | 'record-first'} [onExpired]
 */
async function claimNextCandidate(leases, runId, onExpired = 'take-over') {
  const next = await leases.claimNext(SET, { runId, expect: { model: MODEL }, attributes: { modelVersion: MODEL }, onExpired });
  if (!next.ok) throw new Error(describeRefusal(next));
  console.log(`${leases.holder} claimed ${next.lease.key} as run ${runId} (token ${next.lease.token})`);
  return next;
}

/**
 * Submits a decision under the fence, once per run: the payload's digest is the replay key's value. Inside the
 * fenced step it reads the owner's status and refuses itself when the owner is no longer active.
 * @param {ClassifierLeases} leases
 * @param {import('leasefence').Lease} lease
 * @param {Record<string, unknown>} payload
 */
function submit(leases, lease, payload) {
  const occurrence = lease.key.slice('candidate:'.length);
  return leases.fencedWrite(
    lease,
    (context) => {
      if (owners.get('acme') !== 'active') context.refuse('OWNER_INACTIVE', 'owner acme is no longer active');
      decisions.set(occurrence, { decision: String(payload['decision']), model: MODEL, run: lease.runId });
    },
    { attributes: { modelVersion: MODEL }, submission: { payload } },
  );
}

/**
 * Prints how a step ended: `accepted`, or the refusal's reason and its one-line description.
 * @param {string} step
 * @param {import('leasefence').FencedWriteOutcome<unknown>} outcome
 */
function report(step, outcome) {
  console.log(`${step}\n  -> ${outcome.ok ? 'accepted' : `refused: ${outcome.reason}\n     ${describeRefusal(outcome)}`}`);
}

// 1. The normal case, and a submit whose reply was lost: retried with its keys in another order, it is the same
// submission (`replayed`, nothing written twice); a retry with another decision is a conflict.
await queue('occ-1', '4');
await queue('occ-2', '7');
const first = await claimNextCandidate(classifier1, 'r1');
report('1. occ-1 decided', await submit(classifier1, first.lease, { decision: 'publish', confidence: 0.93 }));
report(
  '   the same submit retried (reply lost, keys reordered)',
  await submit(classifier1, first.lease, { confidence: 0.93, decision: 'publish' }),
);
report('   a retry with another decision', await submit(classifier1, first.lease, { decision: 'suppress', confidence: 0.41 }));
// NOTE: a decided candidate leaves the queue (its record, state and submissions stay).
await classifier1.removeItems(SET, [first.lease.key]);
await classifier1.release(first.lease);

// 2. A slow model call past the lease: the submit is refused; the next claimer records the abandoned run under its
// run id (with a checkpoint, in one fenced write) and holds the candidate back for the retry schedule.
const slow = await claimNextCandidate(classifier1, 'r2');
clock.advance(LEASE_MS + 1_000);
report('2. occ-2 decided after a 5 min 1 s model call', await submit(classifier1, slow.lease, { decision: 'publish', confidence: 0.88 }));
const takeover = await claimNextCandidate(classifier2, 'r3', 'record-first');
const { abandoned } = takeover;
console.log(
  `   abandoned: run ${abandoned?.runId} of ${abandoned?.holder} (token ${abandoned?.token}), recovery required: ${takeover.recoveryRequired}`,
);
report(
  `   classifier-2 records run ${abandoned?.runId} abandoned`,
  await classifier2.fencedWrite(takeover.lease, () => undefined, {
    submission: { runId: abandoned?.runId ?? 'r2', payload: { outcome: 'abandoned', reason: 'lease expired during the model call' } },
    checkpoint: { attempts: 1 },
  }),
);
await classifier2.release(takeover.lease, { holdMs: RETRY_HOLD_MS });
report('   classifier-1 retries its submit of run r2', await submit(classifier1, slow.lease, { decision: 'publish', confidence: 0.88 }));
const idle = await classifier2.claimNext(SET, { expect: { model: MODEL } });
if (!idle.ok) console.log(`   ${describeRefusal(idle)}`);

// 3. Re-scans: unchanged evidence keeps the running classifier; changed evidence moves the revision and fences it.
await queue('occ-3', '1');
const scanned = await claimNextCandidate(classifier1, 'r4');
const unchanged = await scanner.setKeyState('candidate:occ-3', { revision: '1' });
console.log(
  `3. re-scan of occ-3, evidence unchanged: ${unchanged.changed.length === 0 ? 'nothing changed' : 'changed'}, grant kept: ${unchanged.ended === null}`,
);
const changed = await scanner.setKeyState('candidate:occ-3', { revision: '2' }, { by: 'scanner' });
console.log(`   re-scan of occ-3, new evidence: changed ${changed.changed.join(', ')}, grant ended: ${changed.ended?.kind}`);
report('   occ-3 decided on revision 1', await submit(classifier1, scanned.lease, { decision: 'publish', confidence: 0.7 }));

// 4. The owner turned inactive during the call: the fenced step reads it and refuses; nothing is recorded.
const rescanned = await claimNextCandidate(classifier1, 'r5');
owners.set('acme', 'inactive');
report(
  '4. occ-3 decided on revision 2, the owner now inactive',
  await submit(classifier1, rescanned.lease, { decision: 'publish', confidence: 0.9 }),
);
await classifier1.release(rescanned.lease);

const occ2 = await scanner.inspect('candidate:occ-2');
console.log(
  `decisions recorded: ${[...decisions].map(([occurrence, row]) => `${occurrence} (run ${row.run}, ${row.model}, ${row.decision})`).join(', ')}`,
);
console.log(`occ-2: checkpoint ${JSON.stringify(occ2.checkpoint?.value)}, held until ${new Date(occ2.heldUntil ?? 0).toISOString()}`);
