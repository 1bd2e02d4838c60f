/**
 * A `subscriber` factory's connection is the store's: closed once nobody waits (so a program that waited
 * exits by itself when it closes its own client), made again by the factory at the next wait. A
 * subscriber passed as a connection is the caller's: never closed by the store.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { createLeases } from '../../src/leases.js';
import { createRedisStore, type RedisSubscriber } from '../../src/adapters/redis/index.js';
import { toConnection } from '../../src/adapters/redis/connection.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { freedChannelOf } from '../../src/adapters/redis/freed-channel.js';
import { wakeCounter } from '../waiting-stores/freed-specs.js';
import { freshPrefix, openClient, sharedRedisUrl } from './redis-harness.js';

const PROGRAM = fileURLToPath(new URL('./redis-subscriber-program.ts', import.meta.url));
/** Far above the program's run (about 1 s under tsx on a loaded machine); a hang is killed then. */
const EXIT_WITHIN_MS = 25_000;

/** Runs the program; resolves with its exit code (null when it was killed for not exiting) and its output. */
function runProgram(kind: 'ioredis' | 'node-redis', url: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', PROGRAM, kind, url, freshPrefix('exit')],
      { timeout: EXIT_WITHIN_MS, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
      },
    );
  });
}

/** Whether a client's connection is open (ioredis `status`, node-redis `isOpen`). */
const isOpen = (client: RedisSubscriber): boolean => ('isOpen' in client ? client.isOpen : client.status !== 'end');

describe.each(['ioredis', 'node-redis'] as const)('redis subscriber factory (%s)', (kind) => {
  const closers: Array<() => Promise<void>> = [];
  let url = '';
  beforeAll(async () => {
    url = await sharedRedisUrl();
  });
  afterAll(async () => {
    await Promise.all(closers.map((close) => close()));
  });

  it('a program that waited with a subscriber factory exits by itself once it closes its own client', {
    timeout: EXIT_WITHIN_MS + 5_000,
  }, async () => {
    const run = await runProgram(kind, url);
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe('granted to worker-2 subscribers made: 1');
    expect(run.code).toBe(0);
  });

  it('closes the connection it made once nobody waits, makes a new one at the next wait, and never closes a given one', async () => {
    const main = await openClient(kind, url);
    closers.push(main.close);
    const made: RedisSubscriber[] = [];
    const factory = async (): Promise<RedisSubscriber> => {
      const connection =
        kind === 'node-redis'
          ? await createClient({ url })
              .on('error', () => undefined)
              .connect()
          : new Redis(url).on('error', () => undefined);
      made.push(connection as RedisSubscriber);
      closers.push(async () => void ('isOpen' in connection ? connection.isOpen && connection.destroy() : connection.disconnect()));
      return connection as RedisSubscriber;
    };
    const prefix = freshPrefix('factory');
    const store = createRedisStore({ client: main.client, prefix, subscriber: factory });
    const leases = createLeases(store, { holder: 'a', ttlMs: 60_000 });
    for (const round of [1, 2]) {
      const wakes = wakeCounter();
      const [end, other] = await Promise.all([store.watchFreed!('job:a', wakes.onFreed), store.watchFreed!('job:b', () => undefined)]);
      expect(made).toHaveLength(round);
      const lease = await leases.claimOrThrow('job:a');
      const woken = wakes.next();
      await leases.release(lease);
      await woken;
      end();
      expect(isOpen(made[round - 1]!)).toBe(true);
      other();
      await vi.waitFor(() => expect(isOpen(made[round - 1]!)).toBe(false), { timeout: 5_000, interval: 10 });
    }

    const given = (
      kind === 'node-redis'
        ? await createClient({ url })
            .on('error', () => undefined)
            .connect()
        : new Redis(url).on('error', () => undefined)
    ) as RedisSubscriber;
    closers.push(
      async () =>
        void ('isOpen' in given
          ? given.isOpen && (await (given as unknown as { close(): Promise<void> }).close())
          : (given as unknown as Redis).disconnect()),
    );
    const ownStore = createRedisStore({ client: main.client, prefix, subscriber: given });
    const raw = toConnection(main.client);
    const channel = freedChannelOf(keyNames(prefix).record('job:c', 'lease'));
    const end = await ownStore.watchFreed!('job:c', () => undefined);
    end();
    // NOTE: once the server has dropped the subscription, the store is done with the connection.
    await vi.waitFor(async () => expect(await raw.send(['PUBSUB', 'SHARDNUMSUB', channel])).toEqual([channel, 0]), {
      timeout: 5_000,
      interval: 10,
    });
    expect(isOpen(given)).toBe(true);
    const wakes = wakeCounter();
    const again = await ownStore.watchFreed!('job:c', wakes.onFreed);
    const lease = await leases.claimOrThrow('job:c');
    const woken = wakes.next();
    await leases.release(lease);
    await woken;
    again();
  });
});
