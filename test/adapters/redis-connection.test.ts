/**
 * Lost replies and unreachable servers, through a loopback proxy that lets a script run on the server and
 * then swallows its reply and resets the connection (testing.md §5.4):
 * - ioredis with its defaults re-sends the unanswered script after reconnecting: every operation must
 *   recognise the re-delivery, apply once, and report the first outcome;
 * - ioredis without re-sending (and a command timeout) and node-redis (which never re-sends) report
 *   `OutcomeUnknownError`, and the operation was applied exactly once;
 * - a command that cannot be sent is a `StoreUnavailableError`.
 */
import { createClient } from 'redis';
import { Redis } from 'ioredis';
import { Redis as Redis6 } from 'ioredis6';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { OutcomeUnknownError, StoreUnavailableError } from '../../src/errors.js';
import {
  createRedisStore,
  createRedisTokenGate,
  fromIoredis,
  fromNodeRedis,
  hashTagOf,
  type RedisClient,
} from '../../src/adapters/redis/index.js';
import { toConnection, type RedisConnection } from '../../src/adapters/redis/connection.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { freshPrefix, type RedisStore } from './redis-harness.js';

let server: RedisServer;
let proxy: TcpProxy;
let admin: RedisConnection;
const closers: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  server = await startRedis({ persistence: 'none' });
  proxy = await startTcpProxy({ port: server.port });
  const direct = new Redis(server.url);
  closers.push(() => direct.disconnect());
  admin = toConnection(direct);
});
afterAll(async () => {
  for (const close of closers) await close();
  await proxy.close();
  await server.stop();
});

/** A lease API on a client connected through the proxy, with every script already cached. */
async function throughProxy(client: RedisClient, prefix = freshPrefix('lost')): Promise<Leases<RedisStore>> {
  const leases = createLeases(createRedisStore({ client, prefix }), { holder: 'a', ttlMs: 60_000 });
  const warm = await leases.claimOrThrow('warm-up');
  await leases.renew(warm);
  await leases.checkpoint(warm, {});
  await leases.fencedWrite(warm, () => undefined);
  await leases.recover(warm, 'discard');
  await leases.inspect('warm-up');
  await leases.revoke('warm-up', { reason: 'warm' });
  await leases.release(warm);
  return leases;
}

const ioredisViaProxy = (options: Record<string, unknown> = {}, Client: typeof Redis = Redis): Redis => {
  const client = new Client({ host: proxy.host, port: proxy.port, ...options });
  client.on('error', () => undefined);
  closers.push(() => client.disconnect());
  return client;
};

/** Runs `operation` with the reply of its script lost, and checks that exactly one reply was dropped. */
async function withLostReply<T>(operation: () => Promise<T>): Promise<T> {
  const dropped = proxy.dropped;
  proxy.dropNextReply();
  try {
    return await operation();
  } finally {
    expect(proxy.dropped).toBe(dropped + 1);
  }
}

