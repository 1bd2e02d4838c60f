/**
 * The fuzz property (issue 9) on SQLite (better-sqlite3), the store `fuzz-servers.test.ts` leaves out: I/O
 * is counted on the fuzzed connection (every statement run and every `exec`). Runs `FUZZ_SQLITE_RUNS`
 * cases (default 1,000, about a second; each case is a few transactions of set-up and snapshots).
 */
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createSqliteStore, createSqliteTokenGate, type SqliteDatabase, type SqliteStatement } from '../../src/adapters/sqlite/index.js';
import { createLeases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';
import { freshDatabasePath } from '../adapters/sqlite-harness.js';
import { calls, runCall } from './fuzz-property.js';

const RUNS = Number(process.env['FUZZ_SQLITE_RUNS'] ?? 1_000);
const closers: Array<() => void> = [];
afterAll(() => {
  for (const close of closers.reverse()) close();
});

/** `database` with every statement it runs counted (prepared statements are cached by the store: count runs, not prepares). */
function counted(database: SqliteDatabase): { readonly database: SqliteDatabase; count(): number } {
  let runs = 0;
  const statement = (inner: SqliteStatement): SqliteStatement => ({
    run: (...params) => ((runs += 1), inner.run(...params)),
    get: (...params) => ((runs += 1), inner.get(...params)),
    all: (...params) => ((runs += 1), inner.all(...params)),
  });
  return {
    database: { prepare: (sql) => statement(database.prepare(sql)), exec: (sql) => ((runs += 1), database.exec(sql)) },
    count: () => runs,
  };
}

describe('fuzz: every public method on SQLite', () => {
  it(`better-sqlite3: INVALID_ARGUMENT with no statement run and leases unchanged, or a normal result (${RUNS} runs)`, async () => {
    const file = freshDatabasePath('leasefence-fuzz');
    const fuzzed = new Database(file.path);
    const other = new Database(file.path);
    closers.push(() => file.remove(), () => fuzzed.close(), () => other.close());
    const setupStore = createSqliteStore({ database: other });
    await setupStore.migrate();
    const counting = counted(fuzzed);
    const store = createSqliteStore({ database: counting.database });
    const gate = createSqliteTokenGate({ store });
    await gate.migrate();
    let keys = 0;
    const endings = { invalid: 0, result: 0, typed: 0 };
    const target = {
      leases: createLeases(store as Store, { holder: 'fuzz' }),
      setup: createLeases(setupStore as Store, { holder: 'setup' }),
      foreign: await createLeases(createMemoryStore(), { holder: 'elsewhere' }).claimOrThrow('job:foreign'),
      gate: gate as never,
      ioDuring: async (run: () => Promise<void>) => {
        const before = counting.count();
        await run();
        return counting.count() - before;
      },
      freshKey: () => `fuzz:${++keys}`,
      checkpointWithWrite: true,
    };
    await fc.assert(
      fc.asyncProperty(calls(true), async (recipe) => {
        endings[await runCall(target, recipe)] += 1;
      }),
      { numRuns: RUNS },
    );
    expect(endings.invalid).toBeGreaterThan(RUNS / 10);
    expect(endings.result).toBeGreaterThan(RUNS / 10);
  }, 60_000 + RUNS * 100);
});
