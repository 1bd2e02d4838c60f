/**
 * A fenced write's commands are checked before any runs. Commands of the client's table
 * (`known-commands.ts`) skip `COMMAND INFO` in the script: the table must agree with the server, and a
 * known name the server renamed, or that the user may not run (ACL), must still be refused with nothing
 * applied. On a server of its own (`rename-command INCR`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisStore, hashTagOf } from '../../src/adapters/redis/index.js';
import { fromIoredis, type IoredisClient, type RedisConnection } from '../../src/adapters/redis/connection.js';
import { KNOWN_COMMANDS, knownArity } from '../../src/adapters/redis/known-commands.js';
import { createLeases } from '../../src/leases.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { openClient } from './redis-harness.js';

let server: RedisServer | null = null;
const closers: (() => Promise<void>)[] = [];

async function connect(options: Record<string, unknown> = {}): Promise<RedisConnection> {
  const opened = await openClient('ioredis', (server as RedisServer).url, options);
  closers.push(opened.close);
  return fromIoredis(opened.client as IoredisClient);
}

beforeAll(async () => {
  server = await startRedis({ persistence: 'none', extraArgs: ['--rename-command', 'INCR', 'INCR_RENAMED'] });
});
afterAll(async () => {
  for (const close of closers) await close();
  await server?.stop();
});

describe("redis adapter: the checks of a fenced write's commands", () => {
  it('the table of known commands agrees with the server: same argument counts, none refused in scripts', async () => {
    const raw = await connect();
    const names = KNOWN_COMMANDS.filter((name) => name !== 'incr');
    const info = (await raw.send(['COMMAND', 'INFO', ...names])) as ([string, number, string[]] | null)[];
    expect(info.map((entry) => entry?.[0])).toEqual(names);
    expect(info.filter((entry) => entry?.[2].includes('noscript'))).toEqual([]);
    for (const [name, arity] of info as [string, number, string[]][]) {
      expect(knownArity(name, Math.abs(arity)), name).toBe(true);
      expect(knownArity(name.toUpperCase(), Math.abs(arity) - 1), name).toBe(false);
      if (arity > 0) expect(knownArity(name, arity + 1), name).toBe(false);
    }
  });

  it('a known command the server renamed, or one the ACL denies, is refused before any command runs: nothing applied, no checkpoint', async () => {
    const raw = await connect();
    const key = `checks:${Date.now()}`;
    const [first, counter] = [`${hashTagOf(key)}:first`, `${hashTagOf(key)}:n`];
    const owner = createLeases(createRedisStore({ client: raw }), { holder: 'a', ttlMs: 60_000 });
    const lease = await owner.claimOrThrow(key);
    // NOTE: INCR is in the table but renamed on this server.
    const renamed = owner.fencedWrite(
      lease,
      (tx) => {
        void tx.call('SET', first, 'applied?');
        void tx.call('INCR', counter);
      },
      { checkpoint: { step: 'renamed' } },
    );
    await expect(renamed).rejects.toMatchObject({
      name: 'RedisCommandError',
      commandIndex: 1,
      applied: 0,
      message: expect.stringMatching(/unknown command incr/),
    });
    expect(await raw.send(['EXISTS', first])).toBe(0);
    await raw.send(['ACL', 'SETUSER', 'no-hdel', 'on', '>secret-pw', '~*', '&*', '+@all', '-hdel']);
    const limited = createLeases(createRedisStore({ client: await connect({ username: 'no-hdel', password: 'secret-pw' }) }), {
      holder: 'a',
      ttlMs: 60_000,
    });
    const denied = limited.fencedWrite(
      limited.restore(lease.export()),
      (tx) => {
        void tx.call('SET', first, 'applied?');
        void tx.call('HDEL', counter, 'field');
      },
      { checkpoint: { step: 'denied' } },
    );
    await expect(denied).rejects.toMatchObject({
      name: 'RedisCommandError',
      commandIndex: 1,
      applied: 0,
      message: expect.stringMatching(/NOPERM/),
    });
    expect(await raw.send(['EXISTS', first])).toBe(0);
    expect((await owner.inspect(key)).checkpoint).toBeNull();
    // NOTE: the same two commands allowed: both apply.
    expect(
      await owner.fencedWriteOrThrow(lease, (tx) => {
        void tx.call('SET', first, 'applied');
        return tx.call('HDEL', counter, 'field');
      }),
    ).toBe(0);
    expect(await raw.send(['GET', first])).toBe('applied');
  });
});
