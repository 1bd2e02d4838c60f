/**
 * Regression found by the chaos harness (Redis, network scenario, a lost reply followed by a reset): with
 * ioredis' default `autoResendUnfulfilledCommands`, a release (or checkpoint) whose reply was lost is sent
 * again after the reconnect. The first delivery applied; when another grant came in between, the second
 * delivery is refused (`superseded` / `revoked`), and that refusal is what the caller gets: told "not
 * applied" for an operation that was applied. (Fenced writes and revokes are memoised per request and
 * report their first reply; these operations must be too, or report an unknown outcome.)
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { isLeaseError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { startFaultProxy, type FaultProxy } from './fault-proxy.js';

let own: RedisServer | null = null;
let url = '';
let proxy: FaultProxy;
const clients: Redis[] = [];

/** Waits for a condition on the server (read past the proxy), not for a duration. */
const untilServer = (condition: () => Promise<boolean>): Promise<boolean> => vi.waitUntil(condition, { timeout: 20_000, interval: 10 });

/** A cue the test gives when the lost-reply window may end. */
function cue(): { readonly given: Promise<void>; give(): void } {
  let give = (): void => undefined;
  const given = new Promise<void>((resolve) => {
    give = resolve;
  });
  return { given, give };
}

beforeAll(async () => {
  url = process.env['LEASEFENCE_REDIS_URL'] ?? '';
  if (url === '') {
    own = await startRedis({ persistence: 'aof' });
    url = own.url;
  }
  proxy = await startFaultProxy(Number(new URL(url).port));
});
afterAll(async () => {
  for (const client of clients) client.disconnect();
  await proxy.close();
  await own?.stop();
});

/** An ioredis client with its defaults (re-send after reconnect included), as most users run it. */
function client(target: string): Redis {
  const redis = new Redis(target, { retryStrategy: () => 20 });
  redis.on('error', () => undefined);
  clients.push(redis);
  return redis;
}

const viaProxy = (): string => {
  const parsed = new URL(url);
  parsed.port = String(proxy.port);
  return parsed.toString();
};

/** Runs every script once, so the server's script cache has them (a NOSCRIPT reply would be lost too). */
async function warmUp(leases: ReturnType<typeof createLeases>): Promise<void> {
  const lease = await leases.claimOrThrow(`redelivery:warm-up:${Date.now()}`);
  await leases.checkpoint(lease, { warm: true });
  await leases.release(lease);
}

/** Settles an operation to its outcome value, or to the error code it threw. */
const settle = <T>(promise: Promise<T>): Promise<T | { thrown: string }> =>
  promise.catch((error: unknown) => ({ thrown: isLeaseError(error) ? error.code : String(error) }));

describe('redis adapter: an operation re-sent after a lost reply', () => {
  it('a release that was applied is never reported as refused', async () => {
    const key = `redelivery:release:${Date.now()}`;
    const a = createLeases(createRedisStore({ client: client(viaProxy()) }), { holder: 'a', ttlMs: 10_000 });
    const b = createLeases(createRedisStore({ client: client(url) }), { holder: 'b', ttlMs: 10_000 });
    await warmUp(a);
    const lease = await a.claimOrThrow(key);
    const window = cue();
    // NOTE: the reset (and the re-send after it) waits until b holds the key, however slow the machine.
    const lost = proxy.loseRepliesThenReset(window.given);
    const releasing = settle(a.release(lease));
    await untilServer(async () => (await b.inspect(key)).grant === null);
    const next = await b.claim(key);
    expect(
      next,
      JSON.stringify(next, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)),
    ).toMatchObject({ ok: true }); // the release was applied: b got the key
    window.give();
    await lost;
    const outcome = await releasing;
    expect('ok' in outcome && outcome.ok === false ? `refused: ${outcome.reason}` : 'applied or unknown').toBe('applied or unknown');
  });

  it('a checkpoint that was stored is never reported as refused', async () => {
    const key = `redelivery:checkpoint:${Date.now()}`;
    const a = createLeases(createRedisStore({ client: client(viaProxy()) }), { holder: 'a', ttlMs: 10_000 });
    const operator = createLeases(createRedisStore({ client: client(url) }), { holder: 'operator' });
    await warmUp(a);
    const lease = await a.claimOrThrow(key);
    const window = cue();
    const lost = proxy.loseRepliesThenReset(window.given);
    const checkpointing = settle(a.checkpoint(lease, { step: 1 }));
    await untilServer(async () => (await operator.inspect(key)).checkpoint !== null);
    expect((await operator.revoke(key, { reason: 'test' })).ok).toBe(true);
    window.give();
    await lost;
    const outcome = await checkpointing;
    const stored = (await operator.inspect(key)).checkpoint;
    expect(stored?.value).toEqual({ step: 1 }); // the checkpoint was applied
    expect('ok' in outcome && outcome.ok === false ? `refused: ${outcome.reason}` : 'applied or unknown').toBe('applied or unknown');
  });
});
