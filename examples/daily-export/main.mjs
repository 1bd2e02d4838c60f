// The daily export, exactly once across a crash: `node examples/daily-export/main.mjs` with LEASEFENCE_PG_URL
// set (or `npm run example -- daily-export` from a clone, which starts a throwaway PostgreSQL).
//
// worker-a writes batches 1 and 2 and is killed (SIGKILL) inside batch 3's fenced transaction, before its
// COMMIT. worker-b waits for worker-a's lease to expire, inherits the checkpoint "resume at batch 3", writes
// batches 3 to 5 and is killed right after batch 5 committed. worker-c inherits "resume at batch 6" and
// finishes. At the end every batch is in the table exactly once.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createPostgresStore } from 'leasefence/postgres';
import { BATCHES, LEASE_TABLE, ROWS_TABLE } from './export.mjs';

const url = process.env.LEASEFENCE_PG_URL;
if (url === undefined || url === '') {
  console.error('Set LEASEFENCE_PG_URL to a PostgreSQL database this example may create tables in, e.g.');
  console.error('  docker run --rm -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres:16');
  console.error('  LEASEFENCE_PG_URL=postgres://postgres@127.0.0.1:5432/postgres node examples/daily-export/main.mjs');
  console.error('or, from a clone of leasefence, run `npm run example -- daily-export` (it starts a throwaway server).');
  process.exit(1);
}
const WORKER = fileURLToPath(new URL('./worker.mjs', import.meta.url));

/**
 * Starts a worker process and echoes its lines; `onLine` sees each one (to kill the worker at a chosen line).
 * @param {string} name
 * @param {Record<string, string>} env
 * @param {(line: string, child: import('node:child_process').ChildProcess) => void} onLine
 * @returns {Promise<{ code: number | null, signal: NodeJS.Signals | null }>}
 */
function runWorker(name, env, onLine = () => undefined) {
  const child = spawn(process.execPath, [WORKER, name], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  createInterface({ input: child.stdout }).on('line', (line) => {
    console.log(line);
    onLine(line, child);
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
}

const pool = new pg.Pool({ connectionString: url, max: 1 });
try {
  // NOTE: the example starts from nothing on every run: its own lease table and its own rows table.
  await pool.query(`DROP TABLE IF EXISTS ${ROWS_TABLE}, ${LEASE_TABLE}`);
  await createPostgresStore({ client: pool, table: LEASE_TABLE }).migrate();
  await pool.query(`CREATE TABLE ${ROWS_TABLE} (batch int NOT NULL, row_count int NOT NULL, token bigint NOT NULL, worker text NOT NULL)`);

  // NOTE: each worker announces its stop point and waits there; main kills it then, so the crash lands exactly there.
  const killAtStop =
    (/** @type {string} */ name) => (/** @type {string} */ line, /** @type {import('node:child_process').ChildProcess} */ child) => {
      if (!line.endsWith('(stopping here)')) return;
      console.log(`main: SIGKILL ${name}`);
      child.kill('SIGKILL');
    };
  const a = await runWorker('worker-a', { DAILY_EXPORT_STOP_AT: 'before-commit:3' }, killAtStop('worker-a'));
  console.log(`main: worker-a ended by ${a.signal ?? `exit code ${a.code}`}`);
  const b = await runWorker('worker-b', { DAILY_EXPORT_STOP_AT: 'after-commit:5' }, killAtStop('worker-b'));
  console.log(`main: worker-b ended by ${b.signal ?? `exit code ${b.code}`}`);
  const c = await runWorker('worker-c', {});
  console.log(`main: worker-c ended by ${c.signal ?? `exit code ${c.code}`}`);

  const { rows } = await pool.query(
    `SELECT batch, count(*)::int AS copies, string_agg(worker, ', ' ORDER BY worker) AS workers FROM ${ROWS_TABLE} GROUP BY batch ORDER BY batch`,
  );
  for (const row of rows) console.log(`main: batch ${row.batch}: ${row.copies} row(s), written by ${row.workers}`);
  const exactlyOnce = rows.length === BATCHES && rows.every((row, index) => row.batch === index + 1 && row.copies === 1);
  console.log(`main: every batch 1-${BATCHES} written exactly once: ${exactlyOnce ? 'yes' : 'NO'}`);
  if (!exactlyOnce || c.code !== 0) process.exitCode = 1;
} finally {
  await pool.end();
}
