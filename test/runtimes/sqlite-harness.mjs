// The SQLite store's harness for the shared suites over node:sqlite's DatabaseSync, from the INSTALLED
// package: test/adapters/sqlite-harness.ts (manual clock) in JavaScript, so that runtimes other than the one
// vitest runs on can run the suites. A fresh database file in a temp directory; each connect() is a new
// connection to it; every store reads one manual clock and mints tokens with no floor (the model suite
// compares exact times and tokens); the ledger is a table written in the fenced transaction.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createManualClock } from 'leasefence/memory';
import { createSqliteStore } from 'leasefence/sqlite';

const EPOCH = Date.UTC(2026, 0, 1);

export async function makeNodeSqliteHarness() {
  const directory = mkdtempSync(join(tmpdir(), 'leasefence-runtimes-sqlite-'));
  const path = join(directory, 'leases.db');
  const clock = createManualClock(EPOCH);
  const connections = [];
  const connectStore = () => {
    const database = new DatabaseSync(path);
    connections.push(database);
    return createSqliteStore({ client: database, clock, tokenFloor: () => 0n });
  };
  const store = connectStore();
  await store.migrate();
  const main = connections[0];
  main.exec('CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, entry TEXT NOT NULL)');
  let keys = 0;
  return {
    store,
    clock,
    connect: async () => connectStore(),
    appendUnderFence: (leases, lease, entry) =>
      leases.fencedWrite(lease, (tx) => tx.run('INSERT INTO ledger (key, entry) VALUES (?, ?)', lease.key, entry)),
    // NOTE: the INSERT and the refusal run in the store's fenced transaction: a refusal rolls the INSERT back.
    fencedAppend: (fence, entry, options, refuse) =>
      store.fencedWrite(
        fence,
        (tx) => {
          tx.run('INSERT INTO ledger (key, entry) VALUES (?, ?)', fence.key, entry);
          if (refuse !== undefined) tx.refuse(refuse.code, refuse.detail);
        },
        options,
      ),
    readLedger: async (key) =>
      main
        .prepare('SELECT entry FROM ledger WHERE key = ? ORDER BY id')
        .all(key)
        .map((row) => row.entry),
    expireNow: async (key) => {
      const expiresAt = (await store.inspect(key)).grant?.expiresAt ?? null;
      if (expiresAt !== null && expiresAt > clock()) clock.set(expiresAt);
    },
    advanceClock: (ms) => clock.advance(ms),
    freshKey: (label = 'key') => `${label}:${++keys}`,
    close: async () => {
      for (const connection of connections) connection.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
