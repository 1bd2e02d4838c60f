/**
 * Tokens across redis-server restarts, on servers of this file's own: without persistence every key is
 * lost, and the clock-derived token floor still keeps each new token above every token issued before;
 * with AOF (`appendfsync always`) the record survives a clean restart and a crash (SIGKILL).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { createRedisStore, hashTagOf } from '../../src/adapters/redis/index.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { freshPrefix, openClient, type RedisClientKind, type RedisStore } from './redis-harness.js';

const KINDS: RedisClientKind[] = ['ioredis', 'node-redis'];

describe.each(KINDS)('redis restarts (%s)', (kind) => {
  const servers: Record<'none' | 'aof', RedisServer | null> = { none: null, aof: null };
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    [servers.none, servers.aof] = await Promise.all([startRedis({ persistence: 'none' }), startRedis({ persistence: 'aof' })]);
  });
  afterAll(async () => {
    await Promise.all(closers.map((close) => close()));
    await Promise.all([servers.none?.stop(), servers.aof?.stop()]);
  });

  const leasesOn = async (server: RedisServer, holder: string): Promise<Leases<RedisStore>> => {
    const { client, close } = await openClient(kind, server.url);
    closers.push(close);
    return createLeases(createRedisStore({ client, prefix: freshPrefix('restart') }), { holder, ttlMs: 60_000 });
  };

  it('without persistence, a restart loses every key, yet the next token is larger than every token issued before', async () => {
    const server = servers.none!;
    const leases = await leasesOn(server, 'a');
    const key = `job:volatile:${kind}`;
    const issued: bigint[] = [];
    // NOTE: back-to-back grants, releases and a revoke push the token as fast as the server allows.
    for (let round = 0; round < 30; round += 1) {
      const lease = await leases.claimOrThrow(key);
      issued.push(lease.token);
      if (round % 10 === 9) await leases.revoke(key, { reason: 'burn one' });
      else await leases.release(lease);
    }
    const highest = (await leases.inspect(key)).token;
    expect(highest >= issued.at(-1)!).toBe(true);

    await server.restart();

    expect(await leases.inspect(key)).toMatchObject({ exists: false, token: 0n });
    const after = await leases.claimOrThrow(key);
    expect(after.previous).toBeNull();
    expect(after.token > highest).toBe(true);
    expect(after.token / 1000n).toBe(BigInt(after.acquiredAt!));
  });

  it('without persistence, a crash between grants does not reissue a token either', async () => {
    const server = servers.none!;
    const leases = await leasesOn(server, 'a');
    const before = await leases.claimOrThrow(`job:crash:${kind}`);
    await server.kill();
    await server.restart();
    const after = await leases.claimOrThrow(`job:crash:${kind}`);
    expect(after.token > before.token).toBe(true);
  });

  it('with AOF, the record survives a clean restart and a crash: token, grant, checkpoint and fenced data', async () => {
    const server = servers.aof!;
    const leases = await leasesOn(server, 'a');
    const key = `job:durable:${kind}`;
    const lease = await leases.claimOrThrow(key, { runId: 'r1' });
    await leases.checkpointOrThrow(lease, { wave: 7 });
    await leases.fencedWriteOrThrow(lease, (tx) => tx.call('SET', `${hashTagOf(key)}:result`, 'kept'));

    await server.restart();
    expect(await leases.inspect(key)).toMatchObject({
      exists: true,
      token: lease.token,
      grant: { token: lease.token, runId: 'r1', live: true },
      checkpoint: { value: { wave: 7 }, token: lease.token },
    });
    expect(await leases.fencedWrite(lease, (tx) => tx.call('GET', `${hashTagOf(key)}:result`))).toMatchObject({ ok: true, value: 'kept' });

    await leases.revoke(key, { reason: 'before the crash' });
    await server.kill();
    await server.restart();
    expect(await leases.inspect(key)).toMatchObject({
      token: lease.token + 1n,
      grant: null,
      ending: { kind: 'revoked', token: lease.token },
    });
    const next = await leases.claimOrThrow(key);
    expect(next.token > lease.token + 1n).toBe(true);
    expect(next.inherited).toMatchObject({ value: { wave: 7 }, token: lease.token });
  });
});
