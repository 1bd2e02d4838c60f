/**
 * The CLI's destructive commands act only on what the operator confirmed (issue 29 item 7), against the
 * test run's real PostgreSQL and redis-server, the CLI in-process with a stdin the test types into:
 * - stdin that is not a terminal cannot confirm: `revoke` and `gate reset` then need `--yes` (exit 2 without);
 * - a key that changes hands between the question and the `y` is not revoked: the revoke carries the
 *   confirmed token as `expectedToken` and is refused (exit 4), the new holder keeps its grant;
 * - a gate whose record changes between the question and the `y` is not reset (exit 4), also when the newer
 *   write is still in flight as the answer arrives (PostgreSQL, real concurrency): the reset carries the token
 *   and key it showed as its expectation, judged in the statement that deletes.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, createPostgresTokenGate } from '../../src/adapters/postgres/index.js';
import { createRedisStore, createRedisTokenGate } from '../../src/adapters/redis/index.js';
import type { TokenGate } from '../../src/gate.js';
import { createLeases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';
import { freshTable, sharedPostgresUrl } from '../adapters/postgres-harness.js';
import { freshPrefix, sharedRedisUrl } from '../adapters/redis-harness.js';
import { startInProcess } from './cli-harness.js';

interface Backend {
  readonly store: Store;
  readonly gate: TokenGate<unknown>;
  /** The CLI's options that name this store. */
  readonly args: readonly string[];
  close(): Promise<void>;
}

const backends: Record<string, () => Promise<Backend>> = {
  postgres: async () => {
    const url = await sharedPostgresUrl();
    const pool = new pg.Pool({ connectionString: url, max: 3 });
    const table = freshTable('cli_confirm');
    const gateTable = freshTable('cli_confirm_gate');
    const store = createPostgresStore({ client: pool, table });
    const gate = createPostgresTokenGate({ client: pool, table: gateTable, leaseTable: table });
    await store.migrate();
    await gate.migrate();
    return {
      store,
      gate: gate as TokenGate<unknown>,
      args: ['--store', url, '--table', table, '--gate-table', gateTable],
      close: () => pool.end(),
    };
  },
  redis: async () => {
    const url = await sharedRedisUrl();
    const client = new Redis(url);
    const prefix = freshPrefix('cli-confirm');
    return {
      store: createRedisStore({ client, prefix }),
      gate: createRedisTokenGate({ client, prefix }) as TokenGate<unknown>,
      args: ['--store', url, '--prefix', prefix],
      close: async () => void client.disconnect(),
    };
  },
};

describe('a confirmation that cannot be asked', () => {
  it('is bad usage before anything is sent: exit 2 even for a store that cannot be reached', async () => {
    for (const args of [
      ['revoke', 'k', '--reason', 'r'],
      ['gate', 'reset', 'r'],
    ]) {
      const run = startInProcess([...args, '--store', 'redis://127.0.0.1:1'], { tty: false });
      run.answer('y\n');
      expect(await run.exited).toBe(2);
      expect(run.printed.stderr).toMatch(/stdin is not a terminal: pass --yes/);
    }
  });
});

describe.each(Object.keys(backends))('the CLI confirms before it acts (%s)', (name) => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await (backends[name] as () => Promise<Backend>)();
  });
  afterAll(async () => backend.close());

  const workerA = () => createLeases(backend.store, { holder: 'worker-A', ttlMs: 60_000 });
  const workerB = () => createLeases(backend.store, { holder: 'worker-B', ttlMs: 60_000 });

  it('revoke with stdin not a terminal needs --yes: a piped "n" (or "y") revokes nothing (exit 2)', async () => {
    const lease = await workerA().claimOrThrow('piped:1');
    for (const answer of ['n\n', 'y\n', '']) {
      const run = startInProcess(['revoke', 'piped:1', '--reason', 'piped', ...backend.args], { tty: false });
      run.answer(answer);
      expect(await run.exited).toBe(2);
      expect(run.printed.stderr).toMatch(/^leasefence: revoke asks for confirmation and stdin is not a terminal: pass --yes/);
      expect((await workerA().inspect('piped:1')).grant?.token).toBe(lease.token);
    }
    const run = startInProcess(['revoke', 'piped:1', '--reason', 'piped', '--yes', ...backend.args], { tty: false });
    run.answer('');
    expect(await run.exited).toBe(0);
    expect((await workerA().inspect('piped:1')).ending).toMatchObject({ kind: 'revoked', token: lease.token });
  });

  it('a key that changed hands between the question and "y" is not revoked (exit 4): the new holder keeps its grant', async () => {
    const first = await workerA().claimOrThrow('moved:1');
    const run = startInProcess(['revoke', 'moved:1', '--reason', 'stuck', ...backend.args]);
    await run.waitForStderr(new RegExp(`Revoke moved:1 \\(token ${first.token}, held by worker-A\\)\\?`));
    await workerA().release(first);
    const second = await workerB().claimOrThrow('moved:1');
    run.answer('y\n');
    expect(await run.exited).toBe(4);
    expect(run.printed.stderr).toMatch(/not revoked: moved:1 is superseded/);
    const now = await workerB().inspect('moved:1');
    expect(now.grant).toMatchObject({ token: second.token, holder: 'worker-B', live: true });
    // The same revoke confirmed on the new holder's grant goes through.
    const again = startInProcess(['revoke', 'moved:1', '--reason', 'stuck', ...backend.args]);
    await again.waitForStderr(new RegExp(`token ${second.token}, held by worker-B`));
    again.answer('y\n');
    expect(await again.exited).toBe(0);
    expect((await workerB().inspect('moved:1')).ending).toMatchObject({ kind: 'revoked', token: second.token });
  });

  it('gate reset with stdin not a terminal needs --yes (exit 2); a gate that moved on since the question is not reset (exit 4)', async () => {
    const leases = workerA();
    const lease = await leases.claimOrThrow('gated:1');
    await leases.gateWriteOrThrow(backend.gate, 'report:1', lease, () => undefined);
    const piped = startInProcess(['gate', 'reset', 'report:1', ...backend.args], { tty: false });
    piped.answer('y\n');
    expect(await piped.exited).toBe(2);
    expect(piped.printed.stderr).toMatch(/gate reset asks for confirmation and stdin is not a terminal: pass --yes/);
    expect((await backend.gate.inspect('report:1')).found?.token).toBe(lease.token);

    const run = startInProcess(['gate', 'reset', 'report:1', ...backend.args]);
    await run.waitForStderr(new RegExp(`Forget the highest token of report:1 \\(token ${lease.token} of lease gated:1\\)\\?`));
    await leases.release(lease);
    const next = await workerB().claimOrThrow('gated:1');
    await workerB().gateWriteOrThrow(backend.gate, 'report:1', next, () => undefined);
    run.answer('y\n');
    expect(await run.exited).toBe(4);
    expect(run.printed.stderr).toMatch(
      new RegExp(`not reset: report:1 changed since the question \\(it now holds token ${next.token} of lease gated:1\\)`),
    );
    expect((await backend.gate.inspect('report:1')).found?.token).toBe(next.token);

    const yes = startInProcess(['gate', 'reset', 'report:1', '--yes', ...backend.args], { tty: false });
    yes.answer('');
    expect(await yes.exited).toBe(0);
    expect((await backend.gate.inspect('report:1')).found).toBeNull();
  });
});

