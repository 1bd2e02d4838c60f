/**
 * Round trips on the wire, not just statements: a proxy between the client and the server counts the
 * client's flights (bytes sent after the server last spoke). Once a connection has prepared leasefence's
 * statements, every operation is one flight with pg and with postgres.js (which, unprepared, sends a
 * parameterised query as Parse + Describe, waits, then Bind + Execute). And the statements are prepared
 * by default, and not with `prepare: false`.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createPostgresStore,
  fromPgClient,
  fromPostgresJs,
  type PostgresClient,
  type PostgresStore,
} from '../../src/adapters/postgres/index.js';
import { statementName } from '../../src/adapters/postgres/prepared.js';
import type { Lease } from '../../src/lease.js';
import { createLeases } from '../../src/leases.js';
import { freshTable, sharedPostgresUrl } from './postgres-harness.js';

/** A loopback proxy that counts client flights. */
interface FlightCounter {
  readonly port: number;
  readonly flights: number;
  close(): Promise<void>;
}

async function startFlightCounter(target: URL): Promise<FlightCounter> {
  let flights = 0;
  let lastSpoke: 'client' | 'server' = 'server';
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect({ host: target.hostname, port: Number(target.port) });
    sockets.add(client).add(upstream);
    client.on('data', (chunk) => {
      if (lastSpoke === 'server') flights += 1;
      lastSpoke = 'client';
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      lastSpoke = 'server';
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no proxy address');
  return {
    port: address.port,
    get flights() {
      return flights;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type Kind = 'pg-pool' | 'pg-client' | 'postgresjs';

/** A single-connection client of `kind` on `url`, with a way to ask its connection what it has prepared. */
async function openSingle(
  kind: Kind,
  url: string,
): Promise<{ client: PostgresClient; prepared(table: string): Promise<number>; close(): Promise<void> }> {
  const preparedSql = `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement LIKE '%' || $1 || '%'`;
  if (kind === 'postgresjs') {
    const sql = postgres(url, { max: 1, onnotice: () => undefined });
    return {
      client: fromPostgresJs(sql),
      prepared: async (table) => Number((await sql.unsafe(preparedSql, [table]))[0]!['n']),
      close: () => sql.end({ timeout: 1 }),
    };
  }
  if (kind === 'pg-pool') {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    return {
      client: pool,
      prepared: async (table) => (await pool.query<{ n: number }>(preparedSql, [table])).rows[0]!.n,
      close: () => pool.end(),
    };
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    client: fromPgClient(client),
    prepared: async (table) => (await client.query<{ n: number }>(preparedSql, [table])).rows[0]!.n,
    close: () => client.end(),
  };
}

/** Every one-statement operation, in an order that makes each of them do its work on `key`. */
function operations(store: PostgresStore, key: string): Array<[string, () => Promise<unknown>]> {
  const a = createLeases(store, { holder: 'a', ttlMs: 60_000 });
  const b = createLeases(store, { holder: 'b', ttlMs: 60_000 });
  let lease = null as unknown as Lease;
  return [
    ['claim (first)', async () => (lease = await a.claimOrThrow(key))],
    ['claim (held)', () => b.claim(key)],
    ['renew', () => a.renewOrThrow(lease)],
    ['checkpoint', () => a.checkpointOrThrow(lease, { step: 1 })],
    ['fenced statement', () => store.fencedStatement(lease, 'SELECT fence.token FROM fence')],
    ['inspect', () => a.inspect(key)],
    ['revoke', () => a.revoke(key, { reason: 'wire', requireRecovery: true })],
    ['claim (takeover, recovering)', async () => (lease = await b.claimOrThrow(key, { recovering: true }))],
    ['recover', () => b.recover(lease, 'resume')],
    ['release', () => b.release(lease)],
  ];
}

describe('postgres adapter on the wire', () => {
  let proxy: FlightCounter;
  let proxiedUrl: string;

  beforeAll(async () => {
    const server = new URL(await sharedPostgresUrl());
    proxy = await startFlightCounter(server);
    const url = new URL(server);
    url.port = String(proxy.port);
    proxiedUrl = url.toString();
  });
  afterAll(async () => {
    await proxy?.close();
  });

  for (const kind of ['pg-pool', 'pg-client', 'postgresjs'] as const) {
    it(`${kind}: every operation is one round trip once the connection has prepared its statement, and statements are prepared by default`, async () => {
      const opened = await openSingle(kind, proxiedUrl);
      try {
        const table = freshTable('lf_wire');
        const store = createPostgresStore({ client: opened.client, table });
        await store.migrate();
        for (const [, run] of operations(store, 'warm-up')) await run();
        for (const [name, run] of operations(store, 'measured')) {
          const before = proxy.flights;
          await run();
          expect({ name, roundTrips: proxy.flights - before }).toEqual({ name, roundTrips: 1 });
        }
        expect(await opened.prepared(table)).toBeGreaterThanOrEqual(8);
      } finally {
        await opened.close();
      }
    });

    it(`${kind}: with prepare: false nothing is prepared, and every operation still works`, async () => {
      const opened = await openSingle(kind, proxiedUrl);
      try {
        const table = freshTable('lf_unprepared');
        const store = createPostgresStore({ client: opened.client, table, prepare: false });
        await store.migrate();
        for (const [, run] of operations(store, 'unprepared')) await run();
        expect(await opened.prepared(table)).toBe(0);
      } finally {
        await opened.close();
      }
    });
  }

  it('prepared statement names derive from the text: one text, one name, in any copy of leasefence loaded in the process; two texts, two names', async () => {
    // NOTE: a second instance of the module, as when a CJS and an ESM copy share a pg connection; it names
    // other texts first, which would shift a name taken from a counter.
    const copy = (await import('../../src/adapters/postgres/prepared.js?second-copy' as string)) as { statementName: typeof statementName };
    expect(copy.statementName).not.toBe(statementName);
    for (const other of ['SELECT 3', 'SELECT 4', 'SELECT 5']) copy.statementName(other);
    const name = statementName('SELECT 1 AS leasefence_wire_test');
    expect(name).toMatch(/^leasefence_[0-9a-f]{16}$/);
    expect(copy.statementName('SELECT 1 AS leasefence_wire_test')).toBe(name);
    expect(statementName('SELECT 1 AS leasefence_wire_test')).toBe(name);
    expect(statementName('SELECT 2 AS leasefence_wire_test')).not.toBe(name);
  });
});
