/**
 * Waiter interest on the lease row (freed-interest.ts), on a real server: release and revoke notify only
 * when a waiter marked its interest, and no wake-up is lost. The race between a waiter's mark and a
 * release is forced in both orders: a third transaction holds the row FOR SHARE (as a fenced write does),
 * the two statements queue behind it in the chosen order (PostgreSQL grants a row's lock to its waiters
 * first come, first served), and the holder then commits. Whatever the order, the waiter that claims after
 * its watch resolved is granted the key or hears the release.
 */
import { randomBytes } from 'node:crypto';
import { fc, test } from '@fast-check/vitest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import pg from 'pg';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { createPostgresStore, type PostgresClient, type PostgresStore } from '../../src/adapters/postgres/index.js';
import { freedChannelOf } from '../../src/adapters/postgres/freed-channel.js';
import { PROBE_PREFIX } from '../../src/adapters/postgres/freed-listener.js';
import { tableName } from '../../src/adapters/postgres/identifier.js';
import { StoreUnavailableError } from '../../src/errors.js';
import { interestStatement, INTEREST_WINDOW_MS, REMARK_EVERY_MS } from '../../src/adapters/postgres/freed-interest.js';
import type { Lease } from '../../src/lease.js';
import { freshTable, sharedPostgresUrl } from './postgres-harness.js';

const WAKE_TIMEOUT_MS = 5_000;