/** Waits until a statement on `table` waits for a row lock (pg_stat_activity), or throws after `timeoutMs`. */
async function lockWaitOn(pool: pg.Pool, table: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await pool.query<{ waiting: number }>(
      `SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
      [`%${table}%`],
    );
    if ((rows[0]?.waiting ?? 0) > 0) return;
    if (Date.now() > deadline) throw new Error(`no statement on ${table} waited for a lock within ${timeoutMs} ms`);
    await new Promise((wait) => setTimeout(wait, 20));
  }
}

describe('gate reset on PostgreSQL, a newer gate write in flight when the operator answers', () => {
  it('the reset waits for the write, finds it and is refused (exit 4): the newer token is kept, never forgotten unseen', async () => {
    const url = await sharedPostgresUrl();
    const pool = new pg.Pool({ connectionString: url, max: 3 });
    try {
      const table = freshTable('cli_race');
      const gateTable = freshTable('cli_race_gate');
      const store = createPostgresStore({ client: pool, table });
      const gate = createPostgresTokenGate({ client: pool, table: gateTable, leaseTable: table });
      await store.migrate();
      await gate.migrate();
      const workerA = createLeases(store, { holder: 'worker-A', ttlMs: 60_000 });
      const workerB = createLeases(store, { holder: 'worker-B', ttlMs: 60_000 });
      const first = await workerA.claimOrThrow('raced:1');
      await workerA.gateWriteOrThrow(gate, 'report:race', first, () => undefined);

      const run = startInProcess(['gate', 'reset', 'report:race', '--store', url, '--table', table, '--gate-table', gateTable]);
      await run.waitForStderr(new RegExp(`Forget the highest token of report:race \\(token ${first.token} of lease raced:1\\)\\?`));
      await workerA.release(first);
      const second = await workerB.claimOrThrow('raced:1');
      // NOTE: worker-B's gate write holds the gate row in its open transaction while the operator answers, and
      // commits only once the CLI's statement waits for that row: whatever the CLI read before is token 1's row.
      await workerB.gateWriteOrThrow(gate, 'report:race', second, async () => {
        run.answer('y\n');
        await lockWaitOn(pool, gateTable);
      });
      expect(await run.exited).toBe(4);
      expect(run.printed.stderr).toMatch(
        new RegExp(`not reset: report:race changed since the question \\(it now holds token ${second.token} of lease raced:1\\)`),
      );
      expect(run.printed.stdout).toBe('');
      expect(await gate.inspect('report:race')).toEqual({ resource: 'report:race', found: { key: 'raced:1', token: second.token } });

      // A script states its expectation with --expected-token (and --yes): a stale one is refused, the current one resets.
      const args = ['--store', url, '--table', table, '--gate-table', gateTable];
      const stale = startInProcess(['gate', 'reset', 'report:race', '--yes', '--expected-token', String(first.token), '--json', ...args], {
        tty: false,
      });
      stale.answer('');
      expect(await stale.exited).toBe(4);
      expect(JSON.parse(stale.printed.stdout)).toEqual({
        ok: false,
        reason: 'superseded',
        resource: 'report:race',
        expected: { key: null, token: String(first.token) },
        found: { key: 'raced:1', token: String(second.token) },
      });
      const current = startInProcess(['gate', 'reset', 'report:race', '--yes', '--expected-token', String(second.token), ...args], {
        tty: false,
      });
      current.answer('');
      expect(await current.exited).toBe(0);
      expect(current.printed.stdout).toBe(`gate report:race: forgot token ${second.token} of lease raced:1\n`);
      // Nothing recorded: nothing to confirm, and nothing is sent that could forget a write the operator never saw.
      const empty = startInProcess(['gate', 'reset', 'report:race', ...args]);
      expect(await empty.exited).toBe(0);
      expect(empty.printed).toEqual({ stdout: 'gate report:race: nothing to forget\n', stderr: '' });
    } finally {
      await pool.end();
    }
  });
});
