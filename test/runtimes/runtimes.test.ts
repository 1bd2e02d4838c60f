/**
 * The runtime matrix (issue 28): the package as `npm pack` makes it from a clean tree, installed into a
 * consumer project, run by Node 20, 22 and 24, Bun and Deno (installed from npm, test/support/runtimes.ts):
 * the smoke test of every entry, the memory store's suites, the PostgreSQL and Redis quick starts against the
 * run's servers with each supported client, and the SQLite store on `node:sqlite`. What a runtime offers is
 * detected (features.mjs) and must be what the README's Runtimes table says (support-table.ts); a `no` there
 * is asserted as the failure the README describes.
 */
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { packageEntries } from '../../scripts/package-checks.js';
import { createRedisStore, hashTagOf } from '../../src/adapters/redis/index.js';
import { createLeases } from '../../src/index.js';
import { PG_URL_VARIABLE, REDIS_URL_VARIABLE } from '../support/global-setup.js';
import {
  assertExitedZero,
  type CleanPack,
  copyProgram,
  installRuntime,
  installTarball,
  linkPackages,
  packCleanTree,
  removeUnpinnedRuntimes,
  REPO_ROOT,
  type Runtime,
  RUNTIMES,
  runOn,
  runProcess,
  spawnOn,
} from '../support/runtimes.js';
import { cellOf, supportTableMarkdown } from './support-table.js';

/**
 * The bound on one program's run: each takes about a second (the vitest run up to 10 s on a loaded machine);
 * a hung one is killed. A test runs at most two, within the project's testTimeout (vitest.config.ts).
 */
const PROGRAM_TIMEOUT_MS = 120_000;
/** What the consumer project links in besides the tarball: the peer dependencies and the stores' clients. */
const LINKED = ['fast-check', '@opentelemetry/api', 'pg', 'postgres', 'ioredis', 'redis'];
/** The programs the runtimes run, copied into the consumer projects. */
const PROGRAMS = [
  'features.mjs',
  'frozen-holder.mjs',
  'conformance.mjs',
  'sqlite-harness.mjs',
  'quick-start-postgres.mjs',
  'quick-start-redis.mjs',
  'quick-start-sqlite.mjs',
].map((name) => `test/runtimes/${name}`);
const SMOKE = 'test/package/smoke.mjs';
/** What the SQL quick starts print: the first write lands, the stale one is refused, one row written. */
const QUICK_START_OUTPUT = '[true,"refused: released"]\n[1]\n';
/** What the Redis quick start prints: the same, one hash field written. */
const REDIS_QUICK_START_OUTPUT = '[true,"refused: released"]\n["batch 1"]\n';

const slug = (runtime: Runtime): string => runtime.name.toLowerCase().replaceAll(' ', '');

let workDir = '';
let packed: CleanPack;
/** A project with only the tarball installed: the smoke test proves the entries need nothing else. */
let bare = '';
/** The tarball plus LINKED. */
let full = '';
const binaries = new Map<string, string>();
const databases: string[] = [];

/** A new database on the run's PostgreSQL, dropped after the file; returns its URL. */
async function freshDatabase(name: string): Promise<string> {
  const server = process.env[PG_URL_VARIABLE] ?? '';
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  databases.push(name);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return url.toString();
}

async function dropDatabases(): Promise<void> {
  if (databases.length === 0) return;
  const admin = new pg.Client({ connectionString: process.env[PG_URL_VARIABLE] ?? '' });
  await admin.connect();
  try {
    for (const name of databases) await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'leasefence-runtimes-'));
  // NOTE: the runtimes install (or are found in the cache) while the package builds.
  const [pack] = await Promise.all([
    packCleanTree(workDir),
    ...RUNTIMES.map(async (runtime) => binaries.set(runtime.name, await installRuntime(runtime))),
  ]);
  packed = pack;
  await removeUnpinnedRuntimes();
  bare = join(workDir, 'bare');
  full = join(workDir, 'full');
  await installTarball(bare, packed.tarball);
  await installTarball(full, packed.tarball);
  await linkPackages(full, LINKED);
  await copyProgram(bare, SMOKE);
  for (const program of [SMOKE, ...PROGRAMS]) await copyProgram(full, program);
  // NOTE: a first run installs five runtimes (about 720 MB on disk) while the package builds with declarations.
}, 900_000);

