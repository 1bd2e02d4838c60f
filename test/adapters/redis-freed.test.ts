/**
 * Redis wake-ups (`watchFreed`) on a real redis-server, for each supported client: a watch hears the
 * releases and revokes that end a grant and nothing else, is live when its promise resolves, comes back
 * after its subscriber connection is killed (and wakes its waiters then, since messages were lost), and
 * leaves no server subscription behind.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { Redis as Redis6 } from 'ioredis6';
import { createClient } from 'redis';
import { createClient as createClient6 } from 'redis6';
import { InvalidArgumentError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { createRedisStore, type RedisSubscriber } from '../../src/adapters/redis/index.js';
import { toConnection, type RedisConnection } from '../../src/adapters/redis/connection.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { freedChannelOf } from '../../src/adapters/redis/freed-channel.js';
import { expectHeardAfterReconnect, expectOwnKeyWoken, expectReleaseAndRevokeHeard, wakeCounter } from '../waiting-stores/freed-specs.js';
import { freshPrefix, openClient, sharedRedisUrl, type RedisClientKind, type RedisStore } from './redis-harness.js';

const KINDS: RedisClientKind[] = ['ioredis', 'ioredis6', 'node-redis', 'node-redis6'];

/** A dedicated subscriber connection of `kind`, with its `close()`. */
async function openSubscriber(kind: RedisClientKind, url: string): Promise<{ subscriber: RedisSubscriber; close: () => Promise<void> }> {
  if (kind === 'node-redis' || kind === 'node-redis6') {
    const client = kind === 'node-redis' ? createClient({ url }) : createClient6({ url });
    client.on('error', () => undefined);
    await client.connect();
    return { subscriber: client, close: async () => void (client.isOpen ? await client.close() : undefined) };
  }
  const client = kind === 'ioredis' ? new Redis(url) : new Redis6(url);
  client.on('error', () => undefined);
  return { subscriber: client, close: async () => void client.disconnect() };
}

describe.each(KINDS)('redis watchFreed (%s)', (kind) => {
  const closers: Array<() => Promise<void>> = [];
  let url = '';
  let raw: RedisConnection;
  let prefix = '';
  let store: RedisStore;
  let leases: Leases<RedisStore>;

  beforeAll(async () => {
    url = await sharedRedisUrl();
    const main = await openClient(kind, url);
    closers.push(main.close);
    raw = toConnection(main.client);
    const sub = await openSubscriber(kind, url);
    closers.push(sub.close);
    prefix = freshPrefix('freed');
    store = createRedisStore({ client: main.client, prefix, subscriber: sub.subscriber });
    leases = createLeases(store, { holder: 'a', ttlMs: 60_000 });
  });
  afterAll(async () => {
    await Promise.all(closers.map((close) => close()));
  });

  const channel = (key: string): string => freedChannelOf(keyNames(prefix).record(key, 'lease'));
  const subscribers = async (key: string): Promise<number> => {
    const reply = (await raw.send(['PUBSUB', 'SHARDNUMSUB', channel(key)])) as [string, number];
    return Number(reply[1]);
  };

  it('a store without a subscriber connection has no watchFreed; bad wake-up options are refused at creation', async () => {
    const { client, close } = await openClient(kind, url);
    closers.push(close);
    expect(createRedisStore({ client, prefix }).watchFreed).toBeUndefined();
    const subscriber = client as unknown as RedisSubscriber;
    for (const subscribeTimeoutMs of [0, 1.5, 60_001, Number.NaN]) {
      expect(() => createRedisStore({ client, prefix, subscriber, subscribeTimeoutMs })).toThrow(InvalidArgumentError);
    }
    expect(() => createRedisStore({ client, prefix, subscriber: {} as RedisSubscriber })).toThrow(InvalidArgumentError);
  });

  it('hears a release and a revoke as soon as its watch resolves, and not a release that ends nothing', async () => {
    await expectReleaseAndRevokeHeard(store, leases, `job:${kind}:heard`);
  });

  it('many keys share the connection; a release wakes only its own key', async () => {
    for (const end of await expectOwnKeyWoken(store, leases, [`job:${kind}:a`, `job:${kind}:b`])) end();
  });

  it('keeps one server subscription per key while anyone watches it, and none after the last unsubscribes', async () => {
    const key = `job:${kind}:refcount`;
    const ends = await Promise.all([1, 2, 3].map(() => store.watchFreed!(key, () => undefined)));
    expect(await subscribers(key)).toBe(1);
    ends[0]!();
    ends[0]!();
    ends[1]!();
    expect(await subscribers(key)).toBe(1);
    ends[2]!();
    await vi.waitFor(async () => expect(await subscribers(key)).toBe(0), { timeout: 5_000, interval: 20 });
    const wakes = wakeCounter();
    const again = await store.watchFreed!(key, wakes.onFreed);
    expect(await subscribers(key)).toBe(1);
    const lease = await leases.claimOrThrow(key);
    const woken = wakes.next();
    await leases.release(lease);
    await woken;
    again();
    await vi.waitFor(async () => expect(await subscribers(key)).toBe(0), { timeout: 5_000, interval: 20 });
  });

  it('a release publishes only while someone watches the key (freed-interest.ts): a bare subscription hears no release, a watch marks the record and hears it', async () => {
    const key = `job:${kind}:interest`;
    const record = keyNames(prefix).record(key, 'lease');
    const observer = new Redis(url);
    const heard: string[] = [];
    observer.on('smessage', (_channel: string, message: string) => heard.push(message));
    try {
      await observer.ssubscribe(channel(key));
      await leases.release(await leases.claimOrThrow(key));
      // NOTE: a revoke always publishes; it arrives after any release message published before it (one connection).
      await leases.claimOrThrow(key);
      await leases.revoke(key, { reason: 'closes the window' });
      await vi.waitFor(() => expect(heard).toEqual(['revoked']), { timeout: 2_000, interval: 5 });
      const wakes = wakeCounter();
      const end = await store.watchFreed!(key, wakes.onFreed);
      expect(Number(await raw.send(['HGET', record, 'watched']))).toBeGreaterThan(Date.now());
      const woken = wakes.next();
      await leases.release(await leases.claimOrThrow(key));
      await woken;
      await vi.waitFor(() => expect(heard).toEqual(['revoked', 'released']), { timeout: 2_000, interval: 5 });
      end();
    } finally {
      observer.disconnect();
    }
  });

  it('no wake-up is lost to the mark: a watch racing a release either sees the key free at its claim or hears the release', async () => {
    const waiter = createLeases(store, { holder: 'waiter', ttlMs: 60_000 });
    for (let round = 0; round < 40; round += 1) {
      const key = `job:${kind}:race:${round}`;
      const held = await leases.claimOrThrow(key);
      const wakes = wakeCounter();
      const woken = wakes.next();
      const watching = store.watchFreed!(key, wakes.onFreed);
      // NOTE: the release lands before the subscription, between it and the mark, or after the mark (round by round).
      const releasing = (async () => {
        for (let turn = 0; turn < round % 8; turn += 1) await new Promise((resolve) => setImmediate(resolve));
        await leases.release(held);
      })();
      const end = await watching;
      const claimed = await waiter.claim(key);
      if (claimed.ok) await waiter.release(claimed.lease);
      else await woken;
      await releasing;
      end();
    }
  });

  it('after its connection is killed, wakes its watchers, resubscribes and hears the next release', async () => {
    const key = `job:${kind}:killed`;
    const kill = async (): Promise<void> => expect(Number(await raw.send(['CLIENT', 'KILL', 'TYPE', 'pubsub']))).toBeGreaterThanOrEqual(1);
    const end = await expectHeardAfterReconnect(store, leases, key, kill, () => subscribers(key));
    end();
    await vi.waitFor(async () => expect(await subscribers(key)).toBe(0), { timeout: 5_000, interval: 20 });
  });
});

