// One export worker: `node worker.mjs <worker-name>`, with LEASEFENCE_PG_URL set.
// It claims the export's lease (waiting while another worker holds it), resumes from the checkpoint it
// inherits, and writes each batch together with the checkpoint that records it, in one fenced transaction.
import pg from 'pg';
import { createLeases, describeRefusal } from 'leasefence';
import { createPostgresStore } from 'leasefence/postgres';
import { BATCHES, EXPORT_KEY, LEASE_TABLE, ROWS_TABLE, TTL_MS } from './export.mjs';

const worker = process.argv[2] ?? 'worker';
const url = process.env.LEASEFENCE_PG_URL;
if (url === undefined || url === '') {
  console.error('LEASEFENCE_PG_URL is not set (run examples/daily-export/main.mjs, which starts the workers)');
  process.exit(1);
}
// For the demo only: stop (until main.mjs SIGKILLs this process) at `before-commit:<batch>`, inside that
// batch's fenced transaction after its INSERT, or at `after-commit:<batch>`, right after that batch and its
// checkpoint committed.
const [stopWhere = '', stopBatch = '0'] = (process.env.DAILY_EXPORT_STOP_AT ?? '').split(':');

/**
 * @param {number} batch
 * @param {'before-commit' | 'after-commit'} where
 */
const stopsAt = (batch, where) => stopWhere === where && Number(stopBatch) === batch;
// NOTE: bounded, so a worker whose main.mjs died does not wait for ever.
const stopHere = () => new Promise(() => setTimeout(() => process.exit(3), 60_000));

const pool = new pg.Pool({
  connectionString: url,
  max: 2,
  statement_timeout: 5_000,
  lock_timeout: 2_000,
  idle_in_transaction_session_timeout: 10_000,
});
const store = createPostgresStore({ client: pool, table: LEASE_TABLE });
const leases = createLeases(store, { holder: worker, ttlMs: TTL_MS });
/** @param {string} line */
const say = (line) => console.log(`${worker}: ${line}`);

/**
 * Reads batch `batch` of the day's data (here: made up).
 * @param {number} batch
 */
function fetchBatch(batch) {
  return { batch, rows: 100 };
}

/**
 * Writes one batch in the fenced transaction; the checkpoint (the next batch) commits with it.
 * @param {import('leasefence').Lease} lease
 * @param {{ batch: number, rows: number }} data
 */
function writeBatch(lease, data) {
  return leases.fencedWrite(
    lease,
    async (tx) => {
      await tx.query(`INSERT INTO ${ROWS_TABLE} (batch, row_count, token, worker) VALUES ($1, $2, $3, $4)`, [
        data.batch,
        data.rows,
        tx.token.toString(),
        worker,
      ]);
      if (stopsAt(data.batch, 'before-commit')) {
        say(`batch ${data.batch} inserted in the fenced transaction, COMMIT not sent yet (stopping here)`);
        await stopHere();
      }
    },
    { checkpoint: { nextBatch: data.batch + 1 } },
  );
}

try {
  const first = await leases.claim(EXPORT_KEY);
  if (!first.ok && first.reason === 'held') say(`${EXPORT_KEY} is held by ${first.holder}: waiting for its lease to end`);
  const claimed = first.ok ? first : await leases.claim(EXPORT_KEY, { wait: { timeoutMs: 30_000 } });
  if (!claimed.ok) throw new Error(`could not claim ${EXPORT_KEY}: ${claimed.reason}`);
  const { lease, previous, checkpoint } = claimed;
  const start = checkpoint === null ? 1 : /** @type {{ nextBatch: number }} */ (checkpoint.value).nextBatch;
  if (previous === null) say(`claimed ${EXPORT_KEY} (token ${lease.token}); no checkpoint: starting at batch 1`);
  else
    say(
      `claimed ${EXPORT_KEY} (token ${lease.token}); the previous grant (${previous.holder}, token ${previous.token}) ${previous.kind}; its checkpoint says: resume at batch ${start}`,
    );

  for (let batch = start; batch <= BATCHES; batch++) {
    const written = await writeBatch(lease, fetchBatch(batch));
    if (!written.ok) {
      // The lease moved on: drop this batch, the current holder writes it.
      say(describeRefusal(written));
      process.exitCode = 2;
      break;
    }
    say(`batch ${batch} written, checkpoint: resume at batch ${batch + 1}`);
    if (stopsAt(batch, 'after-commit')) {
      say(`batch ${batch} and its checkpoint committed (stopping here)`);
      await stopHere();
    }
    await leases.renewOrThrow(lease);
  }
  if (process.exitCode === undefined) {
    // NOTE: the last checkpoint stays and says "done": a second run of this day's export resumes past the
    // last batch and writes nothing (a null checkpoint would read as "nobody started" and redo every batch).
    await leases.release(lease, { checkpoint: { nextBatch: BATCHES + 1 } });
    say(`all ${BATCHES} batches written; released ${EXPORT_KEY}`);
  }
} finally {
  await pool.end();
}
