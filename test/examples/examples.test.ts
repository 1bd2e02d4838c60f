/**
 * The examples in examples/ run as a user runs them: `node examples/<name>/main.mjs`, importing the BUILT
 * package (test/support/built-package.ts, linked into a temp project as node_modules/leasefence) and the
 * drivers, against the test servers (LEASEFENCE_PG_URL, LEASEFENCE_REDIS_URL from the global setup). Each
 * run must print exactly the `text output` block of its README (tokens from the store clock and the times
 * of a real server are matched by pattern), and what it wrote is checked in the store independently of what
 * it printed. The daily export gets a database of its own; the ramp runner uses only keys under its prefix.
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { linkBuiltPackage } from '../support/built-package.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Run {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `node <file> args` in `cwd` with exactly `env` (plus no colours). */
function runNode(file: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [file, ...args],
      { cwd, env: { ...env, FORCE_COLOR: '0', NO_COLOR: '1' }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const exitCode = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        done({ exitCode, stdout, stderr });
      },
    );
  });
}

/** The README's ```text output blocks, by the arguments their info string names ('' for none). */
async function expectedOutputs(example: string): Promise<Map<string, string>> {
  const readme = await readFile(join(ROOT, 'examples', example, 'README.md'), 'utf8');
  const blocks = new Map<string, string>();
  for (const match of readme.matchAll(/^```text output( [^\n]*)?\n([\s\S]*?)^```$/gm)) blocks.set((match[1] ?? '').trim(), match[2] ?? '');
  return blocks;
}

/** Store-clock tokens (microseconds) and real-server times vary per run; everything else must match. */
function normalized(output: string): string {
  return output.replace(/token \d{10,}/g, 'token <token>').replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, '<time>');
}

const withoutServers = (): NodeJS.ProcessEnv => {
  const env = { ...process.env };
  delete env['LEASEFENCE_PG_URL'];
  delete env['LEASEFENCE_REDIS_URL'];
  return env;
};

