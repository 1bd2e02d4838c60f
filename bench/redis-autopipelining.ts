/**
 * Why ioredis `enableAutoPipelining` costs leasefence more than raw commands (issue 12, round three):
 * 32 workers, each contender on a plain client and on an auto-pipelining one, interleaved in short
 * slices (5 rounds), with each auto-pipeline's size, the time from its `exec` to its last reply (the
 * server's phase) and from that to the next `exec` (the client's phase).
 *
 *   npx tsx bench/redis-autopipelining.ts      (BENCH_ROUNDS=5, BENCH_SLICE_MS=400, BENCH_SPIN=25)
 *
 * "raw, server-heavy" is the raw cycle as two scripts made about as costly on the server as leasefence's
 * (BENCH_SPIN SHA-1s per call): if it loses as much as leasefence, the loss is the
 * server's share of a cycle, not something in leasefence's client code.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createRedisStore } from '../src/adapters/redis/index.js';
import { createLeases } from '../src/leases.js';
import { startRedis } from '../test/support/redis-server.js';

const WORKERS = 32;
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const SLICE_MS = Number(process.env['BENCH_SLICE_MS'] ?? 400);
const SPIN = process.env['BENCH_SPIN'] ?? '25';
const TTL_MS = 30_000;
const COMPARE_AND_DELETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
/** SET NX PX and compare-and-delete, each after ARGV[2] SHA-1s of ARGV[1]: more server time only. */
const HEAVY_SET =
  "for i = 1, tonumber(ARGV[2]) do redis.sha1hex(ARGV[1]) end return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3], 'NX')";
const HEAVY_DELETE = `for i = 1, tonumber(ARGV[2]) do redis.sha1hex(ARGV[1]) end ${COMPARE_AND_DELETE}`;

type Cycle = (worker: number) => Promise<void>;

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1] ?? Number.NaN;

/** Per-pipeline figures of one slice on the auto-pipelining client. */
interface Phases {
  sizes: number[];
  client: number[];
  server: number[];
  lastDone: number;
}

/** Wraps `client.pipeline` to time each auto-pipeline: exec → its last reply, and last reply → next exec. */
function timePipelines(client: Redis, phases: Phases): void {
  const pipeline = client.pipeline.bind(client);
  Object.assign(client, {
    pipeline: (...args: Parameters<Redis['pipeline']>) => {
      const made = pipeline(...args);
      const exec = made.exec.bind(made);
      Object.assign(made, {
        exec: (callback: (error: unknown, results: unknown) => void) => {
          const start = performance.now();
          phases.sizes.push(made.length);
          if (phases.lastDone > 0) phases.client.push(start - phases.lastDone);
          return exec((error, results) => {
            phases.lastDone = performance.now();
            phases.server.push(phases.lastDone - start);
            callback(error, results);
          });
        },
      });
      return made;
    },
  });
}

async function slice(cycle: Cycle, ms: number): Promise<number> {
  let cycles = 0;
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, worker) => {
      while (performance.now() < end) {
        await cycle(worker);
        cycles += 1;
      }
    }),
  );
  return cycles / (ms / 1000);
}

