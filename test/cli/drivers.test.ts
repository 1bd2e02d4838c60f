/**
 * The CLI loads its drivers only from the project that installed leasefence, or `--driver-path` (issue 29
 * item 6). A `node_modules` planted in a parent of the working directory, holding `pg`, `ioredis`, `redis`
 * and `better-sqlite3` that record being loaded, must never run; the CLI (a separate process, as a user
 * runs it) still lists the test run's real PostgreSQL and redis-server with the drivers of its own install.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/adapters/postgres/index.js';
import { freshTable, sharedPostgresUrl } from '../adapters/postgres-harness.js';
import { sharedRedisUrl } from '../adapters/redis-harness.js';
import { installDirectories, loadDriver } from '../../src/cli/drivers.js';
import { runCli } from './cli-harness.js';

const PLANTED = ['pg', 'ioredis', 'redis', 'better-sqlite3'];

describe('the CLI loads drivers from its own install only', () => {
  let parent: string;
  let cwd: string;
  const marker = (name: string) => join(parent, `loaded-${name}`);
  beforeAll(() => {
    parent = mkdtempSync(join(tmpdir(), 'leasefence-planted-'));
    for (const name of PLANTED) {
      const directory = join(parent, 'node_modules', name);
      mkdirSync(directory, { recursive: true });
      writeFileSync(join(directory, 'package.json'), JSON.stringify({ name, version: '99.0.0', main: 'index.js' }));
      // A planted driver proves it ran by writing a file (and then fails: it is not a driver).
      writeFileSync(
        join(directory, 'index.js'),
        `require('node:fs').writeFileSync(${JSON.stringify(marker(name))}, String(process.env.LEASEFENCE_STORE));\nthrow new Error('planted ${name} ran');\n`,
      );
    }
    cwd = join(parent, 'work', 'deeper');
    mkdirSync(cwd, { recursive: true });
  });
  afterAll(() => rmSync(parent, { recursive: true, force: true }));

  it('a node_modules planted in a parent of the working directory is never loaded (Postgres, Redis)', async () => {
    const table = freshTable('cli_drivers');
    const pool = new pg.Pool({ connectionString: await sharedPostgresUrl(), max: 1 });
    await createPostgresStore({ client: pool, table }).migrate();
    await pool.end();
    for (const args of [
      ['--store', await sharedPostgresUrl(), '--table', table],
      ['--store', await sharedRedisUrl()],
    ]) {
      const run = await runCli(['list', '--key-prefix', 'no-such-prefix:', ...args], { cwd });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
    }
    for (const name of PLANTED) expect(existsSync(marker(name))).toBe(false);
  });

  it('--driver-path loads from the directory named, and only there', async () => {
    const url = await sharedPostgresUrl();
    const planted = await runCli(['list', '--store', url, '--driver-path', parent], { cwd });
    expect(planted.code).toBe(1);
    expect(planted.stderr).toMatch(/planted pg ran/);
    expect(existsSync(marker('pg'))).toBe(true);
    rmSync(marker('pg'));
    const empty = mkdtempSync(join(tmpdir(), 'leasefence-no-drivers-'));
    try {
      const run = await runCli(['list', '--store', url, '--driver-path', empty], { cwd });
      expect(run.code).toBe(5);
      expect(run.stderr).toMatch(
        /a postgres:\/\/ store needs the pg package installed next to leasefence \(looked in .*leasefence-no-drivers-.*node_modules\): npm install pg, or pass --driver-path DIR/,
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('an installed leasefence (npm layout) loads drivers from its project, never from above it', () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'leasefence-layout-'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  /** A package `name` in `directory` whose module says where it was loaded from. */
  function plant(directory: string, name: string, from: string): void {
    mkdirSync(join(directory, name), { recursive: true });
    writeFileSync(join(directory, name, 'package.json'), JSON.stringify({ name, version: '1.0.0', main: 'index.js' }));
    writeFileSync(join(directory, name, 'index.js'), `module.exports = { from: ${JSON.stringify(from)} };\n`);
  }

  it('finds the project next to the package, and nothing in the directories above the project', async () => {
    const project = join(root, 'home', 'app');
    const cli = join(project, 'node_modules', 'leasefence', 'dist', 'cli.js');
    mkdirSync(join(project, 'node_modules', 'leasefence', 'dist'), { recursive: true });
    writeFileSync(join(project, 'node_modules', 'leasefence', 'package.json'), JSON.stringify({ name: 'leasefence', version: '0.1.0' }));
    writeFileSync(cli, '');
    expect(installDirectories(cli)).toEqual([join(project, 'node_modules', 'leasefence', 'node_modules'), join(project, 'node_modules')]);
    plant(join(root, 'node_modules'), 'pg', 'above the project');
    plant(join(root, 'home', 'node_modules'), 'ioredis', 'above the project');
    expect(await loadDriver('pg', installDirectories(cli))).toBeNull();
    expect(await loadDriver('ioredis', installDirectories(cli))).toBeNull();
    plant(join(project, 'node_modules'), 'pg', 'the project');
    expect(await loadDriver('pg', installDirectories(cli))).toMatchObject({ default: { from: 'the project' } });
  });
});
