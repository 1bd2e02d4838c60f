// A queue of scan jobs worked by several workers: `node examples/scan-work/main.mjs` (no server: the memory
// store, with a manual clock standing in for a worker that stops mid-scan).
//
// Each site to scan is an item of one set. A worker claims the next item, scans it page by page (each page's
// findings and the checkpoint in one fenced write), and finalizes it once per run (a submission: a retried
// finalize is answered with the first one's receipt). A worker that stops mid-scan loses the item when its lease
// expires: the next claim-next takes it over at once, with the checkpoint, and resumes. The stopped worker's
// late finalize is refused: a newer grant holds the item.
import { createLeases, describeRefusal } from 'leasefence';
import { createManualClock, createMemoryStore } from 'leasefence/memory';

const LEASE_MS = 60_000;
const SET = 'scans';
const PAGES = 4;
const clock = createManualClock(Date.parse('2026-09-01T08:00:00Z'));
const store = createMemoryStore({ clock });
const worker1 = createLeases(store, { holder: 'worker-1', ttlMs: LEASE_MS });
const worker2 = createLeases(store, { holder: 'worker-2', ttlMs: LEASE_MS });

/** @type {Map<string, string[]>} each site's pages, with the run that wrote them (stands in for a findings table) */
const findings = new Map();
/** @type {string[]} finalized scans */
const reports = [];

/** @typedef {import('leasefence').Leases<import('leasefence/memory').MemoryStore>} WorkerLeases */

/**
 * Claims the next site to scan; an expired run's item is taken over at once, with its checkpoint.
 * @param {WorkerLeases} leases
 * @param {string} runId
 */
async function claimNextScan(leases, runId) {
  const next = await leases.claimNext(SET, { runId, onExpired: 'take-over' });
  if (!next.ok) {
    console.log(`${leases.holder}: ${describeRefusal(next)}`);
    return null;
  }
  const from = next.abandoned === null ? '' : `, taking over run ${next.abandoned.runId} of ${next.abandoned.holder}`;
  const resume = next.checkpoint === null ? '' : ` at checkpoint ${JSON.stringify(next.checkpoint.value)}`;
  console.log(`${leases.holder} claimed ${next.lease.key} as run ${runId} (token ${next.lease.token})${from}${resume}`);
  return next;
}

/**
 * Scans pages from the checkpoint on, each page's findings and the next checkpoint in one fenced write.
 * @param {WorkerLeases} leases
 * @param {import('leasefence').GrantedNext} next
 * @param {number} stopAfter pages this worker gets through before it stops (a crash)
 */
async function scanPages(leases, next, stopAfter = PAGES) {
  const { lease } = next;
  const start = /** @type {{ page?: number } | undefined} */ (next.checkpoint?.value)?.page ?? 0;
  for (let page = start + 1; page <= Math.min(PAGES, start + stopAfter); page += 1) {
    const write = () => findings.set(lease.key, [...(findings.get(lease.key) ?? []), `${page} (${lease.runId})`]);
    await leases.fencedWriteOrThrow(lease, write, { checkpoint: { page } });
  }
}

/**
 * Finalizes a scan once per run: the report and the submission in one fenced write. A retry of the same
 * finalize is `replayed` with the first one's receipt.
 * @param {WorkerLeases} leases
 * @param {import('leasefence').Lease} lease
 */
function finalize(leases, lease) {
  const report = `report:${lease.key}`;
  return leases.fencedWrite(lease, () => reports.push(`${report} (run ${lease.runId})`), {
    submission: { payload: { pages: PAGES, site: lease.key }, receipt: { report } },
  });
}

/**
 * Prints how a finalize ended.
 * @param {string} step
 * @param {import('leasefence').FencedWriteOutcome<unknown>} outcome
 */
function report(step, outcome) {
  if (outcome.ok) console.log(`${step}\n  -> finalized`);
  else if (outcome.reason === 'replayed') console.log(`${step}\n  -> replayed: receipt ${outcome.submission.receiptJson}`);
  else console.log(`${step}\n  -> refused: ${outcome.reason}\n     ${describeRefusal(outcome)}`);
}

await worker1.addItems(SET, ['scan:site-a', 'scan:site-b']);

// 1. worker-1 scans two pages of site-a, then stops (a crash: no release, no more renewals).
const stopped = await claimNextScan(worker1, 'w1-1');
if (stopped !== null) await scanPages(worker1, stopped, 2);

// 2. worker-2 takes the next item (site-a is held), scans it whole and finalizes it; its retry is a replay.
const whole = await claimNextScan(worker2, 'w2-1');
if (whole !== null) {
  await scanPages(worker2, whole);
  report(`${whole.lease.key}: finalize`, await finalize(worker2, whole.lease));
  report(`${whole.lease.key}: finalize retried (the reply was lost)`, await finalize(worker2, whole.lease));
  await worker2.removeItems(SET, [whole.lease.key]);
  await worker2.release(whole.lease);
}

// 3. worker-1's lease expires; worker-2's next claim takes site-a over at once and resumes at its checkpoint.
clock.advance(LEASE_MS);
const takeover = await claimNextScan(worker2, 'w2-2');
if (takeover !== null) {
  await scanPages(worker2, takeover);
  report(`${takeover.lease.key}: finalize`, await finalize(worker2, takeover.lease));
  await worker2.removeItems(SET, [takeover.lease.key]);
  await worker2.release(takeover.lease);
}

// 4. worker-1 comes back and finalizes the scan it started: a newer grant holds site-a, nothing is written.
if (stopped !== null) report(`${stopped.lease.key}: the stale finalize of run w1-1`, await finalize(worker1, stopped.lease));

// 5. A new site arrives; worker-1 scans it, then the queue is empty.
await worker1.addItems(SET, ['scan:site-c']);
const last = await claimNextScan(worker1, 'w1-2');
if (last !== null) {
  await scanPages(worker1, last);
  report(`${last.lease.key}: finalize`, await finalize(worker1, last.lease));
  await worker1.removeItems(SET, [last.lease.key]);
  await worker1.release(last.lease);
}
await claimNextScan(worker1, 'w1-3');

for (const [site, pages] of findings) console.log(`${site} pages: ${pages.join(', ')}`);
console.log(`reports: ${reports.join(', ')}`);
