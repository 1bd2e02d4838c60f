/**
 * Exactly-once progress, proven with real processes on real Postgres and Redis: two exporter processes
 * export BATCHES batches under one lease with `fencedWrite(..., { checkpoint })`, each resuming from the
 * checkpoint it inherits; the harness SIGKILLs the working exporter once at every kill point (before the
 * write, inside it, after its request was sent, after it returned, after release), at batches spread over
 * the run, and respawns it. At the end every batch landed exactly once. The old two-step pattern (write,
 * then checkpoint) is run too, killed between its two steps, to show the test catches the duplicate.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/adapters/postgres/index.js';
import { createRedisStore, hashTagOf } from '../../src/adapters/redis/index.js';
import { createLeases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';
import type { ExporterMessage, ExporterSetup, ExportMode, KillPoint } from './protocol.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const BATCHES = 20;
const PER_GRANT = 3;
const TTL_MS = 1_500;
/** How long one export may take, also on 2 busy cores (alone it takes about 20 s). */
const RUN_DEADLINE_MS = 100_000;

/**
 * The exporter as one ES module built with esbuild (about 0.15 s to start instead of 0.6 s with the tsx
 * loader; each kill respawns one), or `exporter.ts` under tsx when esbuild is absent.
 */
let entry: Promise<{ script: string; execArgv: string[] }> | null = null;
function exporterEntry(): Promise<{ script: string; execArgv: string[] }> {
  entry ??= (async () => {
    const source = join(HERE, 'exporter.ts');
    try {
      const esbuild = (await import('esbuild' as string)) as { build(options: Record<string, unknown>): Promise<unknown> };
      // NOTE: inside node_modules, so the bundle's bare imports (pg, ioredis) resolve to the project's.
      const dir = join(HERE, '..', '..', 'node_modules', '.cache', 'leasefence-worker-safety');
      mkdirSync(dir, { recursive: true });
      const script = join(dir, `exporter-${process.pid}-${randomBytes(4).toString('hex')}.mjs`);
      await esbuild.build({
        entryPoints: [source],
        outfile: script,
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        packages: 'external',
        logLevel: 'silent',
      });
      return { script, execArgv: [] };
    } catch {
      return { script: source, execArgv: ['--import', 'tsx'] };
    }
  })();
  return entry;
}

type StoreKind = ExporterSetup['store'];

/** One planned kill: the first exporter to reach `point` with a batch at or after `fromBatch` dies there. */
interface Kill {
  readonly point: KillPoint;
  readonly fromBatch: number;
}

/** What a run did, for the assertions and the printed figures. */
interface RunReport {
  readonly kills: { point: KillPoint; batch: number; token: string }[];
  readonly spawned: number;
  readonly ms: number;
  /** How many times each batch landed (index: batch). */
  readonly landed: number[];
  readonly checkpoint: unknown;
}

const KILLS: Record<StoreKind, readonly KillPoint[]> = {
  postgres: ['claimed', 'before-write', 'in-write', 'request-sent', 'after-write', 'after-release'],
  redis: ['claimed', 'before-write', 'request-sent', 'after-write', 'after-release'],
};

/** Spreads one kill per point over the run: point i at batch 1 + 3i (releases happen every PER_GRANT batches). */
const planOf = (points: readonly KillPoint[]): Kill[] => points.map((point, index) => ({ point, fromBatch: 1 + 3 * index }));

interface Backend {
  readonly url: string;
  readonly store: Store;
  readonly leaseTable: string;
  readonly target: string;
  landed(key: string): Promise<number[]>;
  close(): Promise<void>;
}

async function postgresBackend(): Promise<Backend> {
  const url = process.env['LEASEFENCE_PG_URL'] ?? '';
  const suffix = randomBytes(4).toString('hex');
  const leaseTable = `exactly_once_leases_${suffix}`;
  const target = `exactly_once_exported_${suffix}`;
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const store = createPostgresStore({ client: pool, table: leaseTable });
  await store.migrate();
  await pool.query(`CREATE TABLE ${target} (id bigserial PRIMARY KEY, batch int NOT NULL, token bigint NOT NULL, proc text NOT NULL)`);
  return {
    url,
    store,
    leaseTable,
    target,
    landed: async () => {
      const { rows } = await pool.query<{ batch: number; count: string }>(`SELECT batch, count(*) AS count FROM ${target} GROUP BY batch`);
      const counts = Array.from({ length: BATCHES }, () => 0);
      for (const row of rows) counts[row.batch] = Number(row.count);
      return counts;
    },
    close: () => pool.end(),
  };
}

async function redisBackend(): Promise<Backend> {
  const url = process.env['LEASEFENCE_REDIS_URL'] ?? '';
  const client = new Redis(url, { maxRetriesPerRequest: 3 });
  const target = `exactly-once-exported-${randomBytes(4).toString('hex')}`;
  return {
    url,
    store: createRedisStore({ client }),
    leaseTable: '',
    target,
    landed: async (key) => {
      const hash = await client.hgetall(`${hashTagOf(key)}:${target}`);
      return Array.from({ length: BATCHES }, (_, batch) => Number(hash[String(batch)] ?? 0));
    },
    close: async () => void client.disconnect(),
  };
}