describe('the examples, as programs against the built package', { timeout: 120_000 }, () => {
  let project = '';
  let admin: pg.Client | undefined;
  const database = `leasefence_examples_${process.pid}`;
  const postgresUrl = process.env['LEASEFENCE_PG_URL'];
  const redisUrl = process.env['LEASEFENCE_REDIS_URL'];

  beforeAll(async () => {
    const cache = join(ROOT, 'node_modules', '.cache');
    await mkdir(cache, { recursive: true });
    // NOTE: inside the repository, so the drivers (pg, ioredis) resolve as in a user's project.
    project = await mkdtemp(join(cache, 'leasefence-examples-'));
    await writeFile(join(project, 'package.json'), JSON.stringify({ private: true, type: 'module' }));
    await cp(join(ROOT, 'examples'), join(project, 'examples'), {
      recursive: true,
      filter: (source) => !source.endsWith('.ts') && !source.endsWith('.json'),
    });
    await linkBuiltPackage(project);
  });

  afterAll(async () => {
    if (admin !== undefined) {
      await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      await admin.end();
    }
    if (project !== '') await rm(project, { recursive: true, force: true });
  });

  /** A database of its own for the daily export (it drops and creates its tables). */
  async function exportDatabase(): Promise<string> {
    if (postgresUrl === undefined) throw new Error('LEASEFENCE_PG_URL is not set (test/support/global-setup.ts sets it)');
    admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${database}"`);
    const url = new URL(postgresUrl);
    url.pathname = `/${database}`;
    return url.toString();
  }

  const main = (example: string): string => join(project, 'examples', example, 'main.mjs');

  test('daily-export: a worker SIGKILLed before its COMMIT and one SIGKILLed right after it; each successor resumes at the checkpoint; every batch lands once', async () => {
    const url = await exportDatabase();
    const expected = (await expectedOutputs('daily-export')).get('');
    const run = await runNode(main('daily-export'), [], project, { ...process.env, LEASEFENCE_PG_URL: url });
    expect({ exitCode: run.exitCode, stderr: run.stderr }).toEqual({ exitCode: 0, stderr: '' });
    expect(normalized(run.stdout)).toBe(normalized(expected ?? 'no `text output` block in examples/daily-export/README.md'));

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ batch: number; worker: string; token: string }>(
        'SELECT batch, worker, token::text FROM daily_export_rows ORDER BY batch',
      );
      expect(rows.map((row) => `${row.batch} ${row.worker}`)).toEqual([
        '1 worker-a',
        '2 worker-a',
        '3 worker-b',
        '4 worker-b',
        '5 worker-b',
        '6 worker-c',
      ]);
      // Each takeover is a newer grant: a greater token.
      expect(BigInt(rows[2]?.token ?? 0)).toBeGreaterThan(BigInt(rows[1]?.token ?? 0));
      expect(BigInt(rows[5]?.token ?? 0)).toBeGreaterThan(BigInt(rows[4]?.token ?? 0));
    } finally {
      await client.end();
    }
  });

  test.each([[''], ['--discard']])(
    'ramp-runner %s: bound to the approved tier; revoked with a reason, recovered, fenced by a moved tier and told missing after the ramp is deleted; each wave sent at most once',
    async (flag) => {
      if (redisUrl === undefined) throw new Error('LEASEFENCE_REDIS_URL is not set (test/support/global-setup.ts sets it)');
      const expected = (await expectedOutputs('ramp-runner')).get(flag);
      const run = await runNode(main('ramp-runner'), flag === '' ? [] : [flag], project, process.env);
      expect({ exitCode: run.exitCode, stderr: run.stderr }).toEqual({ exitCode: 0, stderr: '' });
      expect(normalized(run.stdout)).toBe(normalized(expected ?? `no \`text output ${flag}\` block in examples/ramp-runner/README.md`));
      const reasons = [...run.stdout.matchAll(/refused, lease lost on ramp:current \((\S+):/g)].map((match) => match[1]);
      expect(reasons).toEqual(['revoked', 'superseded', 'state-changed', 'missing']);

      const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
      await redis.connect();
      try {
        const w3 = flag === '' ? 'w3 to seg-w3-r2 (run r4)' : 'w3 to seg-w3-r4 (run r4)';
        expect(await redis.lrange('ramp-runner-example:{ramp:current}:outbox', 0, -1)).toEqual([
          'w1 to seg-w1-r1 (run r1)',
          'w2 to seg-w2-r1 (run r1)',
          w3,
        ]);
        expect(await redis.get('ramp-runner-example:{ramp:current}:tier')).toBe('25');
      } finally {
        redis.disconnect();
      }
    },
  );

  test('classifier: claimed from a set, submitted once (replayed, replay-conflict), the abandoned run recorded first, fenced by a re-scan and by the owner from inside the write', async () => {
    const expected = (await expectedOutputs('classifier')).get('');
    const run = await runNode(main('classifier'), [], project, withoutServers());
    expect({ exitCode: run.exitCode, stderr: run.stderr }).toEqual({ exitCode: 0, stderr: '' });
    // NOTE: the memory store's manual clock makes this output exact, tokens and times included.
    expect(run.stdout).toBe(expected);
    const reasons = [...run.stdout.matchAll(/-> refused: (\S+)/g)].map((match) => match[1]);
    expect(reasons).toEqual(['replayed', 'replay-conflict', 'expired', 'replay-conflict', 'state-changed', 'write-refused']);
    expect(run.stdout).toContain('abandoned: run r2 of classifier-1');
    expect(run.stdout).toContain('decisions recorded: occ-1 (run r1, clf-2024-06, publish)\n');
  });

  test('scan-work: items claimed oldest first, a stopped run taken over at its checkpoint, finalize replayed once, the stale finalize refused', async () => {
    const expected = (await expectedOutputs('scan-work')).get('');
    const run = await runNode(main('scan-work'), [], project, withoutServers());
    expect({ exitCode: run.exitCode, stderr: run.stderr }).toEqual({ exitCode: 0, stderr: '' });
    expect(run.stdout).toBe(expected);
    expect(run.stdout).toContain('taking over run w1-1 of worker-1 at checkpoint {"page":2}');
    expect(run.stdout).toContain('scan:site-a pages: 1 (w1-1), 2 (w1-1), 3 (w2-2), 4 (w2-2)\n');
    expect(run.stdout).toContain('reports: report:scan:site-b (run w2-1), report:scan:site-a (run w2-2), report:scan:site-c (run w1-2)\n');
  });

  test('export-pool: two permits, the pool full and by whom, a frozen permit taken over at its checkpoint, its late chunk refused', async () => {
    const expected = (await expectedOutputs('export-pool')).get('');
    const run = await runNode(main('export-pool'), [], project, withoutServers());
    expect({ exitCode: run.exitCode, stderr: run.stderr }).toEqual({ exitCode: 0, stderr: '' });
    expect(run.stdout).toBe(expected);
    expect(run.stdout).toContain('after exporter-1\'s grant expired, left at {"job":"eu","chunk":1}');
    // NOTE: every chunk of every export landed once: the frozen exporter's chunk 2 was refused, its successor's landed.
    expect(run.stdout).toContain('partner received: eu 1, us 1, us 2, us 3, apac 1, apac 2, eu 2, eu 3, apac 3\n');
  });

  test.each([
    ['daily-export', 'LEASEFENCE_PG_URL'],
    ['ramp-runner', 'LEASEFENCE_REDIS_URL'],
  ])('%s without %s says how to get a server, and exits 1', async (example, variable) => {
    const run = await runNode(main(example), [], project, withoutServers());
    expect(run.exitCode).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`Set ${variable}`);
    expect(run.stderr).toContain(`npm run example -- ${example}`);
  });
});
