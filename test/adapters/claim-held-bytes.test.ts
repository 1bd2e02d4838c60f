/**
 * A claim refused `held` never carries the checkpoint back (issue 29 item 2: on Redis a refused claim
 * replied the whole checkpoint, so 200 one-byte SPUBLISHes to a waiter whose key had a 4 MiB checkpoint made
 * Redis send 764 MiB). The held refusal needs the holder, its token, run, acquired-at and expiry and the
 * store's now; measured on the wire against real servers, 200 refused claims of a key with a 4 MiB
 * checkpoint:
 * - Redis (a redis-server of its own, so nothing else moves its counters; ioredis and node-redis): `INFO
 *   stats` total_net_output_bytes;
 * - PostgreSQL (pg: the prepared claim statement, and the claim function that unprepared stores and PGlite
 *   call): the bytes the client's socket received; postgres.js: the bytes a counting TCP proxy passed to it.
 * - SQLite (in process, no wire): the text the claims' statements return to JavaScript, counted by a wrapper
 *   around the better-sqlite3 connection;
 * - memory: the refusal itself (no copy is made).
 * Each must stay under 1 KiB per claim (before, on Redis and SQLite: over 4 MiB per claim).
 */
import { createServer, connect, type Server } from 'node:net';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import pg from 'pg';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, fromPostgresJs } from '../../src/adapters/postgres/index.js';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { createSqliteStore } from '../../src/adapters/sqlite/index.js';
import { createLeases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';
import { freshTable, sharedPostgresUrl } from './postgres-harness.js';
import { freshDatabasePath } from './sqlite-harness.js';
import { openClient } from './redis-harness.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { pgBytesReceived, redisBytesSent } from './wire-bytes.js';

const CHECKPOINT_BYTES = 4 * 1024 * 1024;
const CLAIMS = 200;
const PER_CLAIM_BUDGET = 1024;

/** A holder with a 4 MiB checkpoint on `key`, then CLAIMS refused claims of another holder; returns nothing. */
async function holdWithCheckpoint(store: Store, key: string): Promise<void> {
  const holder = createLeases(store, { holder: 'holder', ttlMs: 600_000, maxCheckpointBytes: 2 * CHECKPOINT_BYTES });
  const lease = await holder.claimOrThrow(key);
  await holder.checkpointOrThrow(lease, { blob: 'x'.repeat(CHECKPOINT_BYTES) });
}

async function refusedClaims(store: Store, key: string): Promise<void> {
  const other = createLeases(store, { holder: 'other', ttlMs: 600_000 });
  for (let index = 0; index < CLAIMS; index += 1) {
    const refused = await other.claim(key);
    expect(refused).toMatchObject({ ok: false, reason: 'held', holder: 'holder' });
    expect(refused).not.toHaveProperty('checkpoint');
  }
}

describe('a claim refused held sends no checkpoint', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis({ persistence: 'none' });
  });
  afterAll(async () => server.stop());

  for (const kind of ['ioredis', 'node-redis'] as const) {
    it(`Redis (${kind}): 200 refused claims of a key with a 4 MiB checkpoint make the server send under 1 KiB each`, async () => {
      const { client, close } = await openClient(kind, server.url);
      const counter = new Redis(server.url);
      try {
        const store = createRedisStore({ client, prefix: `held-bytes-${kind}:` });
        await holdWithCheckpoint(store, 'big');
        const sent = await redisBytesSent(counter, () => refusedClaims(store, 'big'));
        console.log(`Redis (${kind}): ${CLAIMS} held claims, server sent ${sent} bytes`);
        expect(sent).toBeLessThan(CLAIMS * PER_CLAIM_BUDGET);
      } finally {
        await close();
        counter.disconnect();
      }
    });
  }

  it('PostgreSQL (postgres.js): 200 refused claims receive under 1 KiB each', async () => {
    const target = new URL(await sharedPostgresUrl());
    let counting = false;
    let received = 0;
    // A TCP proxy in front of the server that counts what it passes to the client.
    const proxy: Server = createServer((socket) => {
      const upstream = connect(Number(target.port), target.hostname);
      socket.pipe(upstream);
      upstream.on('data', (chunk: Buffer) => {
        if (counting) received += chunk.length;
        socket.write(chunk);
      });
      upstream.on('close', () => socket.destroy());
      socket.on('close', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxied = new URL(target.href);
    proxied.hostname = '127.0.0.1';
    proxied.port = String((proxy.address() as { port: number }).port);
    const sql = postgres(proxied.href, { max: 1, onnotice: () => undefined });
    try {
      const store = createPostgresStore({ client: fromPostgresJs(sql), table: freshTable('held_bytes') });
      await store.migrate();
      await holdWithCheckpoint(store, 'big');
      counting = true;
      await refusedClaims(store, 'big');
      counting = false;
      console.log(`PostgreSQL (postgres.js): ${CLAIMS} held claims, client received ${received} bytes`);
      expect(received).toBeGreaterThan(0);
      expect(received).toBeLessThan(CLAIMS * PER_CLAIM_BUDGET);
    } finally {
      await sql.end({ timeout: 1 });
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  for (const prepare of [true, false]) {
    it(`PostgreSQL (pg, ${prepare ? 'the claim statement' : 'the claim function'}): 200 refused claims receive under 1 KiB each`, async () => {
      const table = freshTable('held_bytes');
      const pool = new pg.Pool({ connectionString: await sharedPostgresUrl(), max: 1 });
      const bytesReceived = pgBytesReceived(pool);
      try {
        const store = createPostgresStore({ client: pool, table, prepare });
        await store.migrate();
        await holdWithCheckpoint(store, 'big');
        const received = await bytesReceived(() => refusedClaims(store, 'big'));
        console.log(`PostgreSQL (prepare: ${prepare}): ${CLAIMS} held claims, client received ${received} bytes`);
        expect(received).toBeGreaterThan(0);
        expect(received).toBeLessThan(CLAIMS * PER_CLAIM_BUDGET);
      } finally {
        await pool.end();
      }
    });
  }

  it('SQLite: 200 refused claims read under 1 KiB each out of the file', async () => {
    const file = freshDatabasePath('leasefence-held-bytes');
    const database = new Database(file.path);
    let counting = false;
    let returned = 0;
    const measure = (value: unknown): void => {
      if (!counting || typeof value !== 'object' || value === null) return;
      for (const cell of Object.values(value)) if (typeof cell === 'string') returned += Buffer.byteLength(cell);
    };
    // The real connection; its statements' rows are measured on their way to the store.
    const counted = new Proxy(database, {
      get(target, property) {
        if (property !== 'prepare') {
          const value: unknown = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        }
        return (sql: string) => {
          const statement = target.prepare(sql);
          return new Proxy(statement, {
            get(inner, name) {
              const value: unknown = Reflect.get(inner, name, inner);
              if (typeof value !== 'function') return value;
              if (name === 'get')
                return (...args: unknown[]) => {
                  const row: unknown = (value as (...a: unknown[]) => unknown).apply(inner, args);
                  measure(row);
                  return row;
                };
              if (name === 'all')
                return (...args: unknown[]) => {
                  const rows = (value as (...a: unknown[]) => unknown[]).apply(inner, args);
                  for (const row of rows) measure(row);
                  return rows;
                };
              return value.bind(inner);
            },
          });
        };
      },
    });
    try {
      const store = createSqliteStore({ client: counted });
      await store.migrate();
      await holdWithCheckpoint(store, 'big');
      counting = true;
      await refusedClaims(store, 'big');
      counting = false;
      console.log(`SQLite: ${CLAIMS} held claims, statements returned ${returned} bytes of text`);
      expect(returned).toBeGreaterThan(0);
      expect(returned).toBeLessThan(CLAIMS * PER_CLAIM_BUDGET);
      // The checkpoint is kept (the claims changed nothing).
      const holder = createLeases(store, { holder: 'holder', ttlMs: 600_000 });
      const inspected = await holder.inspect('big');
      expect(inspected.checkpoint).not.toBeNull();
    } finally {
      database.close();
      file.remove();
    }
  });

  it('memory: the refusal carries the holder, not the checkpoint', async () => {
    const store = createMemoryStore();
    await holdWithCheckpoint(store, 'big');
    await refusedClaims(store, 'big');
  });
});
