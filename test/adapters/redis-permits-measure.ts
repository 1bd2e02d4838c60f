/**
 * Hand-run probe (not a test): what one `acquirePermit` costs against one `claim`, through the Redis store (ioredis,
 * one connection, sequential calls) on a throwaway redis-server (no persistence). Each case is N calls of the
 * operation measured (a release follows each, unmeasured, so the next call finds the same state); rounds alternate
 * the cases. Per call: the client's round trip (performance.now around the store call: script, reply parse and the
 * core's check), the script's execution on the server (SLOWLOG, threshold 0, µs), and redis-server's CPU (INFO cpu,
 * user + sys, over the whole case, release included, divided by N).
 *
 *   npx tsx test/adapters/redis-permits-measure.ts      (PROBE_N=2000 calls per case per round, PROBE_ROUNDS=5)
 */
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { ACQUIRE_PERMIT_SCRIPT } from '../../src/adapters/redis/permit-scripts.js';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { CLAIM_SCRIPT } from '../../src/adapters/redis/scripts.js';
import type { AcquirePermitCommand } from '../../src/fence/permits.js';
import type { Fence } from '../../src/fence/types.js';
import { newSecret } from '../../src/secret.js';
import type { Store } from '../../src/store.js';
import { permitCommand } from '../permits/race-checks.js';
import { startRedis } from '../support/redis-server.js';

const N = Number(process.env['PROBE_N'] ?? 2_000);
const ROUNDS = Number(process.env['PROBE_ROUNDS'] ?? 5);

const shaOf = (source: string): string => createHash('sha1').update(source).digest('hex');
const SHAS = new Set([shaOf(CLAIM_SCRIPT), shaOf(ACQUIRE_PERMIT_SCRIPT)]);

type PermitStore = Store & Required<Pick<Store, 'acquirePermit'>>;

/** A case: its label and one measured call, which returns the fence to release afterwards. */
interface Case {
  readonly label: string;
  readonly setup: (store: PermitStore, round: number) => Promise<void>;
  readonly call: (store: PermitStore, round: number) => Promise<Fence>;
}

async function acquired(store: PermitStore, command: AcquirePermitCommand): Promise<Fence> {
  const outcome = await store.acquirePermit(command);
  if (!outcome.ok) throw new Error(`probe: ${command.semaphore} full`);
  return { key: outcome.key, token: outcome.token, secret: command.secret, holder: command.holder, runId: command.runId };
}

/** A semaphore of `limit` with `held` permits held for the whole case: each call reads `held + 1` permits. */
const acquireCase = (limit: number, held: number): Case => ({
  label: `acquirePermit (limit ${limit}, ${held} held: reads ${held + 1} permit${held === 0 ? '' : 's'})`,
  setup: async (store, round) => {
    for (let index = 0; index < held; index += 1) await acquired(store, permitCommand(`s${limit}-${round}`, 'holder', limit, 600_000));
  },
  call: (store, round) => acquired(store, permitCommand(`s${limit}-${round}`, 'w', limit, 60_000)),
});

const CASES: readonly Case[] = [
  {
    label: 'claim (a released key)',
    setup: async () => undefined,
    call: async (store, round) => {
      const secret = newSecret();
      const key = `job:${round}`;
      const outcome = await store.claim({ key, holder: 'w', runId: 'r', secret, ttlMs: 60_000, attributes: {}, recovering: false });
      if (!outcome.ok) throw new Error('probe: claim refused');
      return { key, token: outcome.token, secret, holder: 'w', runId: 'r' };
    },
  },
  acquireCase(1, 0),
  acquireCase(3, 2),
  acquireCase(10, 9),
];

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
const p99 = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.99)] ?? Number.NaN;

async function cpuSeconds(client: Redis): Promise<number> {
  const info = await client.info('cpu');
  const field = (name: string): number => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)?.[1]);
  return field('used_cpu_user') + field('used_cpu_sys');
}

async function main(): Promise<void> {
  const server = await startRedis({ persistence: 'none' });
  const admin = new Redis(server.url);
  const client = new Redis(server.url);
  const store = createRedisStore({ client, prefix: 'probe:' }) as PermitStore;
  const latency = new Map<string, number[]>();
  const execution = new Map<string, number[]>();
  const cpu = new Map<string, number[]>();
  try {
    await admin.call('CONFIG', 'SET', 'slowlog-log-slower-than', '0');
    await admin.call('CONFIG', 'SET', 'slowlog-max-len', String(N * 2 + 100));
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = round % 2 === 0 ? CASES : [...CASES].reverse();
      for (const each of order) {
        await each.setup(store, round);
        // NOTE: one warm-up call (loads the script), then the measured ones.
        await store.release({ fence: await each.call(store, round) });
        await admin.call('SLOWLOG', 'RESET');
        const before = await cpuSeconds(admin);
        for (let index = 0; index < N; index += 1) {
          const started = performance.now();
          const fence = await each.call(store, round);
          latency.set(each.label, [...(latency.get(each.label) ?? []), (performance.now() - started) * 1000]);
          await store.release({ fence });
        }
        cpu.set(each.label, [...(cpu.get(each.label) ?? []), ((await cpuSeconds(admin)) - before) / N]);
        const entries = (await admin.call('SLOWLOG', 'GET', String(N * 2 + 100))) as [number, number, number, string[]][];
        for (const [, , micros, args] of entries)
          if (args[0]?.toUpperCase() === 'EVALSHA' && SHAS.has(args[1] as string))
            execution.set(each.label, [...(execution.get(each.label) ?? []), micros]);
      }
    }
    console.log(`redis-server (test/support, no persistence), ioredis, ${ROUNDS} rounds × ${N} sequential calls per case, alternating\n`);
    console.log(
      '| operation | round trip µs median / mean / p99 | script µs (SLOWLOG) median / mean | redis-server CPU µs per call + release |',
    );
    console.log('|---|---:|---:|---:|');
    for (const { label } of CASES) {
      const trip = latency.get(label) ?? [];
      const run = execution.get(label) ?? [];
      const used = (cpu.get(label) ?? []).map((seconds) => seconds * 1e6);
      console.log(
        `| ${label} | ${median(trip).toFixed(0)} / ${mean(trip).toFixed(0)} / ${p99(trip).toFixed(0)} | ${median(run)} / ${mean(run).toFixed(1)} | ${mean(used).toFixed(1)} |`,
      );
    }
  } finally {
    client.disconnect();
    admin.disconnect();
    await server.stop();
  }
}

await main();