afterAll(async () => {
  await dropDatabases();
  if (workDir !== '') await rm(workDir, { recursive: true, force: true });
});

test("the README's Runtimes table is support-table.ts, with the pinned versions", () => {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const section = /^## Runtimes\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1] ?? '';
  const table = section
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .join('\n');
  expect(table).toBe(supportTableMarkdown());
});

test('npm pack from a clean tree (no dist/) builds first through the prepack script, and packs every entry', () => {
  expect(packed.distBeforePack).toBe(false);
  const [report] = JSON.parse(
    packed.pack.stdout.slice(packed.pack.stdout.indexOf('[') === 0 ? 0 : packed.pack.stdout.indexOf('\n[') + 1),
  ) as [{ files: { path: string }[] }];
  const files = report.files.map((file) => file.path);
  for (const entry of packageEntries()) {
    for (const extension of ['.js', '.cjs', '.d.ts', '.d.cts']) expect(files).toContain(`dist/${entry.file}${extension}`);
  }
  // NOTE: npm prints the scripts it runs on stderr, their output on stdout (tsup's, before the JSON report).
  expect(packed.pack.stderr).toMatch(/^> leasefence@\S+ prepack\n> npm run build$/m);
  expect(packed.pack.stdout).toMatch(/DTS\S* .*Build success/);
  const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  expect(manifest.scripts['prepack']).toBe('npm run build');
});