describe.each(['ioredis', 'ioredis6'] as const)('redis watchFreed on an ioredis connection still opening (%s)', (kind) => {
  // NOTE: ioredis writes a command with the `loading` flag (SSUBSCRIBE has it) while its connection is in
  // status `connect`, before its ready check (INFO); the connection is then in subscriber mode and the
  // ready check fails ("Connection in subscriber mode"), so the connection drops and reconnects. Waiting
  // for 'connect' puts every cycle inside that window (seen in 74 of 200 plain connect-and-subscribe cycles).
  it('a watch made between connect and ready neither breaks the ready check nor fails; a lazyConnect connection is opened by the watch', async () => {
    const base = new URL(await sharedRedisUrl());
    base.pathname = '/3';
    const url = base.toString();
    const main = await openClient(kind, url);
    try {
      for (let cycle = 0; cycle < 20; cycle += 1) {
        const subscriber = kind === 'ioredis' ? new Redis(url) : new Redis6(url);
        const errors: unknown[] = [];
        subscriber.on('error', (error: unknown) => errors.push(error));
        try {
          await new Promise((resolve) => subscriber.once('connect', resolve));
          const store = createRedisStore({ client: main.client, prefix: freshPrefix('opening'), subscriber });
          const end = await store.watchFreed!('job:opening', () => undefined);
          end();
          await vi.waitFor(() => expect(subscriber.status).toBe('ready'), { timeout: 2_000, interval: 5 });
          expect(errors.map(String)).toEqual([]);
        } finally {
          subscriber.disconnect();
        }
      }
      // NOTE: a lazyConnect connection (status `wait`) is opened by the subscribe itself: waiting for its
      // ready event first would wait for ever.
      const lazy = kind === 'ioredis' ? new Redis(url, { lazyConnect: true }) : new Redis6(url, { lazyConnect: true });
      lazy.on('error', () => undefined);
      try {
        const store = createRedisStore({ client: main.client, prefix: freshPrefix('lazy'), subscriber: lazy });
        const end = await store.watchFreed!('job:lazy', () => undefined);
        end();
        expect(lazy.status).toBe('ready');
      } finally {
        lazy.disconnect();
      }
    } finally {
      await main.close();
    }
  });
});
