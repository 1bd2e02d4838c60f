/**
 * The `leasefence` CLI end to end: a spawned process against the real Postgres and redis-server of the
 * test run, a tmux pseudo-terminal for the confirmation and for `watch`.
 */
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/adapters/postgres/index.js';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { freshTable, sharedPostgresUrl } from '../adapters/postgres-harness.js';
import { freshPrefix, sharedRedisUrl } from '../adapters/redis-harness.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { CLI_COMMAND, runCli, shellWord, startTerminal } from './cli-harness.js';

describe('leasefence CLI on Postgres', () => {
  let pool: pg.Pool;
  let url: string;
  const table = freshTable('cli');
  let leases: Leases;
  /** The tokens the setup's grants got (floored by the store clock: large, not 1). */
  const tokens = { ramp: 0n, job1: 0n, job2: 0n };
  beforeAll(async () => {
    url = await sharedPostgresUrl();
    pool = new pg.Pool({ connectionString: url, max: 2 });
    const store = createPostgresStore({ client: pool, table });
    await store.migrate();
    leases = createLeases(store, { holder: 'ramp-cron', ttlMs: 60_000 });
    tokens.ramp = (await leases.claimOrThrow('ramp:current', { runId: 'r5' })).token;
    const released = await leases.claimOrThrow('job:1');
    tokens.job1 = released.token;
    await leases.release(released, { checkpoint: { done: 3 } });
    tokens.job2 = (await leases.claimOrThrow('job:2', { ttlMs: null })).token;
  });
  afterAll(async () => pool.end());

  const cli = (...args: string[]) => runCli([...args, '--table', table], { env: { LEASEFENCE_STORE: url } });

  it('lists leases as an aligned table with relative times', async () => {
    const run = await cli('list');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^KEY +STATE +TOKEN +HOLDER +EXPIRES +CHECKPOINT +LAST ENDING$/);
    expect(lines.map((line) => line.split(/ {2,}/)[0])).toEqual(['KEY', 'job:1', 'job:2', 'ramp:current']);
    const ramp = lines.find((line) => line.startsWith('ramp:current')) ?? '';
    expect(ramp).toMatch(new RegExp(`live +${tokens.ramp} +held \\d+ s by ramp-cron, run r5 +expires in \\d+ s`));
    expect(lines.find((line) => line.startsWith('job:2'))).toMatch(/ never /);
    expect(lines.find((line) => line.startsWith('job:1'))).toMatch(
      new RegExp(`released .* released \\d+ s ago \\(token ${tokens.job1}, ramp-cron\\)`),
    );
    // Aligned: every column starts at the same offset on every line.
    const offsets = (line: string) => [...line.matchAll(/ {2}(?=\S)/g)].map((match) => (match.index ?? 0) + 2).slice(0, 2);
    expect(new Set(lines.map((line) => offsets(line).join(','))).size).toBe(1);
  });

  it('prints JSON with tokens as strings, and filters by state and key prefix', async () => {
    const run = await cli('list', '--json', '--state', 'live', '--key-prefix', 'job:');
    expect(run.code).toBe(0);
    const listed = JSON.parse(run.stdout) as Array<{ key: string; token: unknown; state: string }>;
    expect(listed.map(({ key, token, state }) => ({ key, token, state }))).toEqual([
      { key: 'job:2', token: tokens.job2.toString(), state: 'live' },
    ]);
  });

  it('inspects a key (exit 0) and reports a missing one (exit 3)', async () => {
    const run = await cli('inspect', 'job:1');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`checkpoint +token ${tokens.job1}, written \\d+ s ago`));
    expect(run.stdout).toContain('"done": 3');
    expect(run.stdout).not.toMatch(/secret/i);
    expect(run.stdout).toMatch(/^since +- *$/m);
    // A held key shows who leads since when: the holder, the term's token and the grant's start, absolute and relative.
    const held = await cli('inspect', 'ramp:current');
    const acquiredAt = (await leases.inspect('ramp:current')).grant?.acquiredAt as number;
    expect(held.stdout).toMatch(new RegExp(`^token +${tokens.ramp} *$`, 'm'));
    expect(held.stdout).toMatch(/^holder +held \d+ s by ramp-cron, run r5 *$/m);
    expect(held.stdout).toMatch(new RegExp(`^since +${new Date(acquiredAt).toISOString()} \\(\\d+ s ago\\) *$`, 'm'));
    const missing = await cli('inspect', 'no:such');
    expect(missing).toMatchObject({ code: 3, stdout: 'no lease no:such\n' });
  });

  it('revokes with --yes when stdin is not a terminal; a second revoke is refused (exit 4); --expected-token guards', async () => {
    const { token } = await leases.claimOrThrow('revoke:me', { runId: 'r9' });
    const stale = await cli('revoke', 'revoke:me', '--reason', 'stuck', '--yes', '--expected-token', String(token - 1n));
    expect(stale.code).toBe(4);
    expect(stale.stderr).toMatch(/superseded/);
    const run = await cli('revoke', 'revoke:me', '--reason', 'stuck', '--by', 'ops:alice', '--yes', '--expected-token', String(token));
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(
      new RegExp(`^revoked revoke:me: token ${token} \\(ramp-cron, run r9\\) is fenced; token is now ${token + 1n}`),
    );
    expect((await leases.inspect('revoke:me')).ending).toMatchObject({ kind: 'revoked', reason: 'stuck', by: 'ops:alice' });
    expect((await cli('revoke', 'revoke:me', '--reason', 'again', '--yes')).code).toBe(4);
    expect((await cli('revoke', 'never:claimed', '--reason', 'x', '--yes')).code).toBe(3);
  });

  it('refuses bad usage with exit 2 before connecting', async () => {
    expect((await runCli(['list'])).code).toBe(2);
    expect((await cli('revoke', 'job:2')).code).toBe(2);
    expect((await cli('list', '--state', 'held')).code).toBe(2);
    expect((await cli('frobnicate')).code).toBe(2);
    expect((await cli('list', '--bogus')).code).toBe(2);
    expect((await runCli(['list', '--store', 'mysql://x'])).code).toBe(2);
  });

  it('exits 5 with a clear message when the driver is not installed where it looks, or the store is down', async () => {
    const run = await runCli(['list', '--store', url, '--driver-path', tmpdir()], { cwd: tmpdir() });
    expect(run.code).toBe(5);
    expect(run.stderr).toMatch(/needs the pg package installed next to leasefence .*: npm install pg/);
    const down = await runCli(['list', '--store', 'postgres://127.0.0.1:1/none']);
    expect(down.code).toBe(5);
  });

  it('asks for confirmation on a terminal: "n" keeps the lease (exit 6), "y" revokes it', async () => {
    const { token } = await leases.claimOrThrow('tty:1', { runId: 'r1' });
    const command = [...CLI_COMMAND, 'revoke', 'tty:1', '--reason', 'from a terminal', '--store', url, '--table', table]
      .map(shellWord)
      .join(' ');
    const declined = await startTerminal(command);
    try {
      await declined.waitFor(
        new RegExp(`Revoke tty:1 \\(token ${token}, held by ramp-cron, run r1\\)\\? The holder is fenced at once\\. \\[y/N\\]`),
      );
      await declined.type('n', 'Enter');
      await declined.waitFor(/not revoked[\s\S]*\[exit 6\]/);
    } finally {
      await declined.close();
    }
    expect((await leases.inspect('tty:1')).grant?.live).toBe(true);
    const accepted = await startTerminal(command);
    try {
      await accepted.waitFor(/\[y\/N\]/);
      await accepted.type('y', 'Enter');
      await accepted.waitFor(new RegExp(`revoked tty:1: token ${token}[\\s\\S]*\\[exit 0\\]`));
    } finally {
      await accepted.close();
    }
    expect((await leases.inspect('tty:1')).ending?.kind).toBe('revoked');
  });
});

