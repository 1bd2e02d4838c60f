// Exports to a partner that accepts at most two at once: `node examples/export-pool/main.mjs` (no server: the
// memory store, with a manual clock standing in for an exporter that freezes mid-upload).
//
// Each exporter takes a permit of the semaphore `partner-uploads` (limit 2) before it uploads, and uploads each
// chunk in a fenced write with the checkpoint (job, chunk). A third exporter is told the pool is full and by whom.
// An exporter that freezes past its lease loses its permit: the next exporter takes the permit over, with the
// checkpoint, and finishes the frozen one's export from the next chunk. When the frozen exporter wakes up, its
// late chunk is refused: no more than two exporters' chunks land at once, and none twice.
import { createLeases, describeRefusal } from 'leasefence';
import { createManualClock, createMemoryStore } from 'leasefence/memory';

const LEASE_MS = 60_000;
const POOL = 'partner-uploads';
const LIMIT = 2;
const CHUNKS = 3;
const clock = createManualClock(Date.parse('2026-10-05T02:00:00Z'));
const store = createMemoryStore({ clock });
const exporters = ['exporter-1', 'exporter-2', 'exporter-3'].map((holder) => createLeases(store, { holder, ttlMs: LEASE_MS }));
const [exporter1, exporter2, exporter3] = /** @type {[Exporter, Exporter, Exporter]} */ (exporters);

/** @typedef {import('leasefence').Leases<import('leasefence/memory').MemoryStore>} Exporter */

/** @type {string[]} what the partner received (stands in for its API) */
const received = [];

/**
 * Takes a permit of the pool, or says who holds them. An expired permit comes with the checkpoint of the run that
 * froze holding it: the job it was exporting and the last chunk that landed.
 * @param {Exporter} exporter
 * @param {string} runId
 */
async function takePermit(exporter, runId) {
  const permit = await exporter.acquirePermit(POOL, { limit: LIMIT, runId });
  if (!permit.ok) {
    console.log(`${exporter.holder}: ${describeRefusal(permit)}`);
    return null;
  }
  const after = permit.previous === null ? '' : ` after ${permit.previous.holder}'s grant ${permit.previous.kind}`;
  const left = permit.checkpoint === null ? '' : `, left at ${JSON.stringify(permit.checkpoint.value)}`;
  console.log(`${exporter.holder} took permit ${permit.index} (token ${permit.lease.token}, ${permit.live} live)${after}${left}`);
  return permit;
}

/**
 * Uploads `job` from chunk `from`: each chunk and the checkpoint (job, chunk) in one fenced write, so a chunk
 * lands only while the permit is current. Stops after `stopAfter` chunks (a freeze), or at the end, where it
 * releases the permit with no checkpoint (the next holder starts clean).
 * @param {Exporter} exporter
 * @param {import('leasefence').Lease} lease
 * @param {string} job
 * @param {number} from
 * @param {number} stopAfter
 */
async function upload(exporter, lease, job, from = 1, stopAfter = CHUNKS) {
  for (let chunk = from; chunk <= Math.min(CHUNKS, from + stopAfter - 1); chunk += 1) {
    const outcome = await exporter.fencedWrite(lease, () => received.push(`${job} ${chunk}`), { checkpoint: { job, chunk } });
    if (!outcome.ok) {
      console.log(`${exporter.holder}: ${job} chunk ${chunk} refused: ${describeRefusal(outcome)}`);
      return;
    }
  }
  if (from + stopAfter > CHUNKS) await exporter.release(lease, { checkpoint: null });
}

// 1. exporter-1 and exporter-2 take the two permits; exporter-3 is told the pool is full, and by whom.
const frozen = await takePermit(exporter1, 'r1');
const steady = await takePermit(exporter2, 'r2');
await takePermit(exporter3, 'r3');

// 2. exporter-1 uploads one chunk of the EU export and freezes (a long GC pause); exporter-2 uploads the US one.
if (frozen !== null) await upload(exporter1, frozen.lease, 'eu', 1, 1);
if (steady !== null) await upload(exporter2, steady.lease, 'us');

// 3. Half a lease later, exporter-3 takes the permit exporter-2 released and uploads two chunks of the APAC
//    export; exporter-1 is still frozen, and by the end of its lease it has not renewed.
clock.advance(LEASE_MS / 2);
const third = await takePermit(exporter3, 'r3');
if (third !== null) await upload(exporter3, third.lease, 'apac', 1, 2);
clock.advance(LEASE_MS / 2);

// 4. exporter-2 comes back: the frozen exporter's permit has expired, so it is taken over with its checkpoint,
//    and exporter-2 finishes the EU export from the chunk after the last one that landed.
const takeover = await takePermit(exporter2, 'r4');
if (takeover !== null) {
  const left = /** @type {{ job: string, chunk: number } | undefined} */ (takeover.checkpoint?.value);
  if (left !== undefined) await upload(exporter2, takeover.lease, left.job, left.chunk + 1);
}

// 5. exporter-1 wakes up and uploads its next chunk: refused, a newer grant holds its permit.
if (frozen !== null) await upload(exporter1, frozen.lease, 'eu', 2, 1);

// 6. exporter-3 uploads its last chunk; then both permits are free, and the next grant has nothing to resume.
if (third !== null) await upload(exporter3, third.lease, 'apac', 3, 1);
const next = await takePermit(exporter1, 'r5');
if (next !== null) await exporter1.release(next.lease);
console.log(`partner received: ${received.join(', ')}`);