async function main(): Promise<void> {
  const server = await startRedis({ persistence: 'none' });
  const plain = new Redis(server.url);
  const pipelining = new Redis(server.url, { enableAutoPipelining: true });
  // NOTE: ioredis compares the command name as given; leasefence sends 'EVALSHA'.
  const ignoring = new Redis(server.url, { enableAutoPipelining: true, autoPipeliningIgnoredCommands: ['evalsha', 'EVALSHA'] });
  const phases: Phases = { sizes: [], client: [], server: [], lastDone: 0 };
  timePipelines(pipelining, phases);
  try {
    const cad = (await plain.script('LOAD', COMPARE_AND_DELETE)) as string;
    const heavySet = (await plain.script('LOAD', HEAVY_SET)) as string;
    const heavyDelete = (await plain.script('LOAD', HEAVY_DELETE)) as string;
    let prefixes = 0;
    const contenders: Record<string, (client: Redis) => Cycle> = {
      'raw SET NX PX + compare-and-delete': (client) => async (worker) => {
        const id = randomUUID();
        await client.set(`ap:raw:${worker}`, id, 'PX', TTL_MS, 'NX');
        await client.evalsha(cad, 1, `ap:raw:${worker}`, id);
      },
      'raw, server-heavy (both steps scripts with BENCH_SPIN SHA-1s)': (client) => async (worker) => {
        const id = randomUUID();
        if ((await client.evalsha(heavySet, 1, `ap:heavy:${worker}`, id, SPIN, TTL_MS)) !== 'OK') throw new Error('raw: not acquired');
        await client.evalsha(heavyDelete, 1, `ap:heavy:${worker}`, id, SPIN);
      },
      'leasefence claim + release': (client) => {
        const leases = createLeases(createRedisStore({ client, prefix: `ap:lf:${++prefixes}:` }), { holder: 'bench', ttlMs: TTL_MS });
        return async (worker) => {
          const claimed = await leases.claim(`k${worker}`);
          if (!claimed.ok) throw new Error('leasefence: not granted');
          await leases.release(claimed.lease);
        };
      },
    };
    const rows: { name: string; plain: Cycle; other: Cycle; other_name: string; timed: boolean }[] = [];
    for (const [name, make] of Object.entries(contenders)) {
      rows.push({ name, plain: make(plain), other: make(pipelining), other_name: 'enableAutoPipelining', timed: true });
      rows.push({
        name,
        plain: make(plain),
        other: make(ignoring),
        other_name: "enableAutoPipelining, autoPipeliningIgnoredCommands ['evalsha', 'EVALSHA']",
        timed: false,
      });
    }
    const results = rows.map(() => ({
      ratio: [] as number[],
      plain: [] as number[],
      other: [] as number[],
      size: [] as number[],
      client: [] as number[],
      server: [] as number[],
    }));
    for (let round = 0; round < ROUNDS; round += 1) {
      for (let r = 0; r < rows.length; r += 1) {
        const index = (r + round) % rows.length;
        const row = rows[index]!;
        const result = results[index]!;
        await slice(row.plain, 50);
        await slice(row.other, 50);
        // NOTE: alternate which goes first, so that drift hits both alike.
        const first = round % 2 === 0;
        const a = first ? await slice(row.plain, SLICE_MS) : 0;
        Object.assign(phases, { sizes: [], client: [], server: [], lastDone: 0 });
        const b = await slice(row.other, SLICE_MS);
        const measured = { ...phases };
        const c = first ? a : await slice(row.plain, SLICE_MS);
        result.plain.push(c);
        result.other.push(b);
        result.ratio.push(b / c);
        if (row.timed) {
          result.size.push(median(measured.sizes));
          result.client.push(median(measured.client) * 1000);
          result.server.push(median(measured.server) * 1000);
        }
      }
    }
    console.log(`${WORKERS} workers, ${ROUNDS} rounds × ${SLICE_MS} ms slices; medians over rounds\n`);
    console.log(
      '| contender | client setting | cycles/s plain | cycles/s with the setting | ÷ plain | pipeline size | µs per pipeline: exec → last reply | µs: last reply → next exec |',
    );
    console.log('|---|---|---:|---:|---:|---:|---:|---:|');
    rows.forEach((row, index) => {
      const result = results[index]!;
      const timed = row.timed
        ? `${median(result.size).toFixed(0)} | ${median(result.server).toFixed(0)} | ${median(result.client).toFixed(0)}`
        : ' |  | ';
      console.log(
        `| ${row.name} | ${row.other_name} | ${median(result.plain).toFixed(0)} | ${median(result.other).toFixed(0)} | ${median(result.ratio).toFixed(2)} | ${timed} |`,
      );
    });
  } finally {
    plain.disconnect();
    pipelining.disconnect();
    ignoring.disconnect();
    await server.stop();
  }
}

await main();
