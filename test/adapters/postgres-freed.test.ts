/**
 * Postgres wake-ups (`watchFreed`) on a real server (and PGlite), for each listener kind: a watch hears the
 * releases and revokes that end a grant and nothing else, is live when its promise resolves, comes back
 * after its listener's backend is terminated (waking its waiters then, since notifications were lost),
 * and leaves no LISTEN behind.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import postgres from 'postgres';
import { InvalidArgumentError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import {
  createPostgresStore,
  type PostgresClient,
  type PostgresListenerOption,
  type PostgresStore,
} from '../../src/adapters/postgres/index.js';
import { freedChannelOf } from '../../src/adapters/postgres/freed-channel.js';
import { tableName } from '../../src/adapters/postgres/identifier.js';
import { expectHeardAfterReconnect, expectOwnKeyWoken, expectReleaseAndRevokeHeard } from '../waiting-stores/freed-specs.js';
import { freshTable, sharedPostgresUrl } from './postgres-harness.js';

type ListenerKind = 'pg-factory' | 'postgresjs' | 'pglite';

interface Rig {
  readonly client: PostgresClient;
  readonly store: PostgresStore;
  readonly bare: PostgresStore;
  /** The LISTEN channels the listener's session holds now (`[]` when it has no session). */
  listening(): Promise<string[]>;
  /** Terminates the listener's backend (`null` for PGlite: nothing to terminate). */
  readonly terminate: (() => Promise<number>) | null;
  close(): Promise<void>;
}

async function openRig(kind: ListenerKind): Promise<Rig> {
  const table = freshTable('freed');
  if (kind === 'pglite') {
    const lite = await PGlite.create();
    const store = createPostgresStore({ client: lite, table, listener: lite });
    await store.migrate();
    return {
      client: lite,
      store,
      bare: createPostgresStore({ client: lite, table }),
      listening: async () => (await lite.query<{ c: string }>('SELECT pg_listening_channels() AS c')).rows.map((row) => row.c),
      terminate: null,
      close: () => lite.close(),
    };
  }
  const url = await sharedPostgresUrl();
  const application = `lf-listener-${randomBytes(4).toString('hex')}`;
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pool.on('error', () => undefined);
  const opened: pg.Client[] = [];
  const sql =
    kind === 'postgresjs' ? postgres(url, { max: 1, onnotice: () => undefined, connection: { application_name: application } }) : null;
  const listener: PostgresListenerOption =
    sql ??
    (async () => {
      const client = new pg.Client({ connectionString: url, application_name: application });
      opened.push(client);
      await client.connect();
      return client;
    });
  const store = createPostgresStore({ client: pool, table, listener });
  await store.migrate();
  // NOTE: a session's LISTENs are visible only to itself; pg_stat_activity shows the listener's last statement.
  const backends = async (): Promise<Array<{ pid: number; query: string }>> =>
    (await pool.query<{ pid: number; query: string }>('SELECT pid, query FROM pg_stat_activity WHERE application_name = $1', [application]))
      .rows;
  return {
    client: pool,
    store,
    bare: createPostgresStore({ client: pool, table }),
    listening: async () => (await backends()).filter((backend) => /^listen /i.test(backend.query)).map((backend) => backend.query),
    terminate: async () => {
      const rows = (
        await pool.query<{ ok: boolean }>(
          'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE $2',
          [application, 'listen %'],
        )
      ).rows;
      return rows.filter((row) => row.ok).length;
    },
    close: async () => {
      await Promise.all(opened.map((client) => client.end().catch(() => undefined)));
      await sql?.end({ timeout: 1 });
      await pool.end();
    },
  };
}

