/**
 * Run as `tsx postgres-late-callback-program.ts <pg|postgresjs> <url> <table> <sleep|query|raw>`: a fenced
 * write whose callback outlives its grant and the transaction's bound (TTL 1,000 ms, margin 200 ms: the
 * server ends the session at about 1.2 s) while the callback sleeps 2 s, then returns (`sleep`), sends a
 * statement through the context (`query`) or on the driver's own handle (`raw`). Prints one JSON line: the
 * write's outcome (or the code it threw), whether its rows landed, and a later claim's result; then waits a
 * second for any late failure of the driver, which an uncaught exception turns into a non-zero exit.
 */
import pg from 'pg';
import postgres from 'postgres';
import { createPostgresStore, fromPostgresJs, type PostgresClient } from '../../src/adapters/postgres/index.js';
import { isLeaseError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';

const [kind, url, table, ending] = process.argv.slice(2) as ['pg' | 'postgresjs', string, string, 'sleep' | 'query' | 'raw'];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sql = kind === 'postgresjs' ? postgres(url, { max: 2, onnotice: () => undefined }) : null;
const pool = kind === 'pg' ? new pg.Pool({ connectionString: url, max: 2 }) : null;
pool?.on('error', () => undefined);
const client: PostgresClient = sql === null ? (pool as unknown as PostgresClient) : fromPostgresJs(sql);
const store = createPostgresStore({ client, table, fencedTransactionMarginMs: 200 });
await store.migrate();
await client.query(`CREATE TABLE IF NOT EXISTS "${table}_out" (note text NOT NULL)`);
const leases = createLeases(store, { holder: 'late', ttlMs: 1_000 });
const lease = await leases.claimOrThrow('job:late');
let answer: unknown;
try {
  const outcome = await leases.fencedWrite(lease, async (tx) => {
    await tx.query(`INSERT INTO "${table}_out" (note) VALUES ('before')`);
    await sleep(2_000);
    if (ending === 'query') await tx.query(`INSERT INTO "${table}_out" (note) VALUES ('after')`);
    // NOTE: the driver's own handle, which the grant's deadline does not check.
    if (ending === 'raw' && sql !== null)
      await (tx.connection as unknown as { sql: postgres.Sql }).sql.unsafe(`INSERT INTO "${table}_out" (note) VALUES ('raw')`);
    if (ending === 'raw' && sql === null) await tx.connection.query(`INSERT INTO "${table}_out" (note) VALUES ('raw')`);
    return 'late';
  });
  answer = outcome.ok ? { ok: true } : { ok: false, reason: outcome.reason };
} catch (error) {
  answer = { threw: isLeaseError(error) ? error.code : String(error) };
}
await sleep(1_000);
const rows = (await client.query(`SELECT count(*)::int AS n FROM "${table}_out"`)).rows as Array<{ n: number }>;
const next = await createLeases(store, { holder: 'next' }).claim('job:late');
console.log(JSON.stringify({ answer, landed: rows[0]?.n, next: next.ok ? 'granted' : next.reason }));
await sql?.end({ timeout: 1 });
await pool?.end();
