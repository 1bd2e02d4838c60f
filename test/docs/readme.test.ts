/**
 * The docs cannot rot: every ```ts, ```js and ```cjs block of the README and the guides is type-checked
 * against the package's types (`leasefence`, `leasefence/postgres`, ... mapped to src/), and every runnable
 * block (js and cjs, unless marked `no-run`) runs as a program against the BUILT package (a temp project with
 * node_modules/leasefence), on the test servers, and must print exactly its ```text output block.
 *
 * Each run gets its own PostgreSQL database (DATABASE_URL), its own Redis logical database (REDIS_URL) and
 * its own working directory (a SQLite file), so the ESM and CommonJS forms of a quick start both start from
 * nothing, as a new user does. A block that keeps state there then runs a second time in the same place and
 * must print the same: a user runs a quick start again, or its other form, on the same server and directory.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { linkBuiltPackage } from '../support/built-package.js';
import { BLOCK_CONTEXT } from './block-context.js';
import { checkedBlocks, type CheckedBlock } from './code-blocks.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'node_modules', '.bin');
/** The Markdown files whose code blocks are checked: the README and every guide. */
const DOC_FILES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .sort()
    .map((file) => `docs/${file}`),
];
/** The package's entries, as a user imports them, and their sources. */
const ENTRIES: Readonly<Record<string, string>> = {
  leasefence: 'src/index.ts',
  'leasefence/store': 'src/store-entry.ts',
  'leasefence/diagnostics': 'src/diagnostics-entry.ts',
  'leasefence/election': 'src/election-entry.ts',
  'leasefence/etcd': 'src/adapters/etcd/index.ts',
  'leasefence/memory': 'src/adapters/memory/index.ts',
  'leasefence/postgres': 'src/adapters/postgres/index.ts',
  'leasefence/redis': 'src/adapters/redis/index.ts',
  'leasefence/sqlite': 'src/adapters/sqlite/index.ts',
  'leasefence/otel': 'src/otel/index.ts',
};
const EXTENSION: Readonly<Record<CheckedBlock['language'], string>> = { ts: 'ts', js: 'mjs', cjs: 'cjs' };

const blocks = DOC_FILES.flatMap((file) => checkedBlocks(ROOT, file));
const runnable = blocks.filter((block) => block.runnable);
const where = (block: CodeBlock): string => `${block.file}:${block.line}`;
type CodeBlock = Pick<CheckedBlock, 'file' | 'line'>;
/** Whether a runnable block leaves state behind (a database, Redis keys, a SQLite file in its directory). */
const keepsState = (block: CheckedBlock): boolean => /DATABASE_URL|REDIS_URL|new Database\(/.test(block.code);
const fileNameOf = (block: CheckedBlock): string => `${block.file.replaceAll('/', '_')}-L${block.line}.${EXTENSION[block.language]}`;

interface Run {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `file args`; unlike scripts/package-checks.ts' runCommand, with its own environment and stdout apart. */
function run(file: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((done) => {
    execFile(
      file,
      [...args],
      { cwd, env: { ...env, FORCE_COLOR: '0', NO_COLOR: '1' }, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const exitCode = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        done({ exitCode, stdout, stderr });
      },
    );
  });
}

/** The temp project: package.json, the blocks as files, their declarations context and a tsconfig. */
async function writeProject(project: string): Promise<void> {
  const base = JSON.parse(await readFile(join(ROOT, 'tsconfig.json'), 'utf8')) as { compilerOptions: Record<string, unknown> };
  const paths = Object.fromEntries(Object.entries(ENTRIES).map(([entry, source]) => [entry, [join(ROOT, source)]]));
  const compilerOptions = {
    ...base.compilerOptions,
    isolatedDeclarations: false,
    declaration: false,
    allowJs: true,
    checkJs: true,
    // NOTE: every block is its own module, so two blocks may both declare `const leases`.
    moduleDetection: 'force',
    paths,
  };
  const files = [...blocks.map(fileNameOf), 'context.d.ts'];
  await writeFile(join(project, 'package.json'), JSON.stringify({ private: true, type: 'module' }));
  await writeFile(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files }, null, 2));
  await writeFile(join(project, 'context.d.ts'), BLOCK_CONTEXT);
  for (const block of blocks) await writeFile(join(project, fileNameOf(block)), block.code);
}

/** The built package as `<project>/node_modules/leasefence` (JavaScript only: the types come from src). */
async function buildPackage(project: string): Promise<void> {
  // NOTE: shared with test/examples: built once per state of the sources (test/support/built-package.ts).
  await linkBuiltPackage(project);
}

