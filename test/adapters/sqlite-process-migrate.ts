/**
 * One process of the concurrent-migration race (`sqlite-migrate-race.test.ts`). Per round the parent sends
 * `{ path }`: it opens its own connection to that (new) database file and answers `ready`; on `go` it runs
 * the store's and the gate's `migrate()` and answers what happened (`ok`, or the error's name, code and
 * message), then closes the connection. `{ done: true }` ends it.
 */
import Database from 'better-sqlite3';
import { createSqliteStore, createSqliteTokenGate } from '../../src/adapters/sqlite/index.js';

/** What a process answers for one round. */
export type MigrateAnswer =
  | { readonly ok: true }
  | { readonly ok: false; readonly name: string; readonly code: string; readonly message: string };

let database: Database.Database | null = null;

process.on('message', (message: { path?: string; go?: boolean; done?: boolean }) => {
  if (message.done === true) process.exit(0);
  if (typeof message.path === 'string') {
    database = new Database(message.path);
    process.send?.('ready');
    return;
  }
  if (message.go === true && database !== null) {
    const opened = database;
    const store = createSqliteStore({ client: opened });
    void store
      .migrate()
      .then(() => createSqliteTokenGate({ store }).migrate())
      .then(
        (): MigrateAnswer => ({ ok: true }),
        (error: unknown): MigrateAnswer => {
          const { name, code, message: text } = error as { name?: unknown; code?: unknown; message?: unknown };
          return { ok: false, name: String(name), code: String(code), message: String(text) };
        },
      )
      .then((answer) => {
        opened.close();
        database = null;
        process.send?.(answer);
      });
  }
});
