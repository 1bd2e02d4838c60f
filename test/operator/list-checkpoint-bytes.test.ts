/**
 * A listing never carries checkpoint bodies (issue 29 item 10: 25 checkpoints of 4 MiB made `leasefence list`
 * use 288 MB; Redis sent 20 MiB for a 10-key page). Measured on the wire against real servers: ten keys
 * with 1 MiB checkpoints each, one page of their listing:
 * - Redis (a redis-server of its own, so nothing else moves its counters): `INFO stats` total_net_output_bytes;
 * - PostgreSQL: the bytes the pg client's socket received for the page;
 * - SQLite: the rows the page's statement returns hold no JSON.
 * Each must stay under 64 KiB (before: over 10 MiB). The CLI's `list --json` shows the sizes.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/adapters/postgres/index.js';
import { tableName as postgresTable } from '../../src/adapters/postgres/identifier.js';
import { listStatement } from '../../src/adapters/postgres/list.js';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { createSqliteStore } from '../../src/adapters/sqlite/index.js';
import { tableName as sqliteTable } from '../../src/adapters/sqlite/identifier.js';
import { listPageSql } from '../../src/adapters/sqlite/list.js';
import { createLeases } from '../../src/leases.js';
import { createOperator } from '../../src/operator.js';
import type { Store } from '../../src/store.js';
import { freshTable, sharedPostgresUrl } from '../adapters/postgres-harness.js';
import { freshDatabasePath } from '../adapters/sqlite-harness.js';
import { startInProcess } from '../cli/cli-harness.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';

const KEYS = 10;
const CHECKPOINT_BYTES = 1024 * 1024;
const PAGE_BUDGET = 64 * 1024;

/** Ten keys `big:0`..`big:9`, each with a checkpoint of about 1 MiB; returns the exact JSON size. */
async function seed(store: Store): Promise<number> {
  const leases = createLeases(store, { holder: 'seeder', ttlMs: 600_000, maxCheckpointBytes: 2 * CHECKPOINT_BYTES });
  const value = { blob: 'x'.repeat(CHECKPOINT_BYTES) };
  for (let index = 0; index < KEYS; index += 1) {
    const lease = await leases.claimOrThrow(`big:${index}`);
    await leases.checkpointOrThrow(lease, value);
  }
  return Buffer.byteLength(JSON.stringify(value));
}

/** Lists every `big:` key in one page and checks each shows its checkpoint's size. */
async function listOnePage(store: Store, bytes: number): Promise<void> {
  const page = await createOperator(store).list({ prefix: 'big:', limit: 100 });
  expect(page.leases).toHaveLength(KEYS);
  for (const lease of page.leases) expect(lease.checkpoint?.bytes).toBe(bytes);
}

describe('a listing sends no checkpoint bodies', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis({ persistence: 'none' });
  });
  afterAll(async () => server.stop());

  it('Redis: one page of ten keys with 1 MiB checkpoints makes the server send under 64 KiB', async () => {
    const client = new Redis(server.url);
    const counter = new Redis(server.url);
    try {
      const store = createRedisStore({ client, prefix: 'bytes:' });
      const bytes = await seed(store);
      const sent = async (): Promise<number> => Number(/total_net_output_bytes:(\d+)/.exec(await counter.info('stats'))?.[1]);
      const before = await sent();
      await listOnePage(store, bytes);
      const after = await sent();
      // NOTE: includes the first INFO reply (about 1.5 KiB) and the script loads.
      expect(after - before).toBeLessThan(PAGE_BUDGET);

      const cli = startInProcess(['list', '--json', '--store', server.url, '--prefix', 'bytes:'], { tty: false });
      cli.answer('');
      expect(await cli.exited).toBe(0);
      expect(cli.printed.stdout.length).toBeLessThan(PAGE_BUDGET);
      const listed = JSON.parse(cli.printed.stdout) as Array<{ checkpoint: { bytes: number } }>;
      expect(listed.map((lease) => lease.checkpoint.bytes)).toEqual(Array(KEYS).fill(bytes));
    } finally {
      client.disconnect();
      counter.disconnect();
    }
  });

  it('PostgreSQL: the statement reads only the size of the JSON, and the client receives under 64 KiB for the page', async () => {
    const table = freshTable('list_bytes');
    const text = listStatement(postgresTable(table));
    expect(text.match(/checkpoint_json/g)).toEqual(['checkpoint_json', 'checkpoint_json', 'checkpoint_json']);
    expect(text).toContain("''::text AS checkpoint_json");
    expect(text).toContain('pg_catalog.octet_length(l.checkpoint_json)');
    const pool = new pg.Pool({ connectionString: await sharedPostgresUrl(), max: 2 });
    let counting = false;
    let received = 0;
    // Every connection the pool opens counts what its socket receives while `counting`.
    pool.on('connect', (client) => {
      const socket = (client as unknown as { connection: { stream: NodeJS.ReadableStream } }).connection.stream;
      socket.on('data', (chunk: Buffer) => {
        if (counting) received += chunk.length;
      });
    });
    try {
      const store = createPostgresStore({ client: pool, table });
      await store.migrate();
      const bytes = await seed(store);
      counting = true;
      await listOnePage(store, bytes);
      counting = false;
      expect(received).toBeGreaterThan(0);
      expect(received).toBeLessThan(PAGE_BUDGET);
    } finally {
      await pool.end();
    }
  });

  it('SQLite: the page statement returns no JSON, only its size', async () => {
    const file = freshDatabasePath('leasefence-list-bytes');
    const database = new Database(file.path);
    try {
      const store = createSqliteStore({ client: database });
      await store.migrate();
      const bytes = await seed(store);
      const rows = database.prepare(listPageSql(sqliteTable('leasefence_leases'))).all('', 'big:', 100) as Array<{
        checkpoint_json: string | null;
        checkpoint_bytes: number;
      }>;
      expect(rows).toHaveLength(KEYS);
      for (const row of rows) expect(row).toMatchObject({ checkpoint_json: '', checkpoint_bytes: bytes });
      await listOnePage(store, bytes);
    } finally {
      database.close();
      file.remove();
    }
  });
});