describe.each(RUNTIMES)('$name', (runtime) => {
  const run = (cwd: string, program: string, args: readonly string[] = [], env: NodeJS.ProcessEnv = {}) =>
    runOn(runtime, binaries.get(runtime.name) ?? '', program, args, cwd, { env, timeoutMs: PROGRAM_TIMEOUT_MS });

  test('is the pinned version', async () => {
    const version = assertExitedZero(await runProcess(binaries.get(runtime.name) ?? '', ['--version'], workDir, { timeoutMs: 60_000 }));
    expect(version.stdout).toContain(runtime.version);
  });

  test('offers what the README table says (detected: TracingChannel, AsyncLocalStorage, AbortSignal.any, node:sqlite, TCP)', async () => {
    const features = JSON.parse(assertExitedZero(await run(full, 'features.mjs')).stdout) as Record<string, boolean>;
    expect(features).toEqual({
      tracingChannel: cellOf('tracingChannel', runtime) === 'yes',
      abortSignalAny: cellOf('abortSignalAny', runtime) === 'yes',
      asyncLocalStorage: cellOf('asyncLocalStorage', runtime) === 'yes',
      nodeSqlite: cellOf('nodeSqlite', runtime) === 'yes',
      tcp: cellOf('tcp', runtime) === 'yes',
    });
  });

  test('loads every entry of the packed package through import and require, or hears it ask for its peer dependency (smoke test)', async () => {
    expect(cellOf('package', runtime)).toBe('yes');
    const smoke = assertExitedZero(await run(bare, 'smoke.mjs'));
    expect(smoke.stdout).toContain('smoke: all checks passed');
    const withPeers = assertExitedZero(await run(full, 'smoke.mjs', ['--with-peers']));
    // NOTE: the entries come from package.json "exports": each one is loaded by one of the two runs.
    for (const { specifier } of packageEntries()) {
      expect(`${smoke.stdout}${withPeers.stdout}`).toMatch(
        new RegExp(`^ok (load ${specifier} via import and require|${specifier} asks for its peer dependency)`, 'm'),
      );
    }
  });

  test("passes the memory store's conformance, model and race suites, and catches every planted bug", async () => {
    expect(cellOf('memory', runtime)).toBe('yes');
    const suites = assertExitedZero(await run(full, 'conformance.mjs', ['memory']));
    expect(suites.stdout).toMatch(/^# fail 0$/m);
    expect(suites.stdout).toMatch(/^# skip 0$/m);
    // NOTE: 82 conformance specs (the 3 of leader election, the 12 record-level, the 10 claim-next, the 10 semaphore and
    // the 13 fair-waiting ones among them) + model + semaphore model + race + fair-waiting race + 5 planted bugs (race) + 5 (model), as
    // testing-smoke.mjs counts.
    expect(suites.stdout).toMatch(/^# pass 96$/m);
  });

  test.each([
    { row: 'pg', client: 'pg' },
    { row: 'postgresjs', client: 'postgres' },
  ] as const)('runs the PostgreSQL quick start with $client against the real server', async ({ row, client }) => {
    expect(cellOf(row, runtime)).toBe('yes');
    const url = await freshDatabase(`leasefence_runtimes_${process.pid}_${slug(runtime)}_${client}`);
    const quickStart = assertExitedZero(await run(full, 'quick-start-postgres.mjs', [client], { DATABASE_URL: url }));
    expect(quickStart.stdout).toBe(QUICK_START_OUTPUT);
  });

  test.each([
    { row: 'ioredis', client: 'ioredis' },
    { row: 'nodeRedis', client: 'node-redis' },
  ] as const)('runs the Redis quick start with $client against the real server', async ({ row, client }) => {
    expect(cellOf(row, runtime)).toBe('yes');
    const name = `runtimes-${process.pid}-${slug(runtime)}-${client}`;
    const quickStart = assertExitedZero(
      await run(full, 'quick-start-redis.mjs', [client, name], { REDIS_URL: process.env[REDIS_URL_VARIABLE] ?? '' }),
    );
    expect(quickStart.stdout).toBe(REDIS_QUICK_START_OUTPUT);
  });

  test("a worker frozen (SIGSTOP) past its TTL while another takes over has its write refused after the thaw; the other's write stays", async () => {
    expect(cellOf('frozen', runtime)).toBe('yes');
    const name = `runtimes-${process.pid}-${slug(runtime)}`;
    const valueKey = `${hashTagOf(`freeze:${name}`)}:value`;
    const url = process.env[REDIS_URL_VARIABLE] ?? '';
    const frozen = spawnOn(runtime, binaries.get(runtime.name) ?? '', 'frozen-holder.mjs', [name], full, { REDIS_URL: url });
    const killer = setTimeout(() => frozen.kill('SIGKILL'), PROGRAM_TIMEOUT_MS);
    const redis = new Redis(url);
    let stdout = '';
    let stderr = '';
    frozen.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => frozen.once('close', resolve));
    try {
      const claimed = await new Promise<bigint>((resolve, reject) => {
        frozen.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          const token = /^claimed (\d+)$/m.exec(stdout)?.[1];
          if (token !== undefined) resolve(BigInt(token));
        });
        void exited.then(() => reject(new Error(`the worker ended before claiming:\n${stdout}\n${stderr}`)));
      });
      frozen.kill('SIGSTOP');
      // NOTE: past the frozen worker's 1 s TTL, on the store's clock; then the next worker (this process) claims.
      await sleep(1_500);
      const leases = createLeases(createRedisStore({ client: redis }), { holder: 'next', ttlMs: 30_000 });
      const next = await leases.claimOrThrow(`freeze:${name}`);
      expect(next.token).toBeGreaterThan(claimed);
      const landed = await leases.fencedWrite(next, (tx) => {
        tx.call('SET', valueKey, 'written by the next worker');
      });
      expect(landed.ok).toBe(true);
      frozen.kill('SIGCONT');
      frozen.stdin.end('write\n');
      expect(await exited, stderr).toBe(0);
      expect(stdout.trim().split('\n').at(-1)).toBe('{"ok":false,"reason":"superseded"}');
      expect(await redis.get(valueKey)).toBe('written by the next worker');
    } finally {
      clearTimeout(killer);
      frozen.kill('SIGKILL');
      redis.disconnect();
    }
  });

  test('runs the SQLite quick start on node:sqlite, or fails to import it where the runtime has none', async () => {
    // NOTE: the working directory (the SQLite file's) inside the consumer project, where Deno finds package.json.
    const cwd = join(full, `sqlite-${slug(runtime)}`);
    await mkdir(cwd, { recursive: true });
    const quickStart = await run(cwd, '../quick-start-sqlite.mjs');
    if (cellOf('sqliteQuickStart', runtime) === 'yes') {
      expect(assertExitedZero(quickStart).stdout).toBe(QUICK_START_OUTPUT);
    } else {
      expect(quickStart.exitCode).toBe(1);
      expect(quickStart.stderr).toMatch(/ERR_UNKNOWN_BUILTIN_MODULE.*node:sqlite|No such built-in module: node:sqlite/);
    }
  });

  test("passes the SQLite store's suites on node:sqlite, or fails to import it where the runtime has none", async () => {
    const suites = await run(full, 'conformance.mjs', ['node:sqlite']);
    if (cellOf('sqliteSuites', runtime) === 'yes') {
      expect(assertExitedZero(suites).stdout).toMatch(/^# fail 0$/m);
      // NOTE: 82 conformance specs (the 10 semaphore ones among them: node:sqlite offers acquirePermit) + model +
      // semaphore model + race + fair-waiting race.
      expect(suites.stdout).toMatch(/^# pass 86$/m);
    } else {
      expect(suites.exitCode).toBe(1);
      expect(suites.stderr).toMatch(/No such built-in module: node:sqlite/);
    }
  });

  if (runtime.npmPackage === 'node') {
    test('runs test/adapters/sqlite-node-sqlite.test.ts under vitest: both harnesses pass where node:sqlite exists, the file skips itself where not', async () => {
      const report = join(workDir, `vitest-${slug(runtime)}.json`);
      const vitest = join(REPO_ROOT, 'node_modules', 'vitest', 'vitest.mjs');
      const args = ['run', '--project', 'unit', 'test/adapters/sqlite-node-sqlite.test.ts', '--reporter=json', `--outputFile=${report}`];
      const suites = await run(REPO_ROOT, vitest, args);
      expect(suites.exitCode, `${suites.stdout}\n${suites.stderr}`).toBe(0);
      const { testResults } = JSON.parse(readFileSync(report, 'utf8')) as {
        testResults: { assertionResults: { ancestorTitles: string[]; status: string }[] }[];
      };
      const results = testResults.flatMap((file) => file.assertionResults);
      const count = (status: string, harness: string) =>
        results.filter((result) => result.status === status && result.ancestorTitles[0]?.startsWith(`${harness}: `)).length;
      expect(results.filter((result) => result.status === 'failed')).toEqual([]);
      if (cellOf('sqliteSuites', runtime) === 'yes') {
        expect(count('passed', 'sqlite (node:sqlite, manual clock)')).toBeGreaterThanOrEqual(35);
        expect(count('passed', 'sqlite (node:sqlite, wall clock)')).toBeGreaterThanOrEqual(34);
      } else {
        expect(results.map((result) => result.status)).toEqual(['skipped']);
      }
    });

    test('runs the node:sqlite half of test/adapters/sqlite-key-state.test.ts (issue 24 operations) and of the semaphore tests (issue 25) under vitest where node:sqlite exists', async () => {
      const report = join(workDir, `vitest-key-state-${slug(runtime)}.json`);
      const vitest = join(REPO_ROOT, 'node_modules', 'vitest', 'vitest.mjs');
      // NOTE: better-sqlite3 is built for the repo's Node 20 only; its half is filtered out (the default tiers run it).
      const args = [
        'run',
        '--project',
        'unit',
        'test/adapters/sqlite-key-state.test.ts',
        'test/adapters/sqlite-permits.test.ts',
        'test/adapters/sqlite-permits-agrees.test.ts',
        '-t',
        'node:sqlite',
        '--reporter=json',
        `--outputFile=${report}`,
      ];
      const suites = await run(REPO_ROOT, vitest, args);
      expect(suites.exitCode, `${suites.stdout}\n${suites.stderr}`).toBe(0);
      const { testResults } = JSON.parse(readFileSync(report, 'utf8')) as {
        testResults: { assertionResults: { ancestorTitles: string[]; status: string }[] }[];
      };
      const results = testResults.flatMap((file) => file.assertionResults);
      const ofNodeSqlite = results.filter((result) => result.ancestorTitles[0]?.startsWith('sqlite (node:sqlite)'));
      expect(results.filter((result) => result.status === 'failed')).toEqual([]);
      if (cellOf('sqliteSuites', runtime) === 'yes') {
        expect(ofNodeSqlite.filter((result) => result.status === 'passed').length).toBeGreaterThanOrEqual(12);
        // NOTE: the semaphore files' node:sqlite halves ran too (each file's describe of that driver).
        const semaphores = results.filter((result) => result.ancestorTitles[0]?.startsWith('sqlite (node:sqlite): semaphores'));
        expect(semaphores.filter((result) => result.status === 'passed').length).toBeGreaterThanOrEqual(2);
      } else {
        expect(ofNodeSqlite.length).toBeGreaterThan(0);
        expect(ofNodeSqlite.every((result) => result.status === 'skipped')).toBe(true);
      }
    });
  }
});