describe.each([
  ['ioredis 5', Redis],
  ['ioredis 6', Redis6 as unknown as typeof Redis],
] as const)('a lost reply with %s defaults (the script is re-sent after the reconnect)', (_version, Client) => {
  let leases: Leases<RedisStore>;
  let gateClient: Redis;
  const prefix = freshPrefix('lost');
  beforeAll(async () => {
    gateClient = ioredisViaProxy({}, Client);
    leases = await throughProxy(gateClient, prefix);
  });

  it('a re-delivered fenced write applies once and returns the first outcome', async () => {
    const lease = await leases.claimOrThrow('job:write');
    const counter = `${hashTagOf('job:write')}:ioredis-resend:${_version}`;
    const outcome = await withLostReply(() => leases.fencedWrite(lease, (tx) => tx.call('INCR', counter)));
    expect(outcome).toMatchObject({ ok: true, value: 1, token: lease.token });
    expect(await admin.send(['GET', counter])).toBe('1');
  });

  it('a re-delivered claim reports the grant it made, minting one token', async () => {
    const claimed = await withLostReply(() => leases.claim('job:claim'));
    expect(claimed.ok).toBe(true);
    if (!claimed.ok) return;
    expect(await leases.inspect('job:claim')).toMatchObject({
      token: claimed.lease.token,
      grant: { token: claimed.lease.token, holder: 'a' },
    });
    expect(await leases.renew(claimed.lease)).toMatchObject({ ok: true });
  });

  it('a re-delivered revoke revokes once: it does not revoke the grant that came next', async () => {
    const lease = await leases.claimOrThrow('job:revoke');
    const revoked = await withLostReply(() => leases.revoke('job:revoke', { reason: 'lost reply' }));
    expect(revoked).toMatchObject({ ok: true, token: lease.token + 1n, revoked: { token: lease.token } });
    expect((await leases.inspect('job:revoke')).token).toBe(lease.token + 1n);
  });

  it('a re-delivered token gate write applies once and returns the first outcome', async () => {
    const lease = await leases.claimOrThrow('job:gate');
    const gate = createRedisTokenGate({ client: gateClient, leasePrefix: prefix });
    const counter = `${hashTagOf('report')}:ioredis-resend:${_version}`;
    // NOTE: the gate is called with the full fence, as leases.gateWrite does under the gate contract (issue 9.5).
    await gate.write('warm-up', lease.fence(), () => undefined);
    const outcome = await withLostReply(() => gate.write('report', lease.fence(), (tx) => tx.call('INCR', counter)));
    expect(outcome).toMatchObject({ ok: true, value: 1, token: lease.token });
    expect(await admin.send(['GET', counter])).toBe('1');
  });

  it('re-delivered renew, checkpoint, recover and release change nothing more than once', async () => {
    const lease = await leases.claimOrThrow('job:others');
    expect(await withLostReply(() => leases.renew(lease))).toMatchObject({ ok: true });
    expect(await withLostReply(() => leases.checkpoint(lease, { step: 1 }))).toMatchObject({ ok: true });
    expect(await withLostReply(() => leases.recover(lease, 'resume'))).toMatchObject({ ok: true });
    expect(await withLostReply(() => leases.release(lease))).toMatchObject({ ok: true });
    expect(await leases.inspect('job:others')).toMatchObject({
      token: lease.token,
      grant: null,
      ending: { kind: 'released', token: lease.token },
      checkpoint: { value: { step: 1 } },
    });
  });
});

describe.each([
  ['ioredis without re-sending', () => ioredisViaProxy({ autoResendUnfulfilledCommands: false, commandTimeout: 800 }) as RedisClient],
  [
    'node-redis',
    async () => {
      const client = createClient({ socket: { host: proxy.host, port: proxy.port } });
      client.on('error', () => undefined);
      await client.connect();
      closers.push(() => client.destroy());
      return client;
    },
  ],
] as const)('a lost reply with %s', (_, makeClient) => {
  it('surfaces OutcomeUnknownError, and the write was applied exactly once', async () => {
    const leases = await throughProxy(await makeClient());
    const lease = await leases.claimOrThrow('job:unknown');
    const counter = `${hashTagOf('job:unknown')}:${_}`;
    const lost = withLostReply(() => leases.fencedWrite(lease, (tx) => tx.call('INCR', counter)));
    await expect(lost).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect(await admin.send(['GET', counter])).toBe('1');
    // NOTE: one round trip first, so the client's reconnect handshake (whose reply the proxy would
    // otherwise drop instead of the claim's) is over before the next reply is armed to be lost.
    await leases.inspect('job:unknown-claim');
    const claimLost = withLostReply(() => leases.claim('job:unknown-claim'));
    await expect(claimLost).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect((await leases.inspect('job:unknown-claim')).grant).toMatchObject({ holder: 'a', live: true });
  });
});

