/**
 * One process of waiters on a real Redis or Postgres store (run with `node --import tsx`): `instances`
 * `Leases` instances with `waiters` waiting claims each, on one key, for `rounds` rounds. A granted waiter
 * holds briefly, then releases (or, one time in five, abandons its grant to expire). Every operation goes
 * to a chaos history file (test/chaos/history.ts) for the checker; the summary is printed as JSON.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { createPostgresStore } from '../../src/adapters/postgres/index.js';
import type { Store } from '../../src/store.js';
import { HistoryWriter, stamp } from '../chaos/history.js';
import { pgListenerFactory } from '../support/pg-listener.js';

/** What the parent passes (JSON in argv[2]). */
export interface WaiterWorkerSetup {
  readonly proc: string;
  readonly store: 'redis' | 'postgres';
  readonly url: string;
  /** Redis key prefix or Postgres table. */
  readonly namespace: string;
  readonly key: string;
  readonly instances: number;
  readonly waiters: number;
  readonly rounds: number;
  readonly ttlMs: number;
  readonly timeoutMs: number;
  readonly historyPath: string;
}

/** What the worker prints when every round of every waiter has ended. */
export interface WaiterWorkerSummary {
  readonly granted: number;
  /** Rounds that ended with a refusal after waiting at least `timeoutMs`. */
  readonly timedOut: number;
  /** Rounds whose claim failed (the server was down); the waiter went on with its next round. */
  readonly failed: number;
  /** Refusals returned before `timeoutMs` had passed (must be 0). */
  readonly early: number;
}

const setup = JSON.parse(process.argv[2] ?? '{}') as WaiterWorkerSetup;
const history = new HistoryWriter(setup.historyPath);
let requests = 0;
const reqId = (): string => `${setup.proc}-${++requests}`;
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function openStore(): Promise<{ store: Store; close: () => Promise<void> }> {
  if (setup.store === 'redis') {
    const client = new Redis(setup.url, { maxRetriesPerRequest: null });
    const subscriber = client.duplicate();
    for (const connection of [client, subscriber]) connection.on('error', () => undefined);
    return {
      store: createRedisStore({ client, subscriber, prefix: setup.namespace }),
      close: async () => {
        client.disconnect();
        subscriber.disconnect();
      },
    };
  }
  const pool = new pg.Pool({ connectionString: setup.url, max: 4 });
  pool.on('error', () => undefined);
  const { listener, close: closeListeners } = pgListenerFactory(setup.url);
  return {
    store: createPostgresStore({ client: pool, table: setup.namespace, listener }),
    close: async () => {
      await closeListeners();
      await pool.end();
    },
  };
}

/** One waiter's rounds. */
async function runWaiter(
  leases: Leases,
  proc: string,
  tally: { granted: number; timedOut: number; failed: number; early: number },
): Promise<void> {
  const { key } = setup;
  for (let round = 0; round < setup.rounds; round += 1) {
    const claimId = reqId();
    history.write({ proc, op: 'claim', key, type: 'invoke', reqId: claimId, t: stamp() });
    let result;
    try {
      result = await leases.claim(key, { ttlMs: setup.ttlMs, wait: { timeoutMs: setup.timeoutMs } });
    } catch (error) {
      history.write({ proc, op: 'claim', key, type: 'info', reqId: claimId, t: stamp(), error: String(error) });
      tally.failed += 1;
      await pause(50);
      continue;
    }
    if (!result.ok) {
      history.write({ proc, op: 'claim', key, type: 'fail', reqId: claimId, t: stamp(), reason: result.reason });
      if (result.waitedMs >= setup.timeoutMs) tally.timedOut += 1;
      else tally.early += 1;
      continue;
    }
    const { lease } = result;
    history.write({
      proc,
      op: 'claim',
      key,
      type: 'ok',
      reqId: claimId,
      t: stamp(),
      token: lease.token.toString(),
      ...(lease.acquiredAt === null ? {} : { storeNow: lease.acquiredAt, acquiredAt: lease.acquiredAt }),
      expiresAt: lease.expiresAt,
      ...(result.previous === null ? {} : { reason: result.previous.kind, previousToken: result.previous.token.toString() }),
    });
    tally.granted += 1;
    await pause(5 + Math.floor(Math.random() * 15));
    // NOTE: one grant in five is abandoned: the next waiter takes over at its expiry (no message is sent).
    if (Math.random() < 0.2) continue;
    const releaseId = reqId();
    history.write({ proc, op: 'release', key, type: 'invoke', reqId: releaseId, t: stamp(), token: lease.token.toString() });
    try {
      const released = await leases.release(lease);
      history.write({
        proc,
        op: 'release',
        key,
        type: released.ok ? 'ok' : 'fail',
        reqId: releaseId,
        t: stamp(),
        token: lease.token.toString(),
        storeNow: released.now,
        ...(released.ok ? {} : { reason: released.reason }),
      });
    } catch (error) {
      history.write({
        proc,
        op: 'release',
        key,
        type: 'info',
        reqId: releaseId,
        t: stamp(),
        token: lease.token.toString(),
        error: String(error),
      });
    }
  }
}

const { store, close } = await openStore();
const tally = { granted: 0, timedOut: 0, failed: 0, early: 0 };
const instances = Array.from({ length: setup.instances }, (_, index) =>
  createLeases(store, { holder: `${setup.proc}.${index}`, ttlMs: setup.ttlMs }),
);
process.send?.('ready');
await Promise.all(
  instances.flatMap((leases, index) =>
    Array.from({ length: setup.waiters }, (_, waiter) => runWaiter(leases, `${setup.proc}.${index}.${waiter}`, tally)),
  ),
);
history.close();
await close();
const summary: WaiterWorkerSummary = tally;
process.stdout.write(`${JSON.stringify(summary)}\n`);
