/**
 * Semaphores on PostgreSQL (issue 25), measured: one acquire's latency against one claim on the same pool (each
 * followed by its release, timed apart), at limit 3 and against a semaphore of 100 live permits (a `full` answer
 * that reads and returns all 100); and the plans of the acquire function's statements at 100 permits (auto_explain
 * with nested statements: the call itself is one `Result` node), among 10,000 ordinary keys; and a key's first claim
 * (an insert, which evaluates the permit index's predicate) with the index and without it.
 *
 *   npx tsx test/adapters/postgres-permits-measure.ts
 */
import pg from 'pg';
import { createPostgresStore } from '../../src/adapters/postgres/index.js';
import type { ClaimCommand } from '../../src/fence/operations.js';
import { newSecret } from '../../src/secret.js';
import { permitCommand } from '../permits/race-checks.js';
import { startPostgres } from '../support/postgres-server.js';

const TABLE = 'leasefence_leases';
const ROUNDS = Number(process.env['ROUNDS'] ?? 2000);

const server = await startPostgres();
const pool = new pg.Pool({ connectionString: server.url, max: 4 });
try {
  const store = createPostgresStore({ client: pool, table: TABLE });
  await store.migrate();
  await pool.query(`INSERT INTO ${TABLE} (key, token, state) SELECT 'plain-' || i, 1, '{}'::jsonb FROM generate_series(1, 10000) AS i`);
  // NOTE: 100 live permits of `big`, then the 100th released: an acquire with limit 100 grants it.
  const held = [];
  for (let index = 0; index < 100; index += 1) {
    const command = permitCommand('big', `h${index}`, 100, 600_000);
    const outcome = await store.acquirePermit(command);
    if (!outcome.ok) throw new Error('setup: full');
    held.push({ key: outcome.key, token: outcome.token, secret: command.secret, holder: command.holder, runId: command.runId });
  }
  await pool.query(`VACUUM ANALYZE ${TABLE}`);

  const client = await pool.connect();
  try {
    await client.query(`LOAD 'auto_explain'`);
    for (const setting of [
      'auto_explain.log_min_duration = 0',
      'auto_explain.log_nested_statements = on',
      'auto_explain.log_analyze = on',
      'auto_explain.log_buffers = on',
      'auto_explain.log_timing = off',
      'client_min_messages = log',
    ])
      await client.query(`SET ${setting}`);
    const plans: string[] = [];
    client.on('notice', (notice) => plans.push(notice.message ?? ''));
    const last = held[99] as (typeof held)[number];
    await store.release({ fence: last });
    const call = `SELECT "${TABLE}_acquire_permit"($1, $2, $3, NULL, $4, 600000, '{}', false) AS r`;
    const show = async (title: string, limit: number): Promise<void> => {
      plans.length = 0;
      const { rows } = await client.query(call, ['big', limit, 'explained', newSecret()]);
      const answer = JSON.parse((rows[0] as { r: string }).r) as unknown[];
      console.log(`\n=== ${title}: applied ${answer[1]}, chosen ${answer[2]}`);
      for (const plan of plans) if (!plan.includes('Query Text: SELECT "')) console.log(plan);
    };
    await show('100 permits, 99 live, limit 100: grants permit 100', 100);
    await show('100 permits, 100 live, limit 100: full', 100);
    await client.query('RESET client_min_messages');
  } finally {
    client.release();
  }

  // Latency: alternate a claim and an acquire (each then released, not timed), so load on the shared machine hits both alike.
  const timings: Record<string, number[]> = { claim: [], 'acquire (limit 3)': [], 'acquire (100 live, full)': [] };
  const time = async (name: string, run: () => Promise<unknown>): Promise<unknown> => {
    const start = process.hrtime.bigint();
    const result = await run();
    (timings[name] as number[]).push(Number(process.hrtime.bigint() - start) / 1e6);
    return result;
  };
  for (let round = 0; round < ROUNDS; round += 1) {
    const claimCommand: ClaimCommand = {
      key: `claimed-${round % 3}`,
      holder: 'c',
      runId: null,
      secret: newSecret(),
      ttlMs: 60_000,
      attributes: {},
      recovering: false,
    };
    const claimed = (await time('claim', () => store.claim(claimCommand))) as { ok: boolean; token: bigint };
    if (!claimed.ok) throw new Error('claim refused');
    await store.release({ fence: { key: claimCommand.key, token: claimed.token, secret: claimCommand.secret, holder: 'c', runId: null } });
    const command = permitCommand('small', 'a', 3, 60_000);
    const acquired = (await time('acquire (limit 3)', () => store.acquirePermit(command))) as { ok: boolean; key: string; token: bigint };
    if (!acquired.ok) throw new Error('acquire refused');
    await store.release({ fence: { key: acquired.key, token: acquired.token, secret: command.secret, holder: 'a', runId: command.runId } });
    if (round % 4 === 0) await time('acquire (100 live, full)', () => store.acquirePermit(permitCommand('big', 'x', 100, 60_000)));
  }
  // The hot path: a key's first claim inserts its row, and pays the permit index's predicate (a LIKE); blocks of
  // first claims with the index and without it (dropped and created again between blocks), alternately.
  const index = `"${TABLE}_permits"`;
  for (let block = 0; block < 8; block += 1) {
    const withIndex = block % 2 === 0;
    if (withIndex) await pool.query(`CREATE INDEX IF NOT EXISTS ${index} ON ${TABLE} (key COLLATE "C") WHERE key LIKE '{%}:permit-%'`);
    else await pool.query(`DROP INDEX ${index}`);
    const name = withIndex ? 'first claim, permit index' : 'first claim, no index';
    timings[name] ??= [];
    for (let n = 0; n < ROUNDS / 8; n += 1) {
      const command: ClaimCommand = {
        key: `fresh-${block}-${n}`,
        holder: 'f',
        runId: null,
        secret: newSecret(),
        ttlMs: 60_000,
        attributes: {},
        recovering: false,
      };
      await time(name, () => store.claim(command));
    }
  }
  console.log(`\n=== latency over ${ROUNDS} rounds (ms, one pool of 4, local server)`);
  for (const [name, values] of Object.entries(timings)) {
    const sorted = [...values].sort((a, b) => a - b);
    const at = (q: number) => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number).toFixed(3);
    const mean = (sorted.reduce((sum, value) => sum + value, 0) / sorted.length).toFixed(3);
    console.log(`${name.padEnd(26)} n=${sorted.length} median ${at(0.5)} p90 ${at(0.9)} p99 ${at(0.99)} mean ${mean}`);
  }
} finally {
  await pool.end();
  await server.stop();
}