describe('leasefence CLI on Redis', () => {
  let client: Redis;
  let url: string;
  const prefix = freshPrefix('cli');
  let leases: Leases;
  beforeAll(async () => {
    url = await sharedRedisUrl();
    client = new Redis(url);
    leases = createLeases(createRedisStore({ client, prefix }), { holder: 'exporter', ttlMs: 30_000 });
    await leases.claimOrThrow('export:eu', { runId: 'r2' });
  });
  afterAll(async () => void client.disconnect());

  const cli = (...args: string[]) => runCli([...args, '--store', url, '--prefix', prefix]);

  it('lists, inspects and revokes', async () => {
    const list = await cli('list');
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/export:eu +live +\d+ +held \d+ s by exporter, run r2 +expires in \d+ s/);
    const revoke = await cli('revoke', 'export:eu', '--reason', 'drain', '--require-recovery', '--json', '--yes');
    expect(revoke.code).toBe(0);
    expect(JSON.parse(revoke.stdout)).toMatchObject({
      ok: true,
      key: 'export:eu',
      revoked: { kind: 'revoked', reason: 'drain', holder: 'exporter' },
    });
    expect(typeof JSON.parse(revoke.stdout).token).toBe('string');
    const inspect = await cli('inspect', 'export:eu');
    expect(inspect.stdout).toMatch(/last ending +revoked \d+ s ago by operator: drain/);
  });

  it('watch redraws as leases change', async () => {
    const command = [...CLI_COMMAND, 'watch', '--interval', '0.3', '--store', url, '--prefix', prefix, '--key-prefix', 'w:']
      .map(shellWord)
      .join(' ');
    const terminal = await startTerminal(command);
    try {
      await terminal.waitFor(/leasefence watch redis:\/\/[\s\S]*no leases/);
      const lease = await leases.claimOrThrow('w:1', { runId: 'r7' });
      const screen = await terminal.waitFor(/w:1 +live +\d+ +held \d+ s by exporter, run r7/);
      expect(screen).toMatch(/^KEY +STATE/m);
      await leases.release(lease);
      await terminal.waitFor(/w:1 +released .*released \d+ s ago/);
      await terminal.type('C-c');
      await terminal.waitFor(/\[exit 0\]/);
    } finally {
      await terminal.close();
    }
  });
});

