/**
 * Classifiers (plain API, bound attributes): claim an undecided `classify:occ-*` for one model version and
 * submit the decision under a fence that also requires that version, the seeds' nine-way FENCED check
 * as one verdict. Faults: a crash, a model call slower than the lease, a model swap mid-run.
 */
import type { Granted, Lease, Leases } from '../src/index.js';
import type { MemoryStore } from '../src/adapters/memory/index.js';
import {
  adopt,
  granted,
  HORIZON,
  leasesFor,
  pausePastExpiry,
  release,
  restartAfterCrash,
  saveCheckpoint,
  writeLedger,
  type Fleet,
} from './workers.js';

export const OCCURRENCES: readonly string[] = ['classify:occ-17', 'classify:occ-18', 'classify:occ-19'];
const CLASSIFY_TTL = 20_000;
const MODEL = 'clf-2024-06';
/** Evidence older than this is fetched again rather than resumed. */
const EVIDENCE_MAX_AGE = 20_000;

/** Classifier: claims an undecided occurrence with the model version bound, and submits under that fence. */
export async function classifier(fleet: Fleet, holder: string): Promise<void> {
  const { sim, tally } = fleet;
  const leases = leasesFor(fleet, holder, CLASSIFY_TTL);
  let runId = fleet.nextRunId();
  while (fleet.jobs.decided.size < OCCURRENCES.length && sim.elapsed() < HORIZON) {
    let claimed: Granted | null = null;
    for (const key of OCCURRENCES.filter((occurrence) => !fleet.jobs.decided.has(occurrence))) {
      const outcome = await leases.claim(key, { runId, attributes: { requestedModelVersion: MODEL } });
      if (outcome.ok) {
        claimed = outcome;
        break;
      }
      tally.claimRefused(outcome, holder);
    }
    if (claimed === null) {
      await sim.sleep(sim.random.int(2_000, 6_000));
      continue;
    }
    runId = fleet.nextRunId();
    const fate = await classify(fleet, leases, claimed.lease);
    if (fate === 'crashed') await restartAfterCrash(fleet, holder);
    else await release(fleet, leases, claimed.lease);
  }
}

async function classify(fleet: Fleet, leases: Leases<MemoryStore>, lease: Lease): Promise<'decided' | 'lost' | 'crashed'> {
  const { sim, tally } = fleet;
  granted(fleet, lease);
  let evidence = lease.inherited;
  if (evidence !== null) {
    const age = (lease.acquiredAt ?? 0) - evidence.writtenAt;
    // NOTE: the checkpoint is stamped with when (and under which token) it was written, so the new holder can judge it.
    const fresh = age <= EVIDENCE_MAX_AGE;
    const what = `evidence fetched ${(age / 1000).toFixed(1)} s ago ${fresh ? 'is fresh enough' : `is older than ${EVIDENCE_MAX_AGE / 1000} s`}`;
    if (!(await adopt(fleet, leases, lease, fresh ? 'resume' : 'discard', what))) evidence = null;
  }
  if (evidence === null) {
    await sim.sleep(sim.random.int(1_000, 3_000)); // load the occurrence's evidence
    if (!(await saveCheckpoint(fleet, leases, lease, { phase: 'evidence fetched' }))) return 'lost';
  }
  await sim.sleep(sim.random.int(4_000, 10_000)); // the model call
  if (sim.random.chance(0.1)) {
    tally.fault('crash', `${lease.holder} crashed during the model call for ${lease.key} (token ${lease.token})`);
    return 'crashed';
  }
  if (sim.random.chance(0.25)) await pausePastExpiry(fleet, lease, 'a slow model call');
  let model = MODEL;
  if (sim.random.chance(0.1)) {
    model = 'clf-2024-07';
    tally.fault('model swap', `${lease.holder} hot-reloaded its model to ${model} mid-run; ${lease.key} was claimed for ${MODEL}`);
  }
  const decision = sim.random.chance(0.5) ? 'publish' : 'reject';
  // The seeds' nine-way FENCED check, as one fence: this grant, still live, claimed for this model version.
  if (!(await writeLedger(fleet, leases, lease, `decision ${decision} (${model})`, { attributes: { requestedModelVersion: model } })))
    return 'lost';
  fleet.jobs.decided.add(lease.key);
  tally.log(`${lease.holder} decided ${lease.key}: ${decision} (token ${lease.token})`);
  return 'decided';
}
