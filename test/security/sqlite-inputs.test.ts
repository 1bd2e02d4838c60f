/**
 * The fuzzer's audit of `leasefence/sqlite`'s own inputs and failures: hostile options objects, a clock or
 * token floor that reads wrong, and a database leasefence cannot use (never migrated, read-only). Each is
 * a `LeaseError` with its code (README: "Every error leasefence throws is a LeaseError"), and nothing is
 * applied; an error of the caller's own statements in a fenced write stays the caller's.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteStore, createSqliteTokenGate, type SqliteStoreOptions } from '../../src/adapters/sqlite/index.js';
import { isLeaseError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import { freshDatabasePath } from '../adapters/sqlite-harness.js';
import { thrownBy } from './setup.js';

const opened: Array<{ close(): unknown }> = [];
const removals: Array<() => void> = [];
afterEach(() => {
  for (const database of opened.splice(0)) database.close();
  for (const remove of removals.splice(0)) remove();
});

function database(path = ':memory:', options?: Database.Options): Database.Database {
  const connection = new Database(path, options);
  opened.push(connection);
  return connection;
}

async function codeOf(act: () => unknown): Promise<string> {
  const error = await thrownBy(act);
  if (!isLeaseError(error)) throw new Error(`expected a LeaseError, got ${String(error)}`, { cause: error });
  return error.code;
}

const throwingProxy = (): object =>
  new Proxy(
    {},
    {
      get: () => {
        throw new Error('proxy get');
      },
    },
  );

describe('hostile options get INVALID_ARGUMENT', () => {
  it('createSqliteStore and createSqliteTokenGate: a Proxy, a throwing client getter, a Proxy as client', async () => {
    const throwingClient = Object.defineProperty({}, 'client', {
      enumerable: true,
      get: () => {
        throw new Error('getter');
      },
    }); // prettier-ignore
    for (const options of [throwingProxy(), throwingClient, { client: throwingProxy() }]) {
      expect(await codeOf(() => createSqliteStore(options as never))).toBe('INVALID_ARGUMENT');
      expect(await codeOf(() => createSqliteTokenGate(options as never))).toBe('INVALID_ARGUMENT');
    }
  });

  it('a clock that reads NaN, Infinity, a string or a time no column can hold; a token floor that reads a number or past 2^63-1: refused, nothing stored', async () => {
    const connection = database();
    const reference = createSqliteStore({ client: connection });
    await reference.migrate();
    const readings: Array<Partial<SqliteStoreOptions>> = [
      { clock: () => Number.NaN },
      { clock: () => Number.POSITIVE_INFINITY },
      { clock: () => '5' as never },
      { clock: () => -1e300 },
      { tokenFloor: () => 5 as never },
      { tokenFloor: () => 2n ** 64n },
    ];
    for (const [index, reading] of readings.entries()) {
      const leases = createLeases(createSqliteStore({ client: connection, ...reading }), { holder: 'h' });
      expect(await codeOf(() => leases.claim(`job:${index}`)), JSON.stringify(Object.keys(reading))).toBe('INVALID_ARGUMENT');
      expect((await reference.inspect(`job:${index}`)).exists).toBe(false);
    }
  });
});

describe('a database leasefence cannot use is STORE_UNAVAILABLE, not a raw driver error', () => {
  it('a never-migrated table: every operation says to run migrate()', async () => {
    const connection = database();
    const store = createSqliteStore({ client: connection });
    const leases = createLeases(store, { holder: 'h' });
    for (const act of [() => leases.claim('job:1'), () => leases.inspect('job:1'), () => leases.revoke('job:1', { reason: 'x' })]) {
      const error = await thrownBy(act);
      expect(isLeaseError(error, 'STORE_UNAVAILABLE'), String(error)).toBe(true);
      expect((error as Error).message).toContain('migrate()');
    }
    const gate = createSqliteTokenGate({ client: connection });
    expect(await codeOf(() => gate.inspect('report'))).toBe('STORE_UNAVAILABLE');
  });

  it('a read-only database file: claims fail with STORE_UNAVAILABLE and nothing applies', async () => {
    const file = freshDatabasePath('leasefence-readonly');
    removals.push(file.remove);
    await createSqliteStore({ client: database(file.path) }).migrate();
    const readOnly = createLeases(createSqliteStore({ client: database(file.path, { readonly: true }), busyTimeoutMs: null }), {
      holder: 'h',
    });
    expect(await codeOf(() => readOnly.claim('job:1'))).toBe('STORE_UNAVAILABLE');
    expect((await readOnly.inspect('job:1')).exists).toBe(false);
  });

  it('an error of the caller’s own statement in a fenced write is the caller’s: rethrown as it is, nothing applied', async () => {
    const connection = database();
    const store = createSqliteStore({ client: connection });
    await store.migrate();
    const leases = createLeases(store, { holder: 'h' });
    const lease = await leases.claimOrThrow('job:1');
    const error = await thrownBy(() =>
      leases.fencedWrite(lease, (tx) => tx.run('INSERT INTO no_such_table VALUES (1)'), { checkpoint: { step: 1 } }),
    );
    expect(isLeaseError(error)).toBe(false);
    expect((error as { code?: unknown }).code).toBe('SQLITE_ERROR');
    expect((await leases.inspect('job:1')).checkpoint).toBeNull();
  });
});
