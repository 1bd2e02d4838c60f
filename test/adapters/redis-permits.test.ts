/**
 * Semaphores on Redis (issue 25, part 2; the conformance specs run with every store's): `acquirePermit` as one
 * script, judged by the pure core (the adapter throws when the script did otherwise), through every client family:
 * the limit, `full` with its live holders and nextAt, the permit available longest, tokens above every permit's, a
 * re-delivery, take-over, held-back, recovery, a removed permit, permits made by a plain claim or setKeyState, and
 * bad input refused before any I/O. Every key of a semaphore is in its slot.
 */
import { describe, expect, it } from 'vitest';
import { createRedisStore, type RedisStore } from '../../src/adapters/redis/index.js';
import { toConnection, type RedisConnection } from '../../src/adapters/redis/connection.js';
import { clusterSlot } from '../../src/adapters/redis/cross-slot.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { isLeaseError } from '../../src/errors.js';
import { permitKey, type AcquirePermitCommand, type PermitGranted } from '../../src/fence/permits.js';
import type { Fence } from '../../src/fence/types.js';
import { permitCommand } from '../permits/race-checks.js';
import { freshPrefix, openClient, sharedRedisUrl, type RedisClientKind } from './redis-harness.js';

type PermitStore = RedisStore & Required<Pick<RedisStore, 'acquirePermit'>>;

const KINDS: readonly RedisClientKind[] = ['ioredis', 'ioredis6', 'node-redis', 'node-redis6'];

async function openStore(kind: RedisClientKind) {
  const { client, close } = await openClient(kind, await sharedRedisUrl());
  const prefix = freshPrefix('lf-permit');
  return { store: createRedisStore({ client, prefix }) as PermitStore, prefix, close };
}

const fenceOf = (granted: PermitGranted, command: AcquirePermitCommand): Fence => ({
  key: granted.key,
  token: granted.token,
  secret: command.secret,
  holder: command.holder,
  runId: command.runId,
});