interface Rig {
  readonly table: string;
  readonly pool: pg.Pool;
  readonly store: PostgresStore;
  /** Backends of `pool` waiting for a lock now. */
  lockWaiters(): Promise<number>;
  /** A session of its own on the table's channel: every payload it heard, in order. */
  readonly heard: string[];
  /** Opens a connection of its own (a listener factory), closed by `close`. */
  connect(): Promise<pg.Client>;
  /** Holds `key`'s row FOR SHARE until the returned function commits. */
  holdRow(key: string): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

async function openRig(): Promise<Rig> {
  const url = await sharedPostgresUrl();
  const table = freshTable('interest');
  const application = `lf-interest-${randomBytes(4).toString('hex')}`;
  const pool = new pg.Pool({ connectionString: url, max: 6, application_name: application });
  pool.on('error', () => undefined);
  const clients: pg.Client[] = [];
  const connect = async (): Promise<pg.Client> => {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined);
    clients.push(client);
    await client.connect();
    return client;
  };
  const store = createPostgresStore({ client: pool, table, listener: connect });
  await store.migrate();
  const spy = await connect();
  const heard: string[] = [];
  // NOTE: the store's one-time listener check (a probe payload, freed-listener.ts) is not a release's.
  spy.on(
    'notification',
    (message) => void (message.payload?.startsWith(PROBE_PREFIX) === true ? undefined : heard.push(message.payload ?? '')),
  );
  await spy.query(`LISTEN "${freedChannelOf(tableName(table))}"`);
  return {
    table,
    pool,
    store,
    heard,
    connect,
    lockWaiters: async () =>
      Number(
        (
          await spy.query<{ n: string }>(
            `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
            [application],
          )
        ).rows[0]!.n,
      ),
    holdRow: async (key) => {
      const holder = await connect();
      await holder.query('BEGIN');
      const { rowCount } = await holder.query(`SELECT 1 FROM "${table}" WHERE key = $1 FOR SHARE`, [key]);
      expect(rowCount).toBe(1);
      return async () => {
        await holder.query('COMMIT');
      };
    },
    close: async () => {
      await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
      await pool.end();
    },
  };
}

/** A waiter as key-waiters.ts waits: watch first, claim once the watch resolved, then wait for a wake-up. */
function startWaiter(rig: Rig, leases: Leases<PostgresStore>, key: string) {
  const waiter = { state: 'subscribing' as 'subscribing' | 'claiming' | 'held' | 'granted', woken: false, end: (): void => undefined };
  const done = (async () => {
    waiter.end = await rig.store.watchFreed!(key, () => {
      waiter.woken = true;
    });
    waiter.state = 'claiming';
    const claimed = await leases.claim(key);
    waiter.state = claimed.ok ? 'granted' : 'held';
    if (claimed.ok) await leases.release(claimed.lease);
  })();
  return { waiter, done };
}

describe('postgres waiter interest: the mark and the release, in both orders', () => {
  let rig: Rig;
  let holder: Leases<PostgresStore>;
  let waiting: Leases<PostgresStore>;

  beforeAll(async () => {
    rig = await openRig();
    holder = createLeases(rig.store, { holder: 'holder', ttlMs: 60_000 });
    waiting = createLeases(rig.store, { holder: 'waiter', ttlMs: 60_000 });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('release first: it finds no interest and sends nothing, and the waiter, claiming after its mark, is granted', async () => {
    const key = 'race:release-first';
    const lease = await holder.claimOrThrow(key);
    const commit = await rig.holdRow(key);
    const released = holder.release(lease);
    await vi.waitFor(async () => expect(await rig.lockWaiters()).toBe(1), { timeout: WAKE_TIMEOUT_MS, interval: 5 });
    const { waiter, done } = startWaiter(rig, waiting, key);
    await vi.waitFor(async () => expect(await rig.lockWaiters()).toBe(2), { timeout: WAKE_TIMEOUT_MS, interval: 5 });
    // NOTE: a watch that resolved before its mark committed has claimed by now, against the held row.
    await vi.waitFor(() => expect(waiter.state).not.toBe('claiming'), { timeout: WAKE_TIMEOUT_MS, interval: 5 });
    await commit();
    expect((await released).ok).toBe(true);
    await done;
    if (waiter.state === 'held') await vi.waitFor(() => expect(waiter.woken).toBe(true), { timeout: WAKE_TIMEOUT_MS, interval: 10 });
    expect(waiter.state).toBe('granted');
    waiter.end();
  });

  it('mark first: the release reads the interest on the row it locked and wakes the waiter', async () => {
    const key = 'race:mark-first';
    const lease = await holder.claimOrThrow(key);
    const commit = await rig.holdRow(key);
    const { waiter, done } = startWaiter(rig, waiting, key);
    await vi.waitFor(async () => expect(await rig.lockWaiters()).toBe(1), { timeout: WAKE_TIMEOUT_MS, interval: 5 });
    expect(waiter.state).toBe('subscribing');
    const released = holder.release(lease);
    await vi.waitFor(async () => expect(await rig.lockWaiters()).toBe(2), { timeout: WAKE_TIMEOUT_MS, interval: 5 });
    await commit();
    expect((await released).ok).toBe(true);
    await done;
    await vi.waitFor(() => expect(waiter.woken).toBe(true), { timeout: WAKE_TIMEOUT_MS, interval: 10 });
    // NOTE: the rig listens on a session of its own, which may hear the notification after the waiter's did.
    await vi.waitFor(() => expect(rig.heard).toContain(key), { timeout: WAKE_TIMEOUT_MS, interval: 10 });
    waiter.end();
  });

  it("a key with no row yet: the mark leaves a placeholder that reads as no lease, carries the interest through another's first claim, and the release wakes the waiter", async () => {
    const key = 'race:first-claim';
    let woken = false;
    const end = await rig.store.watchFreed!(key, () => {
      woken = true;
    });
    expect(await rig.store.inspect(key)).toMatchObject({ exists: false, token: 0n });
    expect((await rig.store.list!({ prefix: 'race:first', limit: 10, cursor: null })).leases).toEqual([]);
    const lease = await holder.claimOrThrow(key);
    expect(lease.token).toBeGreaterThan(1_000_000_000_000_000n);
    expect((await waiting.claim(key)).ok).toBe(false);
    expect((await holder.release(lease)).ok).toBe(true);
    await vi.waitFor(() => expect(woken).toBe(true), { timeout: WAKE_TIMEOUT_MS, interval: 10 });
    end();
  });
});

type Step =
  | { readonly kind: 'claim' | 'release' | 'fencedWrite'; readonly holder: 'a' | 'b' }
  | { readonly kind: 'revoke' | 'mark' | 'inspect' | 'list' };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constantFrom('claim' as const, 'release' as const, 'fencedWrite' as const),
    holder: fc.constantFrom('a' as const, 'b' as const),
  }),
  fc.record({ kind: fc.constantFrom('revoke' as const, 'mark' as const, 'inspect' as const, 'list' as const) }),
);

describe('postgres waiter interest: a mark never changes what an operation decides', () => {
  let rig: Rig;
  let runs = 0;
  beforeAll(async () => {
    rig = await openRig();
  });
  afterAll(async () => {
    await rig?.close();
  });

  test.prop([fc.array(stepArb, { minLength: 1, maxLength: 10 })], { numRuns: 25 })(
    'a key marked before its first claim (a placeholder row) and at any point after answers every operation as an unmarked key',
    async (steps) => {
      runs += 1;
      const marked = `prop:${runs}:marked`;
      const plain = `prop:${runs}:plain`;
      const mark = (key: string) => rig.pool.query(interestStatement(tableName(rig.table), 2_000), [key]);
      await mark(marked);
      const leases = {
        a: createLeases(rig.store, { holder: 'a', ttlMs: 60_000 }),
        b: createLeases(rig.store, { holder: 'b', ttlMs: 60_000 }),
      };
      const held = new Map<string, Lease>();
      // NOTE: what an outcome says, without the key and the token (a time-based floor, different per key).
      const summary = (value: unknown): unknown =>
        JSON.parse(
          JSON.stringify(value, (name, field: unknown) =>
            ['key', 'token', 'now', 'at', 'acquiredAt', 'expiresAt', 'lease', 'grant', 'writtenAt'].includes(name)
              ? typeof field
              : typeof field === 'bigint'
                ? 'bigint'
                : field,
          ),
        );
      const run = async (key: string, step: Step): Promise<unknown> => {
        switch (step.kind) {
          case 'claim': {
            const claimed = await leases[step.holder].claim(key);
            if (claimed.ok) held.set(`${key}:${step.holder}`, claimed.lease);
            return summary(claimed);
          }
          case 'release':
          case 'fencedWrite': {
            const lease = held.get(`${key}:${step.holder}`);
            if (lease === undefined) return 'no lease';
            if (step.kind === 'release') return summary(await leases[step.holder].release(lease));
            return summary(await leases[step.holder].fencedWrite(lease, async (tx) => (await tx.query('SELECT 1 AS one')).rows.length));
          }
          case 'revoke':
            return summary(await leases.a.revoke(key, { reason: 'prop', by: 'test' }));
          case 'mark':
            if (key === marked) await mark(key);
            return 'marked';
          case 'inspect':
            return summary(await leases.a.inspect(key));
          case 'list':
            return (await rig.store.list!({ prefix: key, limit: 5, cursor: null })).leases.map((lease) => lease.grant?.holder ?? null);
        }
      };
      for (const step of steps) expect(await run(marked, step)).toEqual(await run(plain, step));
    },
  );
});

describe('postgres waiter interest: a mark never outlives its budget (issue 29 item 1)', () => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('a mark behind a long fenced write gives the row lock up at subscribeTimeoutMs: no pooled connection keeps waiting for it', async () => {
    const rig = await openRig();
    try {
      const store = createPostgresStore({ client: rig.pool, table: rig.table, listener: rig.connect, subscribeTimeoutMs: 200 });
      const key = 'parked';
      await createLeases(store, { holder: 'holder', ttlMs: 60_000 }).claimOrThrow(key);
      const commit = await rig.holdRow(key);
      try {
        await expect(store.watchFreed!(key, () => undefined)).rejects.toThrow(StoreUnavailableError);
        // NOTE: the server ends the statement's lock wait at its lock_timeout (the budget); give it a moment.
        let waiting = await rig.lockWaiters();
        for (let tries = 0; waiting > 0 && tries < 20; tries += 1) {
          await sleep(50);
          waiting = await rig.lockWaiters();
        }
        expect(waiting, 'pooled connections still waiting for the row lock after the watch gave up').toBe(0);
      } finally {
        await commit();
      }
      // The next watch, once the row is free, marks and succeeds.
      (await store.watchFreed!(key, () => undefined))();
    } finally {
      await rig.close();
    }
  });

  it("the mark's lock_timeout is its own transaction's: the pooled connection keeps its setting", async () => {
    const rig = await openRig();
    const single = new pg.Pool({ connectionString: await sharedPostgresUrl(), max: 1 });
    single.on('error', () => undefined);
    try {
      const before = (await single.query<{ lock_timeout: string }>('SHOW lock_timeout')).rows[0]!.lock_timeout;
      const store = createPostgresStore({ client: single, table: rig.table, listener: rig.connect, subscribeTimeoutMs: 321 });
      (await store.watchFreed!('own-setting', () => undefined))();
      expect((await single.query<{ lock_timeout: string }>('SHOW lock_timeout')).rows[0]!.lock_timeout).toBe(before);
      expect(before).not.toBe('321ms');
    } finally {
      await single.end();
      await rig.close();
    }
  });

  it('several watches of one key behind a locked row send at most one mark at a time, and all succeed once it is free', async () => {
    const rig = await openRig();
    try {
      const store = createPostgresStore({ client: rig.pool, table: rig.table, listener: rig.connect, subscribeTimeoutMs: 5_000 });
      const key = 'crowded';
      await createLeases(store, { holder: 'holder', ttlMs: 60_000 }).claimOrThrow(key);
      const commit = await rig.holdRow(key);
      const watches = [1, 2, 3].map(() => store.watchFreed!(key, () => undefined));
      let most = 0;
      for (let tries = 0; tries < 10; tries += 1) {
        await sleep(50);
        most = Math.max(most, await rig.lockWaiters());
      }
      await commit();
      for (const end of await Promise.all(watches)) end();
      expect(most).toBe(1);
    } finally {
      await rig.close();
    }
  });
});

describe('postgres: a full notification queue never fails a release or revoke (issue 29 item 3)', () => {
  /**
   * A client whose statements that would pg_notify fail as a full queue fails them. NOTE: simulated at the
   * statement boundary: PostgreSQL 15's queue holds 8 GB and its size is not settable, so a real fill is
   * impractical. As at a real full queue (the error is raised in PreCommit_Notify), the statement runs and
   * its transaction is then rolled back: nothing is applied.
   */
  function fullQueueClient(pool: pg.Pool, failed: string[]): PostgresClient {
    return {
      acceptsNamedStatements: true,
      query: async (text, params) => {
        const named = typeof text === 'string' ? null : (text as { text: string; values?: unknown[] });
        const sql = named === null ? (text as string) : named.text;
        if (!sql.includes('pg_notify')) return pool.query(text as never, params as never);
        failed.push(sql);
        const connection = await pool.connect();
        try {
          await connection.query('BEGIN');
          await connection.query(sql, (named?.values ?? params) as unknown[]);
        } finally {
          await connection.query('ROLLBACK');
          connection.release();
        }
        throw Object.assign(new Error('too many notifications in the NOTIFY queue'), { code: '54000', severity: 'ERROR' });
      },
    };
  }

  it.each([true, false])('release and revoke still end their grants, without the notification (prepared: %s)', async (prepare) => {
    const rig = await openRig();
    try {
      const failed: string[] = [];
      const store = createPostgresStore({ client: fullQueueClient(rig.pool, failed), table: rig.table, listener: rig.connect, prepare });
      const leases = createLeases(store, { holder: 'a', ttlMs: 60_000 });
      const end = await store.watchFreed!('full:released', () => undefined);
      const lease = await leases.claimOrThrow('full:released');
      await leases.checkpointOrThrow(lease, { step: 1 });
      expect(await leases.release(lease, { checkpoint: { step: 2 } })).toMatchObject({ ok: true, alreadyReleased: false });
      expect(await leases.inspect('full:released')).toMatchObject({
        grant: null,
        ending: { kind: 'released', token: lease.token },
        checkpoint: { value: { step: 2 } },
      });
      end();
      const held = await leases.claimOrThrow('full:revoked');
      expect(await leases.revoke('full:revoked', { reason: 'full queue', expectedToken: held.token })).toMatchObject({ ok: true });
      expect(await leases.inspect('full:revoked')).toMatchObject({
        grant: null,
        ending: { kind: 'revoked', token: held.token, reason: 'full queue' },
      });
      expect(failed.length).toBeGreaterThanOrEqual(2);
    } finally {
      await rig.close();
    }
  });
});

describe('postgres waiter interest: listing past placeholders', () => {
  it('a page of placeholder rows neither shows them nor ends the listing before the leases after them', async () => {
    const rig = await openRig();
    try {
      for (const key of ['page:a', 'page:b']) await rig.pool.query(interestStatement(tableName(rig.table), 2_000), [key]);
      await createLeases(rig.store, { holder: 'a', ttlMs: 60_000 }).claimOrThrow('page:c');
      const listed: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await rig.store.list!({ prefix: 'page:', limit: 1, cursor });
        listed.push(...page.leases.map((lease) => lease.key));
        cursor = page.cursor;
      } while (cursor !== null);
      expect(listed).toEqual(['page:c']);
    } finally {
      await rig.close();
    }
  });
});

describe('postgres waiter interest: renewed while watched, and only then', () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await openRig();
  });
  afterAll(async () => {
    vi.useRealTimers();
    await rig?.close();
  });

  it('a watched key is marked again every REMARK_EVERY_MS (one timer per key, whatever the watches), and no timer is left after the last watch ends', async () => {
    const key = 'remark';
    const until = async (): Promise<number> =>
      Number(
        (
          await rig.pool.query<{ ms: string }>(
            `SELECT (extract(epoch FROM waited_until) * 1000)::bigint::text AS ms FROM "${rig.table}" WHERE key = $1`,
            [key],
          )
        ).rows[0]!.ms,
      );
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const ends = [await rig.store.watchFreed!(key, () => undefined), await rig.store.watchFreed!(key, () => undefined)];
    expect(vi.getTimerCount()).toBe(1);
    const first = await until();
    expect(first).toBeGreaterThan(Date.now() + INTEREST_WINDOW_MS - 5_000);
    vi.advanceTimersByTime(REMARK_EVERY_MS);
    // NOTE: the re-mark is a statement in flight: poll on real timers (only setInterval is faked).
    for (let tries = 0; (await until()) === first && tries < 500; tries += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await until()).toBeGreaterThan(first);
    ends[0]!();
    expect(vi.getTimerCount()).toBe(1);
    ends[1]!();
    expect(vi.getTimerCount()).toBe(0);
    vi.useRealTimers();
  });
});

describe('postgres: who is notified', () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await openRig();
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('a release or revoke nobody waits for sends nothing; one a waiter marked does', async () => {
    const leases = createLeases(rig.store, { holder: 'a', ttlMs: 60_000 });
    await leases.release(await leases.claimOrThrow('unwatched:released'));
    await leases.claimOrThrow('unwatched:revoked');
    await leases.revoke('unwatched:revoked', { reason: 'test', by: 'test' });
    const end = await rig.store.watchFreed!('watched', () => undefined);
    await leases.release(await leases.claimOrThrow('watched'));
    // NOTE: notifications arrive in commit order: once the last one is heard, any earlier one has been.
    await vi.waitFor(() => expect(rig.heard).toContain('watched'), { timeout: WAKE_TIMEOUT_MS, interval: 10 });
    expect(rig.heard).toEqual(['watched']);
    end();
  });
});

describe('postgres waiter interest: behind a long fenced write', () => {
  it('a mark that waits longer than subscribeTimeoutMs fails the watch (its waiters then claim on their schedule); the next watch, once the row is free, succeeds', async () => {
    const rig = await openRig();
    try {
      const store = createPostgresStore({ client: rig.pool, table: rig.table, listener: rig.connect, subscribeTimeoutMs: 200 });
      const key = 'behind-fenced-write';
      const holder = createLeases(store, { holder: 'holder', ttlMs: 60_000 });
      await holder.claimOrThrow(key);
      const commit = await rig.holdRow(key);
      let woken = false;
      await expect(store.watchFreed!(key, () => (woken = true))).rejects.toThrow(StoreUnavailableError);
      await commit();
      const end = await store.watchFreed!(key, () => (woken = true));
      end();
      expect(woken).toBe(false);
    } finally {
      await rig.close();
    }
  });
});