describe.each<ListenerKind>(['pg-factory', 'postgresjs', 'pglite'])('postgres watchFreed (%s)', (kind) => {
  let rig: Rig;
  let leases: Leases<PostgresStore>;

  beforeAll(async () => {
    rig = await openRig(kind);
    leases = createLeases(rig.store, { holder: 'a', ttlMs: 60_000 });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('a store without a listener has no watchFreed; bad wake-up options are refused at creation; the channel name fits an identifier', () => {
    expect(rig.bare.watchFreed).toBeUndefined();
    expect(() => createPostgresStore({ client: rig.client, listener: {} as PostgresListenerOption })).toThrow(InvalidArgumentError);
    expect(() => createPostgresStore({ client: rig.client, listener: async () => ({}) as never, subscribeTimeoutMs: 0 })).toThrow(
      InvalidArgumentError,
    );
    expect(freedChannelOf(tableName('leasefence_leases'))).toBe('leasefence_leases:freed');
    expect(Buffer.byteLength(freedChannelOf(tableName(`${'s'.repeat(48)}.${'t'.repeat(48)}`)))).toBeLessThanOrEqual(63);
  });

  it('hears a release and a revoke as soon as its watch resolves, and not a release that ends nothing', async () => {
    await expectReleaseAndRevokeHeard(rig.store, leases, `job:${kind}:heard`);
  });

  it('hears a key-state change that ends a grant and a remove, and not a change that ends nothing', async () => {
    const key = `job:${kind}:state`;
    const heard = vi.fn();
    const end = await rig.store.watchFreed!(key, heard);
    try {
      await leases.claimOrThrow(key);
      await rig.store.setKeyState({ key, values: { rev: '1' }, by: 'scanner' });
      await vi.waitFor(() => expect(heard).toHaveBeenCalledTimes(1), { timeout: 2_000 });
      await leases.claimOrThrow(key);
      await rig.store.setKeyState({ key, values: { rev: '1' }, by: 'scanner' });
      await rig.store.remove({ key, force: true, expectedToken: null });
      await vi.waitFor(() => expect(heard).toHaveBeenCalledTimes(2), { timeout: 2_000 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(heard).toHaveBeenCalledTimes(2);
    } finally {
      await end();
    }
  });

  it('one LISTEN serves many keys; a release wakes only its own key; none is left after the last watch ends', async () => {
    const ends = await expectOwnKeyWoken(rig.store, leases, [`job:${kind}:a`, `job:${kind}:b`]);
    ends.push(await rig.store.watchFreed!(`job:${kind}:b`, () => undefined));
    expect(await rig.listening()).toHaveLength(1);
    for (const end of ends) end();
    ends[0]!();
    await vi.waitFor(async () => expect(await rig.listening()).toEqual([]), { timeout: 5_000, interval: 20 });
  });

  it('after its listener backend is terminated, wakes its watchers, listens again and hears the next release', async (context) => {
    if (rig.terminate === null) return context.skip();
    const key = `job:${kind}:terminated`;
    const terminate = rig.terminate;
    const end = await expectHeardAfterReconnect(
      rig.store,
      leases,
      key,
      async () => expect(await terminate()).toBe(1),
      async () => (await rig.listening()).length,
    );
    end();
    if (kind === 'postgresjs') {
      // NOTE: a known postgres.js 3.4 limitation (docs/waiting.md): once it has re-listened after a lost
      // connection, the handle's unlisten() no longer sends UNLISTEN; the session keeps the table's channel
      // (one per table, filtered in-process). Pinned here so that an upstream fix shows up.
      await leases.release(await leases.claimOrThrow(key));
      expect(await rig.listening()).toHaveLength(1);
      return;
    }
    await vi.waitFor(async () => expect(await rig.listening()).toEqual([]), { timeout: 5_000, interval: 20 });
  });
});

describe('postgres watchFreed (a pg Client you own)', () => {
  it('LISTENs on your client while anyone waits, UNLISTENs after, and leaves the client open', async () => {
    const url = await sharedPostgresUrl();
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    pool.on('error', () => undefined);
    const own = new pg.Client({ connectionString: url });
    own.on('error', () => undefined);
    await own.connect();
    try {
      const store = createPostgresStore({ client: pool, table: freshTable('freed_own'), listener: own });
      await store.migrate();
      const leases = createLeases(store, { holder: 'a', ttlMs: 60_000 });
      const channels = async (): Promise<string[]> =>
        (await own.query<{ c: string }>('SELECT pg_listening_channels() AS c')).rows.map((row) => row.c);
      await expectReleaseAndRevokeHeard(store, leases, 'job:own');
      await vi.waitFor(async () => expect(await channels()).toEqual([]), { timeout: 5_000, interval: 20 });
      const end = await store.watchFreed!('job:own', () => undefined);
      expect(await channels()).toEqual([freedChannelOf(tableName(store.table))]);
      end();
      await vi.waitFor(async () => expect(await channels()).toEqual([]), { timeout: 5_000, interval: 20 });
    } finally {
      await own.end();
      await pool.end();
    }
  });
});
