/**
 * The fuzz targets on real stores: Postgres (statements counted on the pg client), Redis (commands counted
 * by the server, through MONITOR of the fuzzed connection) and SQLite (statements counted on the fuzzed
 * better-sqlite3 connection). Each pushes what it opened onto `closers`.
 */
import Database from 'better-sqlite3';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createPostgresStore, createPostgresTokenGate } from '../../src/adapters/postgres/index.js';
import { createRedisStore, createRedisTokenGate } from '../../src/adapters/redis/index.js';
import { createSqliteStore, createSqliteTokenGate, type SqliteClient, type SqliteStatement } from '../../src/adapters/sqlite/index.js';
import type { Lease } from '../../src/lease.js';
import { createLeases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';
import { countingClient } from '../adapters/postgres-counting.js';
import { freshTable, openPostgresClient, sharedPostgresUrl } from '../adapters/postgres-harness.js';
import { freshPrefix, openClient, sharedRedisUrl } from '../adapters/redis-harness.js';
import { watchCommands } from '../adapters/redis-monitor.js';
import { freshDatabasePath } from '../adapters/sqlite-harness.js';
import type { FuzzTarget } from './fuzz-property.js';

/** What a target opened, closed in reverse order by the test's `afterAll`. */
export type Closers = Array<() => unknown>;

const foreignLease = (): Promise<Lease> => createLeases(createMemoryStore(), { holder: 'elsewhere' }).claimOrThrow('job:foreign');

export async function postgresFuzzTarget(closers: Closers): Promise<FuzzTarget> {
  const url = await sharedPostgresUrl();
  const opened = await openPostgresClient('pg-pool', url);
  closers.push(() => opened.close());
  const counting = countingClient(opened.client);
  const table = freshTable('lf_fuzz');
  const setupStore = createPostgresStore({ client: opened.client, table });
  await setupStore.migrate();
  const gate = createPostgresTokenGate({ client: counting.client, table: `${table}_gate`, leaseTable: table });
  await gate.migrate();
  let keys = 0;
  return {
    leases: createLeases(createPostgresStore({ client: counting.client, table }) as Store, { holder: 'fuzz' }),
    setup: createLeases(setupStore as Store, { holder: 'setup' }),
    foreign: await foreignLease(),
    gate: gate as never,
    ioDuring: async (run) => (await counting.statementsDuring(run)).length,
    freshKey: () => `fuzz:${++keys}`,
    checkpointWithWrite: true,
  };
}

export async function redisFuzzTarget(closers: Closers): Promise<FuzzTarget> {
  const url = await sharedRedisUrl();
  const fuzzed = await openClient('ioredis', url);
  const other = await openClient('ioredis', url);
  closers.push(fuzzed.close, other.close);
  const watch = await watchCommands(url, fuzzed.client);
  closers.push(() => watch.close());
  const prefix = freshPrefix('lf-fuzz');
  let keys = 0;
  return {
    leases: createLeases(createRedisStore({ client: fuzzed.client, prefix }) as Store, { holder: 'fuzz' }),
    setup: createLeases(createRedisStore({ client: other.client, prefix }) as Store, { holder: 'setup' }),
    foreign: await foreignLease(),
    // NOTE: the lease prefix, so the gate checks the full fence as Postgres, SQLite and memory gates do.
    gate: createRedisTokenGate({ client: fuzzed.client, prefix: `${prefix}gate:`, leasePrefix: prefix }) as never,
    ioDuring: async (run) => (await watch.commandsDuring(run)).length,
    // NOTE: every key carries the tag {fuzz}, so that each is an item the set `fuzz` may hold (Redis' tag rule).
    freshKey: () => `{fuzz}:${++keys}`,
    setName: () => 'fuzz',
    checkpointWithWrite: true,
  };
}

/** `database` with every statement it runs counted (the store caches prepared statements: count runs, not prepares). */
function counted(database: SqliteClient): { readonly database: SqliteClient; count(): number } {
  let runs = 0;
  const statement = (inner: SqliteStatement): SqliteStatement => ({
    run: (...params) => {
      runs += 1;
      return inner.run(...params);
    },
    get: (...params) => {
      runs += 1;
      return inner.get(...params);
    },
    all: (...params) => {
      runs += 1;
      return inner.all(...params);
    },
  });
  return {
    database: {
      prepare: (sql) => statement(database.prepare(sql)),
      exec: (sql) => {
        runs += 1;
        return database.exec(sql);
      },
    },
    count: () => runs,
  };
}

export async function sqliteFuzzTarget(closers: Closers): Promise<FuzzTarget> {
  const file = freshDatabasePath('leasefence-fuzz');
  const fuzzed = new Database(file.path);
  const other = new Database(file.path);
  closers.push(
    () => file.remove(),
    () => fuzzed.close(),
    () => other.close(),
  );
  const setupStore = createSqliteStore({ client: other });
  await setupStore.migrate();
  const counting = counted(fuzzed);
  const store = createSqliteStore({ client: counting.database });
  const gate = createSqliteTokenGate({ store });
  await gate.migrate();
  let keys = 0;
  return {
    leases: createLeases(store as Store, { holder: 'fuzz' }),
    setup: createLeases(setupStore as Store, { holder: 'setup' }),
    foreign: await foreignLease(),
    gate: gate as never,
    ioDuring: async (run) => {
      const before = counting.count();
      await run();
      return counting.count() - before;
    },
    freshKey: () => `fuzz:${++keys}`,
    checkpointWithWrite: true,
  };
}