describe('leasefence watch when its server goes away', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis({ persistence: 'none' });
  });
  afterAll(async () => server.stop());

  it('reconnects once the server is back, and exits with the state of its last frame (0 here, 5 while down)', async () => {
    const [command, ...args] = CLI_COMMAND as [string, ...string[]];
    const child = spawn(command, [...args, 'watch', '--json', '--interval', '0.2', '--store', server.url], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const lines: string[] = [];
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const complete = pending.split('\n');
      pending = complete.pop() ?? '';
      lines.push(...complete);
    });
    /** Waits for a frame after the `after`-th that matches `pattern`; returns its index. */
    const frameAfter = async (after: number, pattern: RegExp): Promise<number> => {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const index = lines.findIndex((line, at) => at > after && pattern.test(line));
        if (index >= 0) return index;
        if (Date.now() > deadline) throw new Error(`no frame matching ${pattern} after frame ${after}; frames:\n${lines.join('\n')}`);
        await new Promise((wait) => setTimeout(wait, 50));
      }
    };
    try {
      const first = await frameAfter(-1, /^\{"at":/);
      await server.kill();
      const failed = await frameAfter(first, /^refresh failed: /);
      await server.restart();
      await frameAfter(failed, /^\{"at":\d+,"leases":\[\]\}$/);
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
    await server.kill();
    const down = await runCli(['watch', '--json', '--iterations', '2', '--interval', '0.1', '--store', server.url]);
    expect(down.stdout).toMatch(/^refresh failed: /m);
    expect(down.code).toBe(5);
  });
});
