// The PostgreSQL quick start of docs/quick-starts.md on the runtime that runs this file, with the client the
// first argument names: `pg` (a pg.Pool) or `postgres` (postgres.js, through fromPostgresJs), on the database
// at DATABASE_URL. Prints two JSON lines: what the fenced writes returned, and the rows written.
import { createLeases } from 'leasefence';
import { createPostgresStore, fromPostgresJs } from 'leasefence/postgres';

const url = process.env.DATABASE_URL;
const kind = process.argv[2];

/** The store's client, a plain query for the program's own reads, and how to close it. */
async function open() {
  if (kind === 'pg') {
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({
      connectionString: url,
      statement_timeout: 5_000,
      lock_timeout: 2_000,
      idle_in_transaction_session_timeout: 10_000,
    });
    pool.on('error', (error) => console.warn(`postgres: ${error.message}`));
    return { client: pool, rows: async (text) => (await pool.query(text)).rows, close: () => pool.end() };
  }
  if (kind === 'postgres') {
    const { default: postgres } = await import('postgres');
    const sql = postgres(url, { max: 4, onnotice: () => undefined });
    return { client: fromPostgresJs(sql), rows: (text) => sql.unsafe(text), close: () => sql.end({ timeout: 1 }) };
  }
  throw new Error(`usage: quick-start-postgres.mjs pg|postgres (got ${kind})`);
}

const { client, rows, close } = await open();
try {
  const store = createPostgresStore({ client });
  await store.migrate();
  await rows('CREATE TABLE IF NOT EXISTS export_rows (batch int PRIMARY KEY, token bigint NOT NULL)');
  const leases = createLeases(store, { holder: 'exporter-1', ttlMs: 30_000 });

  const lease = await leases.claimOrThrow('export:daily');
  const written = await leases.fencedWrite(lease, (tx) =>
    tx.query('INSERT INTO export_rows (batch, token) VALUES ($1, $2) ON CONFLICT (batch) DO UPDATE SET token = EXCLUDED.token', [
      1,
      tx.token.toString(),
    ]),
  );
  await leases.release(lease);
  const late = await leases.fencedWrite(lease, (tx) => tx.query('INSERT INTO export_rows (batch, token) VALUES (2, 0)'));
  console.log(JSON.stringify([written.ok, late.ok ? 'written' : `refused: ${late.reason}`]));
  console.log(JSON.stringify((await rows('SELECT batch FROM export_rows ORDER BY batch')).map((row) => row.batch)));
} finally {
  await close();
}
