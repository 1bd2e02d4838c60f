// A classifier whose decisions are fenced on the grant AND on the model version it was asked to use:
// `node examples/classifier/main.mjs` (no server: the memory store, with a manual clock standing in for the
// five minutes a slow model call can take).
//
// The app in the seeds checked nine conditions before recording a decision and answered all nine with one
// error, COMPANY_MONITORING_CLASSIFICATION_FENCED. Here each is a submission that leasefence refuses with its
// own reason, saying what it expected and what it found; none of them writes anything.
import { createLeases, describeRefusal } from 'leasefence';
import { createManualClock, createMemoryStore } from 'leasefence/memory';

const LEASE_MS = 5 * 60_000; // the app's ADMISSION_LEASE_MS
const MODEL = 'clf-2024-06';
const clock = createManualClock(Date.parse('2026-08-21T09:00:00Z'));
const store = createMemoryStore({ clock });
const classifier1 = createLeases(store, { holder: 'classifier-1', ttlMs: LEASE_MS });
const classifier2 = createLeases(store, { holder: 'classifier-2', ttlMs: LEASE_MS });
const scanner = createLeases(store, { holder: 'scanner' });

/** @type {{ occurrence: string, decision: string, model: string, run: string | null }[]} */
const decisions = []; // stands in for the candidates table

/**
 * Claims an occurrence for classification with the requested model version bound to the grant.
 * @param {string} occurrence
 * @param {string} runId
 */
async function claimForClassification(occurrence, runId) {
  return classifier1.claimOrThrow(`classify:${occurrence}`, { runId, attributes: { requestedModelVersion: MODEL } });
}

/**
 * Records a decision under the fence: the grant must be current and bound to `model`.
 * @param {import('leasefence').Leases<import('leasefence/memory').MemoryStore>} leases
 * @param {import('leasefence').Lease} lease
 * @param {string} model the version the model call actually used
 */
function submit(leases, lease, model) {
  const occurrence = lease.key.slice('classify:'.length);
  return leases.fencedWrite(lease, () => decisions.push({ occurrence, decision: 'publish', model, run: lease.runId }), {
    attributes: { requestedModelVersion: model },
  });
}

/**
 * Prints how a submission ended: one line per seed condition.
 * @param {string} condition the seed's condition
 * @param {import('leasefence').FencedWriteOutcome<unknown>} outcome
 */
function report(condition, outcome) {
  console.log(`${condition}\n  -> ${outcome.ok ? 'accepted' : `refused: ${outcome.reason}\n     ${describeRefusal(outcome)}`}`);
}

// The normal case: claim, call the model, record the decision, release.
const decided = await claimForClassification('occ-1', 'r1');
report('0. occ-1: the current grant, the requested model', await submit(classifier1, decided, MODEL));
await classifier1.release(decided);

// 1. candidate missing: a queue message for an occurrence nobody ever claimed.
report(
  '1. candidate missing (a message for occ-404, never claimed)',
  await submit(classifier1, classifier1.restore({ ...decided.export(), key: 'classify:occ-404' }), MODEL),
);

// 2. state not pending_classification: occ-1 was decided and released; the queue redelivers the job.
report('2. candidate no longer pending (occ-1 already decided; a redelivered job)', await submit(classifier1, decided, MODEL));

// 3. evidenceRevision moved: a re-scan found new evidence and revoked the classification with its reason.
const rescanned = await claimForClassification('occ-3', 'r3');
await scanner.revoke('classify:occ-3', { reason: 'evidence revision 4 -> 5 (re-scan)', by: 'scanner' });
report('3. evidence revision moved (a re-scan revoked the claim)', await submit(classifier1, rescanned, MODEL));

// 4. classificationWorkerId differs: classifier-2 submits with classifier-1's grant from a shared cache.
const borrowed = await claimForClassification('occ-4', 'r4');
report(
  "4. worker id differs (classifier-2 presents classifier-1's grant)",
  await submit(classifier2, classifier2.restore({ ...borrowed.export(), holder: 'classifier-2' }), MODEL),
);

// 5. classificationLeaseToken differs: the right grant number, the secret of another claim.
const guarded = await claimForClassification('occ-5', 'r5');
report(
  '5. lease token differs (the secret of another claim)',
  await submit(classifier1, classifier1.restore({ ...guarded.export(), secret: borrowed.export().secret }), MODEL),
);

// 6. classificationRunId differs: run r6's lease expired, the worker re-claimed as run r7, then r6 submits.
const oldRun = await claimForClassification('occ-6', 'r6');
clock.advance(LEASE_MS);
await claimForClassification('occ-6', 'r7');
report('6. run id differs (run r6 submits after the re-claim as run r7)', await submit(classifier1, oldRun, MODEL));

// 7. classificationRequestedModelVersion differs: the model was hot-swapped during the call.
const swapped = await claimForClassification('occ-7', 'r8');
report('7. requested model version differs (the model was swapped to clf-2024-07)', await submit(classifier1, swapped, 'clf-2024-07'));

// 8. classificationLeaseExpiresAt missing: a grant this occurrence never had (a forged or mixed-up message).
const current = await claimForClassification('occ-8', 'r9');
report(
  '8. no such lease (grant 2 of occ-8, which only ever had grant 1)',
  await submit(classifier1, classifier1.restore({ ...current.export(), token: '2' }), MODEL),
);

// 9. classificationLeaseExpiresAt elapsed: the model call took longer than the lease.
const slow = await claimForClassification('occ-9', 'r10');
clock.advance(LEASE_MS + 1_000);
report('9. lease elapsed (the model call took 5 min 1 s)', await submit(classifier1, slow, MODEL));

// A refusal is a normal outcome: drop the result, claim again, classify again.
const again = await claimForClassification('occ-9', 'r11');
report('9 again: occ-9 re-claimed as run r11 and classified again', await submit(classifier1, again, MODEL));

console.log(`decisions recorded: ${decisions.map((row) => `${row.occurrence} (run ${row.run}, ${row.model})`).join(', ')}`);