describe('the code blocks of the README and the guides', { timeout: 180_000 }, () => {
  let project = '';
  let built: Promise<void> = Promise.resolve();
  let typeChecked: Promise<Run> = Promise.resolve({ exitCode: 1, stdout: '', stderr: 'tsc did not start' });

  beforeAll(async () => {
    const cache = join(ROOT, 'node_modules', '.cache');
    await mkdir(cache, { recursive: true });
    // NOTE: inside the repository, so the drivers (pg, ioredis, better-sqlite3) and @types resolve.
    project = await mkdtemp(join(cache, 'leasefence-docs-'));
    await writeProject(project);
    built = buildPackage(project);
    built.catch(() => undefined); // awaited by the runs; a failure is reported there
    // NOTE: tsc (the longest step) runs while the package builds and the programs run; its test comes last.
    typeChecked = run(join(BIN, 'tsc'), ['-p', join(project, 'tsconfig.json'), '--pretty', 'false'], project);
  });

  afterAll(async () => {
    await Promise.allSettled([built, typeChecked]);
    if (project !== '') await rm(project, { recursive: true, force: true });
  });

  test('the README has the ESM quick start, and docs/quick-starts.md every store in ESM and CommonJS', () => {
    const storeOf = (block: CheckedBlock): string =>
      `${block.language}: ${/from 'leasefence\/(\w+)'|require\('leasefence\/(\w+)'\)/.exec(block.code)?.slice(1).find(Boolean)}`;
    const QUICK_STARTS = 'docs/quick-starts.md';
    expect(runnable.filter((block) => block.file === 'README.md').map(storeOf)).toContain('js: memory');
    const quickStarts = runnable.filter((block) => block.file === 'README.md' || block.file === QUICK_STARTS).map(storeOf);
    for (const store of ['memory', 'postgres', 'redis', 'sqlite']) {
      expect(quickStarts).toContain(`js: ${store}`);
      expect(quickStarts).toContain(`cjs: ${store}`);
    }
    // NOTE: the Postgres, Redis and SQLite quick starts, each in both forms, also run a second time.
    expect(runnable.filter((block) => block.file === QUICK_STARTS && keepsState(block))).toHaveLength(6);
  });

  test('the client versions the README names are the ones the adapter suites run against', async () => {
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const dev = (JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> })
      .devDependencies;
    const major = (name: string): string => /(\d+)\.\d+\.\d+/.exec(dev[name] ?? '')?.[1] ?? `no devDependency ${name}`;
    expect(readme).toContain(`pg ${major('pg')}, postgres.js ${major('postgres')}, PGlite`);
    expect(readme).toContain(`ioredis ${major('ioredis')} and ${major('ioredis6')}, node-redis ${major('redis')}`);
    expect(readme).toContain(`better-sqlite3 ${major('better-sqlite3')}`);
    expect(dev['@electric-sql/pglite']).toBeDefined();
    const suites = [
      'postgres-pg',
      'postgres-postgresjs',
      'postgres-pglite',
      'redis-ioredis',
      'redis-ioredis6',
      'redis-node-redis',
      'sqlite-better-sqlite3',
    ];
    expect(suites.filter((suite) => !existsSync(join(ROOT, 'test', 'adapters', `${suite}.test.ts`)))).toEqual([]);
  });

  test('the files the README shows from the published package are in the repository and shipped', async () => {
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const shipped = [...readme.matchAll(/https:\/\/cdn\.jsdelivr\.net\/npm\/leasefence\/([^"\s)]+)/g)].map((match) => match[1] ?? '');
    expect(shipped).toContain('docs/timeline.svg');
    const files = (JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { files: string[] }).files;
    for (const path of shipped) {
      expect(existsSync(join(ROOT, path)), path).toBe(true);
      // NOTE: the `files` globs used here are `dir/*.ext`; test/package checks what `npm pack` really takes.
      expect(
        files.some((glob) => new RegExp(`^${glob.replace(/\./g, '\\.').replace('*', '[^/]+')}$`).test(path)),
        path,
      ).toBe(true);
    }
  });

  test('every ts block is marked no-run and every runnable block has a text output block', () => {
    expect(blocks.filter((block) => block.language === 'ts' && block.runnable).map(where)).toEqual([]);
    expect(runnable.filter((block) => block.output === null).map(where)).toEqual([]);
  });

  describe('runnable blocks, from the built package, on the test servers', () => {
    const postgresUrl = process.env['LEASEFENCE_PG_URL'];
    const redisUrl = process.env['LEASEFENCE_REDIS_URL'];
    const databases: string[] = [];
    let admin: pg.Client | undefined;

    afterAll(async () => {
      if (admin === undefined) return;
      for (const database of databases) await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      await admin.end();
    });

    /** A fresh PostgreSQL database for one run. */
    async function freshDatabase(name: string): Promise<string> {
      if (postgresUrl === undefined) throw new Error('LEASEFENCE_PG_URL is not set (test/support/global-setup.ts sets it)');
      if (admin === undefined) {
        admin = new pg.Client({ connectionString: postgresUrl });
        await admin.connect();
      }
      await admin.query(`CREATE DATABASE "${name}"`);
      databases.push(name);
      const url = new URL(postgresUrl);
      url.pathname = `/${name}`;
      return url.toString();
    }

    /** An emptied Redis logical database (1 to 15; the other tests use 0) for one run. */
    async function freshRedis(index: number): Promise<string> {
      if (redisUrl === undefined) throw new Error('LEASEFENCE_REDIS_URL is not set (test/support/global-setup.ts sets it)');
      const url = new URL(redisUrl);
      url.pathname = `/${index}`;
      const client = new Redis(url.toString(), { lazyConnect: true, maxRetriesPerRequest: 1 });
      try {
        await client.connect();
        await client.flushdb();
      } finally {
        client.disconnect();
      }
      return url.toString();
    }

    test('the exactly-once pattern: a second run of a finished job (a cron firing twice, a retry after success) writes nothing', async () => {
      await built;
      const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
      const heading = readme.split('\n').indexOf('## The exactly-once pattern') + 1;
      expect(heading, 'README.md has a "## The exactly-once pattern" section').toBeGreaterThan(0);
      const block = runnable.find((candidate) => candidate.file === 'README.md' && candidate.line > heading);
      if (block === undefined) throw new Error('no runnable block after "## The exactly-once pattern"');
      const cwd = join(project, 'run-exactly-once');
      await mkdir(cwd);
      const file = join(cwd, `main.${EXTENSION[block.language]}`);
      await writeFile(file, block.code);
      const program = await run(process.execPath, [file], cwd);
      // NOTE: asserted here, not only through the block's own output block, so that editing both together
      // cannot make the pattern redo a finished job unnoticed: run 1 writes every batch, run 2 nothing.
      expect({ exitCode: program.exitCode, stderr: program.stderr }).toEqual({ exitCode: 0, stderr: '' });
      expect(program.stdout.split('\n')).toEqual([`exporter-1 wrote [ 'batch 1', 'batch 2', 'batch 3' ]`, 'exporter-2 wrote []', '']);
    });

    runnable.forEach((block, index) => {
      test(`${where(block)} (${block.language}) prints its output`, async () => {
        await built;
        const cwd = join(project, `run-${index}`);
        await mkdir(cwd);
        const file = join(cwd, `main.${EXTENSION[block.language]}`);
        await writeFile(file, block.code);
        const env: NodeJS.ProcessEnv = { ...process.env };
        if (block.code.includes('DATABASE_URL')) env['DATABASE_URL'] = await freshDatabase(`leasefence_docs_${process.pid}_${index}`);
        if (block.code.includes('REDIS_URL')) env['REDIS_URL'] = await freshRedis(1 + (index % 15));
        const program = await run(process.execPath, [file], cwd, env);
        expect({ exitCode: program.exitCode, stdout: program.stdout, stderr: program.stderr }).toEqual({
          exitCode: 0,
          stdout: block.output,
          stderr: '',
        });
        if (!keepsState(block)) return;
        // NOTE: a user runs a quick start again, or its other module form, against the same database, Redis
        // and directory: what the first run left behind must not change the second run's output.
        const again = await run(process.execPath, [file], cwd, env);
        expect({ exitCode: again.exitCode, stdout: again.stdout, stderr: again.stderr }, 'run a second time in the same place').toEqual({
          exitCode: 0,
          stdout: block.output,
          stderr: '',
        });
      });
    });
  });

  test('every block type-checks against the package types', async () => {
    const check = await typeChecked;
    // NOTE: name the Markdown line of each error, not the temp file's.
    const located = `${check.stdout}${check.stderr}`.replace(
      /(\S+)-L(\d+)\.(?:ts|mjs|cjs)\((\d+),(\d+)\)/g,
      (_, file: string, start: string, line: string, column: string) =>
        `${file.replaceAll('_', '/')}:${Number(start) + Number(line)}:${column}`,
    );
    expect(located).toBe('');
    expect(check.exitCode).toBe(0);
  });
});
