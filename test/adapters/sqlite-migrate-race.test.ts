/**
 * Issue 29 item 21: several processes calling `migrate()` at once on a new database file (cron jobs
 * starting together on a new deployment). `PRAGMA journal_mode = WAL` can answer SQLITE_BUSY at once,
 * without waiting for the busy timeout; `migrate()` retries it within the busy timeout, so every call
 * succeeds, and the file ends in WAL mode with every table. A lock held past the busy timeout is
 * STORE_UNAVAILABLE, never the driver's raw error.
 */
import Database from 'better-sqlite3';
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqliteStore, createSqliteTokenGate } from '../../src/adapters/sqlite/index.js';
import { freshDatabasePath } from './sqlite-harness.js';
import type { MigrateAnswer } from './sqlite-process-migrate.js';

const PROCESSES = 8;
const ROUNDS = 30;

/** The next message `child` sends. */
const nextMessage = <T>(child: ChildProcess): Promise<T> =>
  new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`a migrating process exited with ${code}`));
    child.once('exit', onExit);
    child.once('message', (message) => {
      child.off('exit', onExit);
      resolve(message as T);
    });
  });

describe('sqlite: concurrent migrate() from several processes on a new file', () => {
  let children: ChildProcess[] = [];
  beforeAll(() => {
    children = Array.from({ length: PROCESSES }, () =>
      fork(join(import.meta.dirname, 'sqlite-process-migrate.ts'), [], {
        execArgv: ['--import', 'tsx'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
  });
  afterAll(() => {
    for (const child of children) child.kill();
  });

  it(`${PROCESSES} processes x ${ROUNDS} new files: every migrate() succeeds, and the file is in WAL mode with the gate table and the three lease tables`, async () => {
    const failures: MigrateAnswer[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const file = freshDatabasePath('leasefence-sqlite-migrate');
      try {
        await Promise.all(
          children.map((child) => {
            child.send({ path: file.path });
            return nextMessage<string>(child);
          }),
        );
        const answers = await Promise.all(
          children.map((child) => {
            child.send({ go: true });
            return nextMessage<MigrateAnswer>(child);
          }),
        );
        failures.push(...answers.filter((answer) => !answer.ok));
        const check = new Database(file.path);
        try {
          expect(check.pragma('journal_mode', { simple: true })).toBe('wal');
          const tables = check.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).all();
          expect(tables).toEqual([
            { name: 'leasefence_gates' },
            { name: 'leasefence_leases' },
            { name: 'leasefence_leases_floor' },
            { name: 'leasefence_leases_submissions' },
          ]);
        } finally {
          check.close();
        }
      } finally {
        file.remove();
      }
    }
    const failed = failures.map((failure) => (failure.ok ? '' : `${failure.name} ${failure.code}: ${failure.message}`));
    expect(failed, `${failed.length} of ${PROCESSES * ROUNDS} migrate() calls failed`).toEqual([]);
  }, 120_000);

  it('a lock held past the busy timeout: migrate() of the store and of the gate fail with STORE_UNAVAILABLE, then succeed once it is gone', async () => {
    const file = freshDatabasePath('leasefence-sqlite-migrate');
    const blocker = new Database(file.path);
    const database = new Database(file.path);
    try {
      blocker.exec('BEGIN EXCLUSIVE');
      const store = createSqliteStore({ client: database, busyTimeoutMs: 100 });
      const started = performance.now();
      await expect(store.migrate()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      await expect(createSqliteTokenGate({ store }).migrate()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      // NOTE: retried within the busy timeout, not once per pause (each attempt may itself wait up to it).
      expect(performance.now() - started).toBeLessThan(1_000);
      blocker.exec('ROLLBACK');
      await store.migrate();
      await createSqliteTokenGate({ store }).migrate();
      expect(database.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      blocker.close();
      database.close();
      file.remove();
    }
  });
});