describe('operations sent before the ioredis client is ready', () => {
  it('wait together for readiness (one listener pair on the client, not one per operation) and all complete', async () => {
    const client = new Redis(server.url, { lazyConnect: true });
    client.on('error', () => undefined);
    closers.push(() => client.disconnect());
    const leases = createLeases(createRedisStore({ client, prefix: freshPrefix('burst') }), { holder: 'a', ttlMs: 60_000 });
    const [ready, end] = [client.listenerCount('ready'), client.listenerCount('end')];
    const burst = Array.from({ length: 40 }, (_, index) => leases.claim(`job:burst:${index}`));
    expect([client.listenerCount('ready') - ready, client.listenerCount('end') - end]).toEqual([1, 1]);
    expect((await Promise.all(burst)).every((claimed) => claimed.ok)).toBe(true);
    expect([client.listenerCount('ready'), client.listenerCount('end')]).toEqual([ready, end]);
  });
});

describe('a command that cannot be sent is StoreUnavailableError', () => {
  const deadPort = async (): Promise<number> => {
    const spare = await startTcpProxy({ port: 1 });
    const { port } = spare;
    await spare.close();
    return port;
  };
  const leasesOn = (client: RedisClient) => createLeases(createRedisStore({ client, prefix: freshPrefix('down') }), { holder: 'a' });

  it('ioredis: closed client, nothing listening, or not ready in time', async () => {
    const closed = new Redis(server.url);
    closed.disconnect();
    await expect(leasesOn(closed).claim('k')).rejects.toBeInstanceOf(StoreUnavailableError);
    const nobody = new Redis({ port: await deadPort(), lazyConnect: true, retryStrategy: () => null });
    nobody.on('error', () => undefined);
    await expect(leasesOn(nobody).inspect('k')).rejects.toBeInstanceOf(StoreUnavailableError);
    const retrying = new Redis({ port: await deadPort(), lazyConnect: true });
    retrying.on('error', () => undefined);
    closers.push(() => retrying.disconnect());
    await expect(leasesOn(fromIoredis(retrying, { readyTimeoutMs: 200 })).claim('k')).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('node-redis: a client never connected, closed, or offline without an offline queue', async () => {
    const never = createClient({ url: server.url });
    await expect(leasesOn(never).claim('k')).rejects.toBeInstanceOf(StoreUnavailableError);
    const closed = await createClient({ url: server.url }).connect();
    await closed.close();
    await expect(leasesOn(fromNodeRedis(closed)).claim('k')).rejects.toBeInstanceOf(StoreUnavailableError);
    const doomed = await startTcpProxy({ port: server.port });
    const offline = createClient({ socket: { host: doomed.host, port: doomed.port, reconnectStrategy: 50 }, disableOfflineQueue: true });
    offline.on('error', () => undefined);
    await offline.connect();
    closers.push(() => offline.destroy());
    await doomed.close();
    while (offline.isReady) await new Promise((resolve) => setTimeout(resolve, 5));
    await expect(leasesOn(offline).claim('k')).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('node-redis with its defaults (offline queue, reconnecting for ever), server down: StoreUnavailableError within readyTimeoutMs, and nothing lands when it is back', async () => {
    const own = await startRedis();
    const client = createClient({ url: own.url });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const leases = createLeases(
        createRedisStore({ client: fromNodeRedis(client, { readyTimeoutMs: 300 }), prefix: freshPrefix('down') }),
        { holder: 'a' },
      );
      await own.kill();
      while (client.isReady) await new Promise((resolve) => setTimeout(resolve, 5));
      // NOTE: before the fix the claim sat in node-redis' offline queue until the server came back (for ever if it did not).
      await expect(leases.claim('k')).rejects.toBeInstanceOf(StoreUnavailableError);
      await own.restart();
      while (!client.isReady) await new Promise((resolve) => setTimeout(resolve, 5));
      expect((await leases.inspect('k')).grant).toBeNull();
    } finally {
      client.destroy();
      await own.stop();
    }
  });
});
