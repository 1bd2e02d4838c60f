/**
 * Redis failures as the user sees them: every error reply (OOM, READONLY, BUSY, MISCONF, NOSCRIPT then
 * refused), connection loss and timeouts become typed leasefence errors whose message, `cause` chain,
 * `util.inspect` and `JSON.stringify` never contain the lease secret (ioredis' ReplyError carries the
 * command's arguments); a Redis Cluster CROSSSLOT becomes a typed error that names `hashTagOf`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import type { Lease } from '../../src/lease.js';
import { isLeaseError, isStoreFailure } from '../../src/errors.js';
import {
  createRedisStore,
  createRedisTokenGate,
  hashTagOf,
  RedisCrossSlotError,
  type RedisClient,
} from '../../src/adapters/redis/index.js';
import { toConnection, type RedisConnection } from '../../src/adapters/redis/connection.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { freePort } from '../support/provision.js';
import { freshPrefix, openClient, type RedisClientKind, type RedisStore } from './redis-harness.js';

/** Every text a logger could print of `error`. */
function loggedForms(error: unknown): string[] {
  const forms = [String(error), inspect(error, { depth: 20, showHidden: true }), JSON.stringify(error) ?? ''];
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause)
    forms.push(cause.message, String(cause.stack), JSON.stringify(cause) ?? '');
  return forms;
}

/** Asserts that `error` is a leasefence error and that no logged form of it contains `secret` (or anything secret-like). */
function expectLogSafe(error: unknown, secret: string): void {
  expect(isLeaseError(error) || (error instanceof Error && error.name === 'RedisReplyError')).toBe(true);
  for (const form of loggedForms(error)) {
    expect(form).not.toContain(secret);
    expect(/[0-9a-f]{32}/.exec(form)?.[0] ?? null).toBeNull();
  }
}

/** The error `promise` rejects with (fails when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(['ioredis', 'ioredis6', 'node-redis'] as const)('redis failures are typed and log-safe (%s)', (kind: RedisClientKind) => {
  let server: RedisServer;
  let admin: Redis;
  let client: RedisClient;
  let close: () => Promise<void>;
  let leases: Leases<RedisStore>;
  let keys = 0;

  beforeAll(async () => {
    server = await startRedis({ persistence: 'none' });
    admin = new Redis(server.url);
    ({ client, close } = await openClient(kind, server.url));
    leases = createLeases(createRedisStore({ client, prefix: freshPrefix('errors') }), { holder: 'a', ttlMs: 60_000 });
  });
  afterAll(async () => {
    await close();
    admin.disconnect();
    await server.stop();
  });

  /** Every fenced operation of a fresh lease, run while the server is in a failure state set up by `breakIt`. */
  async function underFailure(breakIt: () => Promise<void>, repair: () => Promise<void>, expectStoreFailure = true): Promise<void> {
    const key = `failing:${++keys}`;
    const lease: Lease = await leases.claimOrThrow(key);
    const { secret } = lease.fence();
    await breakIt();
    try {
      const errors = [
        await rejection(leases.renew(lease)),
        await rejection(leases.checkpoint(lease, { step: 1 })),
        await rejection(leases.fencedWrite(lease, (tx) => tx.call('SET', `${hashTagOf(key)}:out`, 'x'))),
        await rejection(leases.release(lease)),
        await rejection(leases.claim(`${key}:other`)),
      ];
      for (const error of errors) {
        expectLogSafe(error, secret);
        if (expectStoreFailure) expect(isStoreFailure(error)).toBe(true);
      }
    } finally {
      await repair();
    }
    expect(await leases.renew(lease)).toMatchObject({ ok: true });
  }

  it('OOM (maxmemory exceeded) is StoreUnavailableError, without the secret', async () => {
    await underFailure(
      async () => void (await admin.config('SET', 'maxmemory', '1')),
      async () => void (await admin.config('SET', 'maxmemory', '0')),
    );
  });

  it('OOM after SCRIPT FLUSH (NOSCRIPT, then EVAL refused) is StoreUnavailableError, without the secret', async () => {
    await underFailure(
      async () => {
        await admin.script('FLUSH');
        await admin.config('SET', 'maxmemory', '1');
      },
      async () => void (await admin.config('SET', 'maxmemory', '0')),
    );
  });

  it('READONLY (the server became a replica) is StoreUnavailableError, without the secret', async () => {
    const nobody = await freePort();
    await underFailure(
      async () => void (await admin.call('REPLICAOF', '127.0.0.1', String(nobody))),
      async () => void (await admin.call('REPLICAOF', 'NO', 'ONE')),
    );
  });

  it('BUSY (another script runs past busy-reply-threshold) is StoreUnavailableError, without the secret', async () => {
    const busy = new Redis(server.url);
    busy.on('error', () => undefined);
    let looping: Promise<unknown> = Promise.resolve();
    await underFailure(
      async () => {
        await admin.config('SET', 'busy-reply-threshold', '50');
        looping = busy.eval('while true do end', 0).catch(() => undefined);
        await sleep(150);
      },
      async () => {
        await admin.script('KILL');
        await looping;
        busy.disconnect();
        await admin.config('SET', 'busy-reply-threshold', '5000');
      },
    );
  });
});

