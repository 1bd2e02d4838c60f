/**
 * Keys print injectively and are typed the way they print (issue 29 item 9), against the test run's real
 * redis-server, the CLI in-process: a key with a real newline and a key with a backslash and an `n` print
 * differently, and pasting each printed form acts on that key only; the CLI's own messages quote caller
 * text escaped once; a key that starts with `-` is named after `--`.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { freshPrefix, sharedRedisUrl } from '../adapters/redis-harness.js';
import { startInProcess } from './cli-harness.js';

const NEWLINE_KEY = 'twin\nkey';
const BACKSLASH_KEY = 'twin\\nkey';

describe('keys printed and typed injectively', () => {
  let client: Redis;
  let url: string;
  let store: ReturnType<typeof createRedisStore>;
  const prefix = freshPrefix('cli-printable-input');
  const holder = (name: string): Leases => createLeases(store, { holder: name, ttlMs: 60_000 });
  beforeAll(async () => {
    url = await sharedRedisUrl();
    client = new Redis(url);
    store = createRedisStore({ client, prefix });
    await holder('with-newline').claimOrThrow(NEWLINE_KEY);
    await holder('with-backslash').claimOrThrow(BACKSLASH_KEY);
    await holder('dash').claimOrThrow('-odd:key');
  });
  afterAll(async () => void client.disconnect());

  async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const run = startInProcess(['--store', url, '--prefix', prefix, ...args], { tty: false });
    run.answer('');
    const code = await run.exited;
    return { code, ...run.printed };
  }

  it('list prints the twins differently; each printed form inspects its own key', async () => {
    const list = await cli('list', '--key-prefix', 'twin');
    expect(list.code).toBe(0);
    const keys = list.stdout
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((line) => line.split('  ')[0]);
    expect(keys.sort()).toEqual(['twin\\\\nkey', 'twin\\nkey']);
    for (const [printed, owner] of [
      ['twin\\nkey', 'with-newline'],
      ['twin\\\\nkey', 'with-backslash'],
    ] as const) {
      const inspect = await cli('inspect', printed, '--json');
      expect(inspect.code).toBe(0);
      expect(JSON.parse(inspect.stdout)).toMatchObject({ grant: { holder: owner } });
    }
  });

  it('revoking the printed form of one twin leaves the other held', async () => {
    const revoke = await cli('revoke', 'twin\\\\nkey', '--reason', 'pasted', '--yes');
    expect(revoke.code).toBe(0);
    expect(revoke.stdout).toMatch(/^revoked twin\\\\nkey: token \d+ \(with-backslash\)/);
    expect((await holder('x').inspect(BACKSLASH_KEY)).ending?.kind).toBe('revoked');
    expect((await holder('x').inspect(NEWLINE_KEY)).grant?.live).toBe(true);
  });

  it('an escape the CLI never prints is refused (exit 2); messages quote caller text escaped once', async () => {
    const bad = await cli('inspect', 'twin\\qkey');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      'leasefence: the key to inspect "twin\\\\qkey" has an invalid escape: type keys as the CLI prints them (a backslash itself twice; a control character as n, r, t or uXXXX after one)\n',
    );
    const unknown = await cli('frob\nx');
    expect(unknown.stderr.split('\n')[0]).toBe('leasefence: unknown command "frob\\nx"');
    const state = await cli('list', '--state', 'live\nx');
    expect(state.stderr).toBe(
      'leasefence: --state must be one of live, expired, released, revoked, recovery-required, held-back, got "live\\nx"\n',
    );
  });

  it('a key that starts with - is named after --', async () => {
    const inspect = await cli('inspect', '--json', '--', '-odd:key');
    expect(inspect.code).toBe(0);
    expect(JSON.parse(inspect.stdout)).toMatchObject({ key: '-odd:key', grant: { holder: 'dash' } });
    const usage = await cli('--help');
    expect(usage.stdout).toContain('A key that starts with - goes after --');
  });
});
