/**
 * `--store sqlite:/path/file.db` (issue 29 item 11): the CLI lists, inspects, revokes and watches leases in
 * a SQLite database file and inspects and resets its token gates, with better-sqlite3 loaded from its own
 * install. A path with no database is refused (exit 3) without creating a file.
 */
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqliteStore, createSqliteTokenGate } from '../../src/adapters/sqlite/index.js';
import { createLeases } from '../../src/leases.js';
import { freshDatabasePath } from '../adapters/sqlite-harness.js';
import { runCli, startInProcess } from './cli-harness.js';

describe('the CLI on a SQLite store', () => {
  const file = freshDatabasePath('leasefence-cli-sqlite');
  let database: Database.Database;
  let token = 0n;
  beforeAll(async () => {
    database = new Database(file.path);
    const store = createSqliteStore({ client: database });
    await store.migrate();
    const gate = createSqliteTokenGate({ store });
    await gate.migrate();
    const leases = createLeases(store, { holder: 'nightly', ttlMs: 60_000 });
    const lease = await leases.claimOrThrow('report:daily', { runId: 'r1' });
    token = lease.token;
    await leases.checkpointOrThrow(lease, { page: 7 });
    await leases.gateWriteOrThrow(gate, 'reports', lease, () => undefined);
  });
  afterAll(() => {
    database.close();
    file.remove();
  });

  async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const run = startInProcess([...args, '--store', `sqlite:${file.path}`], { tty: false });
    run.answer('');
    const code = await run.exited;
    return { code, ...run.printed };
  }

  it('lists, inspects, inspects the gate, watches', async () => {
    const list = await cli('list');
    expect(list).toMatchObject({ code: 0, stderr: '' });
    expect(list.stdout).toMatch(
      new RegExp(`report:daily +live +${token} +held \\d+ s by nightly, run r1 +expires in \\d+ s +token ${token}, \\d+ s ago`),
    );
    const inspect = await cli('inspect', 'report:daily');
    expect(inspect.code).toBe(0);
    expect(inspect.stdout).toContain('"page": 7');
    const gate = await cli('gate', 'inspect', 'reports');
    expect(gate).toMatchObject({ code: 0, stdout: `gate reports: holds token ${token} of lease report:daily\n` });
    const watch = await cli('watch', '--iterations', '1');
    expect(watch.code).toBe(0);
    expect(watch.stdout).toMatch(new RegExp(`^leasefence watch sqlite:${file.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}  `));
  });

  it('revokes (with --yes) and resets the gate, from a separate process too', async () => {
    const run = await runCli(['revoke', 'report:daily', '--reason', 'stuck', '--yes', '--store', `sqlite:${file.path}`]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(new RegExp(`^revoked report:daily: token ${token} \\(nightly, run r1\\) is fenced`));
    expect((await createLeases(createSqliteStore({ client: database }), { holder: 'x' }).inspect('report:daily')).ending).toMatchObject({
      kind: 'revoked',
      reason: 'stuck',
    });
    const reset = await cli('gate', 'reset', 'reports', '--yes');
    expect(reset).toMatchObject({ code: 0, stdout: `gate reports: forgot token ${token} of lease report:daily\n` });
  });

  it('a path without a database: exit 3, and no file is created', async () => {
    const missing = `${file.path}.typo`;
    const run = await startInProcess(['list', '--store', `sqlite:${missing}`], { tty: false });
    run.answer('');
    expect(await run.exited).toBe(3);
    expect(run.printed.stderr).toBe(`leasefence: no SQLite database at ${missing}\n`);
    expect(existsSync(missing)).toBe(false);
    const empty = startInProcess(['list', '--store', 'sqlite:'], { tty: false });
    empty.answer('');
    expect(await empty.exited).toBe(2);
  });

  it('items add and remove on SQLite (a store with sets): the items reach the file, a key of another set exits 4', async () => {
    const added = await cli('items', 'add', 'scans', 'scan:a', 'scan:b');
    expect(added).toMatchObject({ code: 0, stderr: '' });
    expect(added.stdout).toMatch(/^added 2 of 2 to scans \(due now\): scan:a, scan:b\n$/);
    const other = await cli('items', 'add', 'exports', 'scan:a');
    expect(other.code).toBe(4);
    expect(other.stderr).toContain('scan:a is an item of set scans; nothing was added');
    const sets = database.prepare(`SELECT key, item_set FROM leasefence_leases WHERE item_set IS NOT NULL ORDER BY key`).all();
    expect(sets).toEqual([
      { key: 'scan:a', item_set: 'scans' },
      { key: 'scan:b', item_set: 'scans' },
    ]);
    const removed = await cli('items', 'remove', 'scans', 'scan:a', 'scan:b');
    expect(removed).toMatchObject({ code: 0, stdout: 'removed 2 of 2 from scans: scan:a, scan:b\n' });
  });
});