describe('connection loss, timeouts and client errors carrying the command are log-safe', () => {
  let server: RedisServer;
  let admin: Redis;
  beforeAll(async () => {
    server = await startRedis({ persistence: 'none' });
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    admin.disconnect();
    await server.stop();
  });

  it('MISCONF and any ioredis ReplyError: its command.args (the secret) never reach the error', async () => {
    const real = new Redis(server.url);
    let failNext = false;
    // NOTE: an ioredis-shaped client whose reply errors carry the command, as ioredis' ReplyError does.
    const fake = {
      get status() {
        return real.status;
      },
      connect: () => real.connect(),
      once: (event: string, listener: () => void) => real.once(event, listener),
      removeListener: (event: string, listener: () => void) => real.removeListener(event, listener),
      call: async (command: string, ...args: string[]) => {
        if (!failNext) return real.call(command, ...args);
        const error = Object.assign(
          new Error('MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk.'),
          {
            name: 'ReplyError',
            command: { name: command, args },
          },
        );
        throw error;
      },
    };
    const leases = createLeases(createRedisStore({ client: fake, prefix: freshPrefix('misconf') }), { holder: 'a', ttlMs: 60_000 });
    const lease = await leases.claimOrThrow('misconf');
    failNext = true;
    const error = await rejection(leases.renew(lease));
    expect(isStoreFailure(error)).toBe(true);
    expectLogSafe(error, lease.fence().secret);
    real.disconnect();
  });

  it('a command timeout and a killed connection are OutcomeUnknownError, without the secret', async () => {
    // NOTE: leases are claimed through a patient client; only the operation under test uses the fragile one.
    const prefix = freshPrefix('lost');
    const patient = createLeases(createRedisStore({ client: admin, prefix }), { holder: 'a', ttlMs: 60_000 });
    const fragileClient = new Redis(server.url, { commandTimeout: 200, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 });
    fragileClient.on('error', () => undefined);
    await fragileClient.call('CLIENT', 'SETNAME', 'victim');
    const fragile = createLeases(createRedisStore({ client: fragileClient, prefix }), { holder: 'a', ttlMs: 60_000 });
    const lease = await patient.claimOrThrow('timed-out');
    await fragile.inspect('timed-out');
    await admin.call('CLIENT', 'PAUSE', '2000', 'WRITE');
    const timedOut = await rejection(fragile.renew(lease));
    await admin.call('CLIENT', 'UNPAUSE');
    expect(timedOut).toMatchObject({ code: 'OUTCOME_UNKNOWN' });
    expectLogSafe(timedOut, lease.fence().secret);
    fragileClient.disconnect();

    const victimClient = new Redis(server.url, { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 });
    victimClient.on('error', () => undefined);
    const victimLeases = createLeases(createRedisStore({ client: victimClient, prefix }), { holder: 'a', ttlMs: 60_000 });
    const victim = await patient.claimOrThrow('killed');
    await victimLeases.inspect('killed');
    await admin.call('CLIENT', 'PAUSE', '2000', 'WRITE');
    const pending = rejection(victimLeases.renew(victim));
    await sleep(100);
    await admin.call('CLIENT', 'KILL', 'USER', 'default', 'SKIPME', 'yes');
    const killed = await pending;
    await admin.call('CLIENT', 'UNPAUSE');
    expect(killed).toMatchObject({ code: 'OUTCOME_UNKNOWN' });
    expectLogSafe(killed, victim.fence().secret);
    victimClient.disconnect();
  });
});

describe('Redis Cluster: CROSSSLOT', () => {
  let dir: string;
  let child: ChildProcess;
  let url: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'leasefence-redis-cluster-'));
    const port = await freePort();
    url = `redis://127.0.0.1:${port}`;
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, 'nodes.conf'),
      ],
      {
        stdio: 'ignore',
      },
    );
    const admin = new Redis(url, { retryStrategy: () => 50 });
    admin.on('error', () => undefined);
    await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
    while (!String(await admin.call('CLUSTER', 'INFO')).includes('cluster_state:ok')) await sleep(50);
    admin.disconnect();
  });
  afterAll(() => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(['ioredis', 'ioredis6', 'node-redis'] as const)(
    'a fenced write to a key outside the lease slot is a RedisCrossSlotError naming hashTagOf; nothing applied (%s)',
    async (kind) => {
      const { client, close } = await openClient(kind, url);
      const raw: RedisConnection = toConnection(client);
      const leases = createLeases(createRedisStore({ client }), { holder: 'a', ttlMs: 60_000 });
      const lease = await leases.claimOrThrow(`job:${kind}`);
      expect(await leases.fencedWrite(lease, (tx) => tx.call('SET', `${hashTagOf(lease.key)}:ok`, 'same slot'))).toMatchObject({
        ok: true,
        value: 'OK',
      });
      const error = await rejection(
        leases.fencedWrite(lease, (tx) => {
          void tx.call('SET', `${hashTagOf(lease.key)}:first`, 'x');
          return tx.call('SET', `elsewhere:${kind}`, 'x');
        }),
      );
      expect(error).toBeInstanceOf(RedisCrossSlotError);
      expect(isLeaseError(error, 'INVALID_ARGUMENT')).toBe(true);
      expect((error as Error).message).toContain('hashTagOf');
      expectLogSafe(error, lease.fence().secret);
      expect(await raw.send(['EXISTS', `${hashTagOf(lease.key)}:first`])).toBe(0);
      // A gate checks the lease record in its script: its resource must share the lease's slot.
      const gate = createRedisTokenGate({ client });
      expect(await gate.write(`${hashTagOf(lease.key)}:report`, lease.fence(), () => 'same slot')).toMatchObject({
        ok: true,
        value: 'same slot',
      });
      const gateError = await rejection(gate.write(`report:${kind}`, lease.fence(), () => 'other slot'));
      expect(gateError).toBeInstanceOf(RedisCrossSlotError);
      expectLogSafe(gateError, lease.fence().secret);
      await close();
    },
  );
});
