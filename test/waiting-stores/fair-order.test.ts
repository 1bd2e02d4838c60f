/**
 * First come, first served across processes (issue 25, part 3), on the run's PostgreSQL and redis-server and on a
 * SQLite file: this process holds a key; three waiting processes start their waiting claims one after another, in
 * an order that changes every round (the next starts once the store shows the previous one's place in the queue);
 * this process releases. The grants must come in exactly the arrival order, with tokens rising in it. Each handoff
 * (a release starting, the next waiter granted) is timed and printed. Then the first of three queued waiters is
 * killed (SIGKILL): the next is granted once its place expires, within its `queueTtlMs`, not before and not never; `npm run bench:handoff` reports the same
 * figures with more rounds (BENCHMARKS.md).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/adapters/postgres/index.js';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { createSqliteStore, type SqliteClient } from '../../src/adapters/sqlite/index.js';
import type { Store } from '../../src/store.js';
import { runDeadWaiter, runFairRounds, type FairRig } from './fair-order-rounds.js';

const ROUNDS = 4;
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

/** Checks the rounds on `store` and prints the handoff figures. */
async function expectArrivalOrder(rig: FairRig): Promise<void> {
  const result = await runFairRounds(rig, ROUNDS);
  for (const round of result.rounds) {
    expect(round.granted, `round ${round.index}: grants in arrival order`).toEqual(round.arrived);
    const tokens = round.tokens.map(BigInt);
    expect(
      tokens.every((token, i) => i === 0 || token > (tokens[i - 1] as bigint)),
      `round ${round.index}: tokens rise`,
    ).toBe(true);
  }
  console.info(`${rig.name}: ${result.summary}`);
}

/** A killed waiter's place lasts this long after its last attempt. */
const DEAD_PLACE_TTL_MS = 1_500;

/** Kills the first waiter while queued: the others are served in order once its place expires, not before, not never. */
async function expectDeadWaiterLeaves(rig: FairRig): Promise<void> {
  const result = await runDeadWaiter(rig, DEAD_PLACE_TTL_MS);
  expect(result.granted).toEqual([1, 2]);
  // NOTE: its place was renewed at most a third of its TTL before the kill, so it lasted at least two thirds after.
  expect(result.firstGrantMs).toBeGreaterThan((DEAD_PLACE_TTL_MS * 2) / 3 - 100);
  expect(result.firstGrantMs).toBeLessThan(DEAD_PLACE_TTL_MS + 2_000);
  console.info(
    `${rig.name}: a killed first waiter's place expired; the next grant came ${result.firstGrantMs.toFixed(0)} ms after the release`,
  );
}

describe('fair waiting across processes', () => {
  it('on PostgreSQL: waiters from 3 processes are granted in arrival order; a killed waiter leaves within its place TTL', async () => {
    const url = process.env['LEASEFENCE_PG_URL'] as string;
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    cleanups.push(() => pool.end());
    const table = 'fair_order_leases';
    const store = createPostgresStore({ client: pool, table });
    await store.migrate();
    await expectArrivalOrder({ name: 'postgres', store, url, namespace: table, pollMs: 1_000 });
    await expectDeadWaiterLeaves({ name: 'postgres', store, url, namespace: table, pollMs: 1_000 });
  });

  it('on Redis: waiters from 3 processes are granted in arrival order; a killed waiter leaves within its place TTL', async () => {
    const url = process.env['LEASEFENCE_REDIS_URL'] as string;
    const client = new Redis(url);
    cleanups.push(async () => void client.disconnect());
    const namespace = `fair-order-${process.pid}:`;
    const store = createRedisStore({ client, prefix: namespace });
    await expectArrivalOrder({ name: 'redis', store, url, namespace, pollMs: 1_000 });
    await expectDeadWaiterLeaves({ name: 'redis', store, url, namespace, pollMs: 1_000 });
  });

  it('on SQLite (one file, no notifications: waiters poll): waiters from 3 processes are granted in arrival order; a killed waiter leaves within its place TTL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasefence-fair-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'leases.db');
    const require = createRequire(import.meta.url);
    const database = new (require('better-sqlite3') as new (path: string) => SqliteClient & { close(): unknown })(file);
    cleanups.push(async () => void database.close());
    const store: Store & { migrate(): Promise<void> } = createSqliteStore({ client: database, table: 'leases', busyTimeoutMs: 10_000 });
    await store.migrate();
    await expectArrivalOrder({ name: 'sqlite', store, url: file, namespace: 'leases', pollMs: 25 });
    await expectDeadWaiterLeaves({ name: 'sqlite', store, url: file, namespace: 'leases', pollMs: 25 });
  });
});
