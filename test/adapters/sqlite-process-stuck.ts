/**
 * A worker that freezes inside a fenced write (holding SQLite's write lock, its row and checkpoint not
 * committed) and tells the parent its token, so the parent can SIGKILL it there. Environment: LF_DB.
 */
import Database from 'better-sqlite3';
import { createLeases } from '../../src/leases.js';
import { createSqliteStore } from '../../src/adapters/sqlite/index.js';

const database = new Database(process.env['LF_DB'] ?? '');
const leases = createLeases(createSqliteStore({ client: database }), { holder: 'stuck', ttlMs: 200 });
const claimed = await leases.claim('job:stuck');
if (!claimed.ok) process.exit(2);
await leases.fencedWrite(
  claimed.lease,
  (tx) => {
    tx.run('INSERT INTO ledger (key, token, entry, written_at) VALUES (?, ?, ?, ?)', 'job:stuck', tx.token, 'stuck write', tx.now);
    process.send?.(String(tx.token));
    // NOTE: a synchronous freeze: the transaction stays open, with the write lock, until the process dies.
    for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1_000);
  },
  { checkpoint: { step: 'stuck' } },
);