async function grant(store: PermitStore, command: AcquirePermitCommand): Promise<PermitGranted> {
  const outcome = await store.acquirePermit(command);
  if (!outcome.ok) throw new Error(`expected a grant, got ${JSON.stringify(outcome.live.map((holder) => holder.key))} full`);
  return outcome;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(KINDS)('redis semaphores (%s)', (kind) => {
  it('grants up to the limit, then full with every live holder and the earliest time one frees', async () => {
    const { store, close } = await openStore(kind);
    try {
      const commands = [1, 2, 3].map((n) => permitCommand('pool', `w${n}`, 3, n === 2 ? 5_000 : 60_000));
      const grants: PermitGranted[] = [];
      for (const command of commands) grants.push(await grant(store, command));
      expect(grants.map((granted) => [granted.index, granted.key, granted.live, granted.limit])).toEqual([
        [1, permitKey('pool', 1), 1, 3],
        [2, permitKey('pool', 2), 2, 3],
        [3, permitKey('pool', 3), 3, 3],
      ]);
      expect(grants[1]?.token).toBeGreaterThan(grants[0]?.token as bigint);
      expect(grants[2]?.token).toBeGreaterThan(grants[1]?.token as bigint);
      const full = await store.acquirePermit(permitCommand('pool', 'w4', 3, 60_000));
      expect(full).toMatchObject({
        ok: false,
        reason: 'full',
        semaphore: 'pool',
        limit: 3,
        unavailable: [],
        nextAt: grants[1]?.expiresAt,
      });
      if (full.ok) return;
      expect(full.live).toEqual(
        grants.map((granted, at) => ({
          key: granted.key,
          index: granted.index,
          token: granted.token,
          holder: `w${at + 1}`,
          runId: commands[at]?.runId,
          expiresAt: granted.expiresAt,
        })),
      );
      // NOTE: a lower limit revokes nothing and grants nothing until fewer are live; a higher one grants at once.
      // NOTE: with 3 live and a limit of 2, two grants must end: the second expiry.
      expect(await store.acquirePermit(permitCommand('pool', 'w4', 2, 60_000))).toMatchObject({
        ok: false,
        reason: 'full',
        nextAt: grants[0]?.expiresAt,
      });
      const fourth = await grant(store, permitCommand('pool', 'w4', 4, 60_000));
      expect([fourth.index, fourth.live]).toEqual([4, 4]);
      expect(fourth.token).toBeGreaterThan(grants[2]?.token as bigint);
    } finally {
      await close();
    }
  });

  it('grants the permit available longest: never used first, then the one released earliest', async () => {
    const { store, close } = await openStore(kind);
    try {
      const c1 = permitCommand('s', 'a', 3, 60_000);
      const c2 = permitCommand('s', 'b', 3, 60_000);
      const g1 = await grant(store, c1);
      const g2 = await grant(store, c2);
      expect(await store.release({ fence: fenceOf(g2, c2) })).toMatchObject({ ok: true });
      await sleep(2);
      expect(await store.release({ fence: fenceOf(g1, c1) })).toMatchObject({ ok: true });
      const g3 = await grant(store, permitCommand('s', 'c', 3, 60_000));
      const g4 = await grant(store, permitCommand('s', 'd', 3, 60_000));
      const g5 = await grant(store, permitCommand('s', 'e', 3, 60_000));
      expect([g3.index, g4.index, g5.index]).toEqual([3, 2, 1]);
      expect([g3.live, g4.live, g5.live]).toEqual([1, 2, 3]);
      expect(g4.previous).toMatchObject({ kind: 'released', token: g2.token, holder: 'b' });
      expect(g5.token).toBeGreaterThan(g4.token);
      expect(g4.token).toBeGreaterThan(g3.token);
    } finally {
      await close();
    }
  });

  it('answers a re-delivered acquire with the grant it made, and takes an expired permit over with its checkpoint', async () => {
    const { store, close } = await openStore(kind);
    try {
      const command = permitCommand('r', 'a', 1, 40);
      const first = await grant(store, command);
      const again = await store.acquirePermit(command);
      expect(again).toEqual({ ...first, now: again.now });
      expect(await store.checkpoint({ fence: fenceOf(first, command), json: '{"step":1}' })).toMatchObject({ ok: true });
      const full = await store.acquirePermit(permitCommand('r', 'b', 1, 60_000));
      expect(full).toMatchObject({ ok: false, reason: 'full', nextAt: first.expiresAt });
      await sleep(60);
      const next = permitCommand('r', 'b', 1, 60_000);
      const taken = await grant(store, next);
      expect(taken).toMatchObject({
        index: 1,
        previous: { kind: 'expired', token: first.token, holder: 'a' },
        checkpoint: { json: '{"step":1}', token: first.token },
      });
      expect(taken.token).toBeGreaterThan(first.token);
      // NOTE: the expired grant's own acquire, re-delivered late, is granted afresh (the core's claim takes it over).
      expect(await store.release({ fence: fenceOf(taken, next) })).toMatchObject({ ok: true });
      const late = await grant(store, command);
      expect(late.token).toBeGreaterThan(taken.token);
    } finally {
      await close();
    }
  });

  it('grants afresh an acquire re-delivered after its own grant expired, over an intact record', async () => {
    const { store, close } = await openStore(kind);
    try {
      const command = permitCommand('late', 'a', 1, 20);
      const first = await grant(store, command);
      await sleep(40);
      const late = await grant(store, command);
      expect(late).toMatchObject({ index: 1, previous: { kind: 'expired', token: first.token, holder: 'a', runId: command.runId } });
      expect(late.token).toBeGreaterThan(first.token);
      expect(await store.renew({ fence: fenceOf(late, command), ttlMs: 60_000 })).toMatchObject({ ok: true });
      expect(await store.inspect(late.key)).toMatchObject({
        exists: true,
        token: late.token,
        grant: { holder: 'a', runId: command.runId },
      });
    } finally {
      await close();
    }
  });

  it('skips held-back permits and permits blocked for recovery, which only a recovering acquire gets', async () => {
    const { store, close } = await openStore(kind);
    try {
      const c1 = permitCommand('h', 'a', 2, 60_000);
      const g1 = await grant(store, c1);
      expect(await store.release({ fence: fenceOf(g1, c1), holdMs: 60_000 })).toMatchObject({ ok: true });
      const c2 = permitCommand('h', 'b', 2, 60_000);
      const g2 = await grant(store, c2);
      expect(g2.index).toBe(2);
      expect(await store.checkpoint({ fence: fenceOf(g2, c2), json: '{"at":2}' })).toMatchObject({ ok: true });
      expect(await store.revoke({ key: g2.key, reason: 'stuck', by: 'op', requireRecovery: true, expectedToken: null })).toMatchObject({
        ok: true,
      });
      const full = await store.acquirePermit(permitCommand('h', 'c', 2, 60_000));
      expect(full).toMatchObject({ ok: false, reason: 'full', live: [], unavailable: [1, 2] });
      if (full.ok) return;
      expect(full.nextAt).toBeGreaterThan(full.now + 50_000);
      const recovering = await grant(store, { ...permitCommand('h', 'c', 2, 60_000), recovering: true });
      expect(recovering).toMatchObject({ index: 2, checkpoint: { json: '{"at":2}' } });
      expect(await store.acquirePermit({ ...permitCommand('h', 'd', 2, 60_000), recovering: true })).toMatchObject({
        ok: false,
        unavailable: [1],
      });
    } finally {
      await close();
    }
  });

  it('counts permits a plain claim, setKeyState or claim-next made, and mints above a removed permit', async () => {
    const { store, close } = await openStore(kind);
    try {
      const direct = permitCommand('d', 'x', 9, 60_000);
      const claimed = await store.claim({ ...direct, key: permitKey('d', 5), recovering: false });
      expect(claimed).toMatchObject({ ok: true });
      expect(await store.setKeyState({ key: permitKey('d', 1), by: 'op', values: {}, holdMs: 60_000 })).toMatchObject({ ok: true });
      const full = await store.acquirePermit(permitCommand('d', 'a', 1, 60_000));
      expect(full).toMatchObject({ ok: false, live: [{ index: 5, holder: 'x' }], nextAt: claimed.ok ? claimed.expiresAt : -1 });
      // NOTE: a permit key made an item of its semaphore's set and granted by claim-next is live for acquires too.
      expect(await store.addItems?.({ set: 'd', keys: [permitKey('d', 7)] })).toMatchObject({ ok: true });
      const next = await store.claimNext?.({ ...permitCommand('d', 'y', 1, 60_000), set: 'd', onExpired: 'take-over' });
      expect(next).toMatchObject({ ok: true, key: permitKey('d', 7) });
      expect(await store.acquirePermit(permitCommand('d', 'a', 2, 60_000))).toMatchObject({
        ok: false,
        live: [{ index: 5 }, { index: 7 }],
      });
      const g = await grant(store, permitCommand('d', 'a', 4, 60_000));
      expect([g.index, g.live]).toEqual([2, 3]);
      if (claimed.ok) expect(g.token).toBeGreaterThan(claimed.token);
      expect(await store.remove({ key: g.key, force: true, expectedToken: null })).toMatchObject({ ok: true });
      // NOTE: a removed permit is as never used (no record: available since 0, lowest index first), its token above all.
      const again = await grant(store, permitCommand('d', 'b', 4, 60_000));
      expect([again.index, again.previous, again.checkpoint]).toEqual([2, null, null]);
      expect(again.token).toBeGreaterThan(g.token);
      const after = await grant(store, permitCommand('d', 'c', 5, 60_000));
      expect(after.index).toBe(3);
      expect(after.token).toBeGreaterThan(again.token);
    } finally {
      await close();
    }
  });
});

describe('redis semaphores: the layout', () => {
  it('refuses a bad name or limit before any I/O', async () => {
    const { store, close } = await openStore('ioredis');
    await close();
    // NOTE: the client is closed: anything sent would fail with another error than InvalidArgumentError.
    for (const [semaphore, limit] of [
      ['a{b', 1],
      ['', 1],
      ['ok', 0],
      ['ok', 1.5],
      ['ok', 1001],
      ['ok', '2'],
    ] as const) {
      const error: unknown = await store.acquirePermit({ ...permitCommand('ok', 'w', 1, 1000), semaphore, limit: limit as number }).then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(isLeaseError(error, 'INVALID_ARGUMENT'), `${semaphore} ${limit}: ${String(error)}`).toBe(true);
    }
  });

  it("keeps every key of a semaphore in its slot, and permits out of every set's index", async () => {
    const { store, prefix, close } = await openStore('ioredis');
    const { client: rawClient, close: closeRaw } = await openClient('ioredis', await sharedRedisUrl());
    try {
      for (let n = 0; n < 3; n += 1) await grant(store, permitCommand('slot', 'w', 3, 60_000));
      const keys = ((await (rawClient as unknown as { keys(pattern: string): Promise<string[]> }).keys(`${prefix}*`)) as string[]).sort();
      const names = keyNames(prefix);
      expect(keys).toEqual(
        [`${prefix}{slot}:permits`, ...[1, 2, 3].map((index) => names.record(permitKey('slot', index), 'lease'))].sort(),
      );
      expect(new Set(keys.map(clusterSlot)).size).toBe(1);
    } finally {
      await closeRaw();
      await close();
    }
  });
});

describe('redis semaphores: a lost reply', () => {
  it('an acquire whose reply was lost, sent again (by the caller, or the very command by the client), answers the grant it made', async () => {
    const { client, close } = await openClient('ioredis', await sharedRedisUrl());
    const raw = toConnection(client);
    const prefix = freshPrefix('lf-permit-lost');
    const sent: string[][] = [];
    let loseNext = true;
    // NOTE: the server runs the script; the reply is lost on the way back (the hidden failure), once.
    const lossy: RedisConnection = {
      send: async (args) => {
        sent.push([...args]);
        const reply = await raw.send(args);
        if (loseNext) {
          loseNext = false;
          throw new Error('connection reset by peer');
        }
        return reply;
      },
    };
    try {
      const store = createRedisStore({ client: lossy, prefix }) as PermitStore;
      const other = createRedisStore({ client, prefix }) as PermitStore;
      const command = permitCommand('lost', 'a', 2, 60_000);
      const error: unknown = await store.acquirePermit(command).then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(isLeaseError(error, 'OUTCOME_UNKNOWN'), String(error)).toBe(true);
      const first = await grant(store, command);
      expect([first.index, first.live]).toEqual([1, 1]);
      // NOTE: the very command again, as ioredis re-sends it after a reconnect: the same grant, nothing changed.
      const resent = (await raw.send(sent[0] as string[])) as unknown[];
      expect([resent[0], resent[4]]).toEqual(['again', 1]);
      expect(await grant(store, command)).toEqual({ ...first, now: expect.any(Number) });
      const second = await grant(other, permitCommand('lost', 'b', 2, 60_000));
      expect([second.index, second.live]).toEqual([2, 2]);
      expect(await other.acquirePermit(permitCommand('lost', 'c', 2, 60_000))).toMatchObject({ ok: false, reason: 'full' });
    } finally {
      await close();
    }
  });
});