/** Runs two exporters until one reports the export done, killing at each planned point and respawning. */
async function runExport(kind: StoreKind, mode: ExportMode, plan: readonly Kill[]): Promise<RunReport> {
  const backend = kind === 'postgres' ? await postgresBackend() : await redisBackend();
  const key = `export:${mode}:${randomBytes(4).toString('hex')}`;
  const started = performance.now();
  const kills: RunReport['kills'] = [];
  const live = new Set<ChildProcess>();
  let spawned = 0;
  let pending = [...plan];
  const { script, execArgv } = await exporterEntry();
  try {
    await new Promise<void>((resolve, reject) => {
      const timeout = setTimeout(
        () => reject(new Error(`export did not finish in ${RUN_DEADLINE_MS} ms; kills so far: ${JSON.stringify(kills)}`)),
        RUN_DEADLINE_MS,
      );
      const spawn = (): void => {
        spawned += 1;
        const setup: ExporterSetup = {
          store: kind,
          url: backend.url,
          proc: `e${spawned}`,
          key,
          leaseTable: backend.leaseTable,
          target: backend.target,
          batches: BATCHES,
          perGrant: PER_GRANT,
          ttlMs: TTL_MS,
          mode,
        };
        const child = fork(script, [], {
          execArgv,
          env: { ...process.env, EXACTLY_ONCE_WORKER: JSON.stringify(setup) },
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        });
        live.add(child);
        child.on('exit', (code, signal) => {
          live.delete(child);
          if (signal !== 'SIGKILL' && code !== 0) reject(new Error(`exporter ${setup.proc} exited with ${code ?? signal}`));
        });
        child.on('message', (message: ExporterMessage) => {
          if (message.type === 'done') {
            clearTimeout(timeout);
            resolve();
            return;
          }
          const next = pending[0];
          if (next !== undefined && next.point === message.point && message.batch >= next.fromBatch) {
            pending = pending.slice(1);
            kills.push({ point: message.point, batch: message.batch, token: message.token });
            child.kill('SIGKILL');
            spawn();
            return;
          }
          child.send({ type: 'go' });
        });
      };
      spawn();
      spawn();
    });
    const checkpoint = (await createLeases(backend.store, { holder: 'auditor' }).inspect(key)).checkpoint?.value ?? null;
    return { kills, spawned, ms: Math.round(performance.now() - started), landed: await backend.landed(key), checkpoint };
  } finally {
    for (const child of live) child.kill('SIGKILL');
    await backend.close();
  }
}

const figures: string[] = [];
afterAll(async () => {
  if (entry !== null) {
    const { script, execArgv } = await entry;
    if (execArgv.length === 0) rmSync(script, { force: true });
  }
  if (figures.length > 0)
    console.log(`\nexactly-once progress (${BATCHES} batches, ${PER_GRANT} per grant, TTL ${TTL_MS} ms):\n${figures.join('\n')}`);
});

describe.each<StoreKind>(['postgres', 'redis'])('exactly-once progress on real %s', (kind) => {
  it(
    `a SIGKILL at every point (${KILLS[kind].join(', ')}) never repeats or loses a batch: each of ${BATCHES} lands exactly once`,
    async () => {
      const plan = planOf(KILLS[kind]);
      const report = await runExport(kind, 'atomic', plan);
      figures.push(
        `  ${kind} atomic: ${report.kills.length} kills (${report.kills.map((kill) => `${kill.point}@${kill.batch}`).join(', ')}), ${report.spawned} processes, ${report.ms} ms, landed ${JSON.stringify(report.landed)}`,
      );
      expect(report.kills.map((kill) => kill.point)).toEqual(plan.map((kill) => kill.point));
      expect(report.landed).toEqual(Array.from({ length: BATCHES }, () => 1));
      expect(report.checkpoint).toEqual({ next: BATCHES });
    },
    RUN_DEADLINE_MS + 20_000,
  );

  it(
    'the two-step pattern (write, then checkpoint) repeats a batch when killed between the two: what the atomic step prevents',
    async () => {
      const report = await runExport(kind, 'two-step', [{ point: 'after-write', fromBatch: 4 }]);
      figures.push(`  ${kind} two-step: killed after-write@${report.kills[0]?.batch}, landed ${JSON.stringify(report.landed)}`);
      expect(report.kills).toHaveLength(1);
      const repeated = report.kills[0]!.batch;
      expect(report.landed[repeated]).toBe(2);
      expect(report.landed.filter((count, batch) => batch !== repeated && count !== 1)).toEqual([]);
    },
    RUN_DEADLINE_MS + 20_000,
  );
});
