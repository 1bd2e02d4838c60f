/**
 * Exporters (plain API, the README's exactly-once pattern): claim `export:daily`, resume from the inherited
 * checkpoint, and export batches: upload through the token gate, append to the ledger and save the
 * checkpoint in one fenced write, renew. Faults: a crash (the lease is left to expire) or a pause past the
 * lease's expiry (Kleppmann's pause).
 */
import type { Granted, Leases } from '../src/index.js';
import type { MemoryStore } from '../src/adapters/memory/index.js';
import {
  adopt,
  granted,
  HORIZON,
  leasesFor,
  pausePastExpiry,
  release,
  renew,
  restartAfterCrash,
  writeLedger,
  writeThroughGate,
  type Fleet,
} from './workers.js';

export const EXPORT_KEY = 'export:daily';
export const EXPORT_FILE = 'bucket:exports/daily.csv';
export const EXPORT_BATCHES = 8;
const EXPORT_TTL = 15_000;

/** Exporter: claim, resume from the checkpoint, export batches until done; crash or lose the lease on the way. */
export async function exporter(fleet: Fleet, holder: string): Promise<void> {
  const { sim, tally } = fleet;
  const leases = leasesFor(fleet, holder, EXPORT_TTL);
  let runId = fleet.nextRunId();
  while (fleet.jobs.exportedBatches < EXPORT_BATCHES && sim.elapsed() < HORIZON) {
    const claimed = await leases.claim(EXPORT_KEY, { runId });
    if (!claimed.ok) {
      tally.claimRefused(claimed, holder);
      await sim.sleep(sim.random.int(2_000, 6_000));
      continue;
    }
    runId = fleet.nextRunId();
    const fate = await exportBatches(fleet, leases, claimed);
    if (fate === 'crashed') await restartAfterCrash(fleet, holder);
    else await release(fleet, leases, claimed.lease);
  }
}

async function exportBatches(
  fleet: Fleet,
  leases: Leases<MemoryStore>,
  { lease, checkpoint }: Granted,
): Promise<'done' | 'lost' | 'crashed'> {
  const { sim, tally } = fleet;
  granted(fleet, lease);
  let next = 1;
  if (checkpoint !== null) {
    const { nextBatch } = checkpoint.value as { nextBatch: number };
    if (await adopt(fleet, leases, lease, 'resume', `continue at batch ${nextBatch}`)) next = nextBatch;
  }
  for (let batch = next; batch <= EXPORT_BATCHES; batch++) {
    await sim.sleep(sim.random.int(2_000, 5_000)); // query and format the batch
    if (sim.random.chance(0.08)) {
      tally.fault(
        'crash',
        `${lease.holder} crashed during batch ${batch} of ${lease.key} (token ${lease.token}); its lease is left to expire`,
      );
      return 'crashed';
    }
    if (sim.random.chance(0.1)) await pausePastExpiry(fleet, lease, `batch ${batch}`);
    // The export file lives in a bucket, outside the lease store: the token gate orders its writers.
    if (!(await writeThroughGate(fleet, leases, lease, EXPORT_FILE, `upload batch ${batch}`))) return 'lost';
    // The batch and the checkpoint that records it, in one fenced step: a crash leaves both or neither.
    if (!(await writeLedger(fleet, leases, lease, `batch ${batch}`, { checkpoint: { nextBatch: batch + 1 } }))) return 'lost';
    fleet.jobs.exportedBatches = Math.max(fleet.jobs.exportedBatches, batch);
    if (!(await renew(fleet, leases, lease))) return 'lost';
  }
  tally.log(`${lease.holder} finished ${lease.key} (${EXPORT_BATCHES} batches) under token ${lease.token}`);
  return 'done';
}
