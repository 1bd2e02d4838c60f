// The SQLite quick start of docs/quick-starts.md on the runtime that runs this file, on node:sqlite's
// DatabaseSync (no better-sqlite3: a native addon built for one Node), in `leases.db` in the working
// directory. Prints two JSON lines: what the fenced writes returned, and the rows written.
import { DatabaseSync } from 'node:sqlite';
import { createLeases } from 'leasefence';
import { createSqliteStore } from 'leasefence/sqlite';

const database = new DatabaseSync('leases.db');
try {
  const store = createSqliteStore({ client: database });
  await store.migrate();
  database.exec('CREATE TABLE IF NOT EXISTS export_rows (batch INTEGER PRIMARY KEY, token TEXT NOT NULL)');
  const leases = createLeases(store, { holder: 'exporter-1', ttlMs: 30_000 });

  const lease = await leases.claimOrThrow('export:daily');
  const written = await leases.fencedWrite(lease, (tx) => {
    tx.run(
      'INSERT INTO export_rows (batch, token) VALUES (?, ?) ON CONFLICT (batch) DO UPDATE SET token = excluded.token',
      1,
      tx.token.toString(),
    );
  });
  await leases.release(lease);
  const late = await leases.fencedWrite(lease, (tx) => {
    tx.run('INSERT INTO export_rows (batch, token) VALUES (?, ?)', 2, '0');
  });
  console.log(JSON.stringify([written.ok, late.ok ? 'written' : `refused: ${late.reason}`]));
  console.log(
    JSON.stringify(
      database
        .prepare('SELECT batch FROM export_rows ORDER BY batch')
        .all()
        .map((row) => row.batch),
    ),
  );
} finally {
  database.close();
}
