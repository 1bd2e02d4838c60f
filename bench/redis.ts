/**
 * Redis benchmark: acquire + release cycles for leasefence and its peers, on one ephemeral redis-server
 * (no persistence: this measures the libraries, not the disk) and one shared ioredis client.
 *
 *   npx tsx bench/redis.ts            (BENCH_MS=500 per measurement, BENCH_ROUNDS=9, medians reported)
 *   npx tsx bench/redis.ts --quick    (BENCH_MS=300, 3 rounds: a smoke run)
 *   BENCH_COMPARE=/path/to/other/src npx tsx bench/redis.ts   (adds that tree's leasefence: before/after)
 *   npx tsx bench/redis.ts --breakdown   (adds leasefence's own two scripts sent without the library: what the
 *                                         server and the wire cost; the rest of leasefence's cost is its JS)
 *
 * Measured sequentially (one worker) and with 32 concurrent workers, each on its own key (no contention:
 * retry policies play no part), per acquire + release cycle:
 * - throughput (cycles/s, and as a ratio to the raw baseline): depends on machine load;
 * - CPU µs per cycle, which depends on load less: client (`process.cpuUsage()` of this Node process:
 *   the library, ioredis, syscalls) and server (redis-server's `INFO cpu`, user + sys), and the server's
 *   time executing the commands the client sent (`INFO commandstats` usec), with usec_per_call per
 *   command (a script's own `redis.call`s listed too). Compare them within one run: a loaded machine
 *   inflates all of them (context switches, cache misses).
 * leasefence's cycle is `leases.claim` + `leases.release` through the public API (it also mints a fencing
 * token, records the holder and keeps the key's history, which no peer does). The raw baseline is
 * `SET key id NX PX` + a compare-and-delete script by EVALSHA.
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import { createLock, IoredisAdapter } from 'redlock-universal';
import { Redlock } from '@sesamecare-oss/redlock';
import { createLeases } from '../src/leases.js';
import { newSecret } from '../src/secret.js';
import { createRedisStore } from '../src/adapters/redis/index.js';
import { fromIoredis } from '../src/adapters/redis/connection.js';
import { claimArgs, fenceArgs, SEP } from '../src/adapters/redis/record.js';
import { defineScript, runScript } from '../src/adapters/redis/runner.js';
import { CLAIM_SCRIPT, RELEASE_SCRIPT } from '../src/adapters/redis/scripts.js';
import { startRedis } from '../test/support/redis-server.js';

const QUICK = process.argv.includes('--quick');
const MEASURE_MS = Number(process.env['BENCH_MS'] ?? (QUICK ? 300 : 500));
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? (QUICK ? 3 : 9));
const COMPARE = process.env['BENCH_COMPARE'];
const BREAKDOWN = process.argv.includes('--breakdown');
const WORKERS = 32;
const TTL_MS = 30_000;

/** One library: `prepare(key)` returns the acquire+release cycle for that key (setup outside the timing). */
interface Contender {
  readonly name: string;
  prepare(key: string): () => Promise<void>;
}

const COMPARE_AND_DELETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

type LeasesFactory = typeof createLeases;
type StoreFactory = typeof createRedisStore;

function leasefence(name: string, client: Redis, prefix: string, makeLeases: LeasesFactory, makeStore: StoreFactory): Contender {
  const leases = makeLeases(makeStore({ client, prefix }), { holder: 'bench', ttlMs: TTL_MS });
  return {
    name,
    prepare: (key) => async () => {
      const claimed = await leases.claim(key);
      if (!claimed.ok) throw new Error(`${name}: not granted`);
      await leases.release(claimed.lease);
    },
  };
}

/** Another checkout's `src/` (BENCH_COMPARE), to compare a change against what it replaces in one run. */
async function compared(client: Redis): Promise<Contender[]> {
  if (COMPARE === undefined || COMPARE === '') return [];
  const root = resolve(COMPARE);
  const other = (await import(pathToFileURL(`${root}/leases.ts`).href)) as { createLeases: LeasesFactory };
  const adapter = (await import(pathToFileURL(`${root}/adapters/redis/index.ts`).href)) as { createRedisStore: StoreFactory };
  return [leasefence(`leasefence (${COMPARE})`, client, 'bench:lfc:', other.createLeases, adapter.createRedisStore)];
}

/**
 * leasefence's claim and release scripts, with its own argument encoding, sent without the library: no
 * pure-core judgement, no lease handle, a minimal reply parse. Same server work and wire as leasefence.
 */
function scriptsAlone(client: Redis): Contender {
  const connection = fromIoredis(client);
  const [claim, release] = [defineScript('claim', CLAIM_SCRIPT), defineScript('release', RELEASE_SCRIPT)];
  return {
    name: 'leasefence scripts alone (no library JS)',
    prepare: (key) => {
      const record = `bench:lfs:{${key}}:lease`;
      return async () => {
        const secret = newSecret();
        // FREE reply: status clock SEP recovery SEP checkpoint (3 parts) SEP token SEP ending
        const parts = String(await runScript(connection, claim, [record], claimArgs(secret, 'bench', null, TTL_MS, {}, false))).split(SEP);
        if (!parts[0]?.startsWith('+')) throw new Error('scripts alone: not granted');
        const [floor, next] = [BigInt(parts[0].slice(1)), BigInt(parts[5] === '' ? '0' : (parts[5] ?? '0')) + 1n];
        const fence = { key, token: next > floor ? next : floor, secret, holder: 'bench', runId: null };
        if (!String(await runScript(connection, release, [record], fenceArgs(fence))).startsWith('+')) throw new Error('scripts alone: not released');
      };
    },
  };
}

function contenders(client: Redis, compareAndDeleteSha: string): Contender[] {
  const redlock = new Redlock([client], { retryCount: 0 });
  const adapter = new IoredisAdapter(client);
  return [
    {
      name: 'raw SET NX PX + compare-and-delete',
      prepare: (key) => async () => {
        const id = randomUUID();
        if ((await client.set(`bench:raw:${key}`, id, 'PX', TTL_MS, 'NX')) !== 'OK') throw new Error('raw: not acquired');
        await client.evalsha(compareAndDeleteSha, 1, `bench:raw:${key}`, id);
      },
    },
    leasefence('leasefence (claim + release)', client, 'bench:lf:', createLeases, createRedisStore),
    {
      name: 'redlock-universal',
      prepare: (key) => {
        const lock = createLock({ adapter, key: `bench:rlu:${key}`, ttl: TTL_MS });
        return async () => void (await lock.release(await lock.acquire()));
      },
    },
    {
      name: 'redis-semaphore (Mutex)',
      prepare: (key) => {
        const mutex = new Mutex(client, `bench:sem:${key}`, { lockTimeout: TTL_MS, refreshInterval: 0 });
        return async () => {
          await mutex.acquire();
          await mutex.release();
        };
      },
    },
    {
      name: '@sesamecare-oss/redlock',
      prepare: (key) => async () => void (await (await redlock.acquire([`bench:srl:${key}`], TTL_MS)).release()),
    },
  ];
}

/** One measurement: throughput and what each cycle cost, client and server. */
interface Sample {
  /** Cycles per second. */
  readonly rate: number;
  /** This process (Node, ioredis, the library): user + sys CPU µs per cycle. */
  readonly client: number;
  /** redis-server: user + sys CPU µs per cycle (`INFO cpu`). */
  readonly server: number;
  /** redis-server's execution time per cycle of the commands the client sent (`INFO commandstats` usec). */
  readonly commands: number;
  /** usec_per_call and calls per cycle of each command the cycle ran on the server. */
  readonly perCommand: ReadonlyMap<string, { readonly usecPerCall: number; readonly perCycle: number }>;
}

const serverCpuSeconds = async (client: Redis): Promise<number> => {
  const info = await client.info('cpu');
  const field = (name: string): number => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
  return field('used_cpu_user') + field('used_cpu_sys');
};

/** Runs `workers` concurrent loops of the contender's cycle for `MEASURE_MS`, measuring rate and CPU. */
async function measure(client: Redis, contender: Contender, sent: ReadonlySet<string>, workers: number, round: number): Promise<Sample> {
  const cycles = Array.from({ length: workers }, (_, worker) => contender.prepare(`r${round}:w${worker}:${workers}`));
  await client.config('RESETSTAT');
  const serverBefore = await serverCpuSeconds(client);
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  const deadline = started + MEASURE_MS;
  let count = 0;
  await Promise.all(
    cycles.map(async (cycle) => {
      while (performance.now() < deadline) {
        await cycle();
        count += 1;
      }
    }),
  );
  const elapsed = performance.now() - started;
  const clientUsed = process.cpuUsage(clientBefore);
  const serverUsed = (await serverCpuSeconds(client)) - serverBefore;
  const stats = await client.info('commandstats');
  const perCommand = new Map<string, { usecPerCall: number; perCycle: number }>();
  let usec = 0;
  for (const [, name = '', calls, total] of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    if (name === 'info' || name.startsWith('config')) continue;
    // NOTE: a script's own redis.call commands are counted both on their own and inside the script's time.
    if (sent.has(name)) usec += Number(total);
    perCommand.set(name, { usecPerCall: Number(total) / Number(calls), perCycle: Number(calls) / count });
  }
  return {
    rate: (count * 1_000) / elapsed,
    client: (clientUsed.user + clientUsed.system) / count,
    server: (serverUsed * 1e6) / count,
    commands: usec / count,
    perCommand,
  };
}

/** Commands one cycle sends (client side) and their names, measured over a few cycles after a warm-up. */
async function commandsPerCycle(client: Redis, contender: Contender): Promise<{ count: number; names: Set<string> }> {
  const cycle = contender.prepare('count');
  await cycle();
  const original = client.sendCommand.bind(client);
  let sent = 0;
  const names = new Set<string>();
  client.sendCommand = ((...args: Parameters<Redis['sendCommand']>) => {
    sent += 1;
    names.add(args[0].name.toLowerCase());
    return original(...args);
  }) as Redis['sendCommand'];
  for (let i = 0; i < 10; i += 1) await cycle();
  client.sendCommand = original;
  return { count: sent / 10, names };
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const pad = (text: string, width: number, right = false): string => (right ? text.padStart(width) : text.padEnd(width));

interface Results {
  readonly sequential: Sample[];
  readonly concurrent: Sample[];
  readonly commands: number;
  readonly sent: Set<string>;
}

function report(results: Map<string, Results>, rawName: string): void {
  const raw = results.get(rawName)!;
  const [rawSequential, rawConcurrent] = [median(raw.sequential.map((s) => s.rate)), median(raw.concurrent.map((s) => s.rate))];
  const num = (value: number, width: number, digits = 0): string => pad(value.toFixed(digits), width, true);
  console.log(
    [pad('', 38), pad('', 4), pad('sequential (1 worker)', 39, true), pad(`${WORKERS} workers`, 39, true)].join(' '),
  );
  const columns = [pad('cycles/s', 8, true), pad('vs raw', 6, true), pad('client', 7, true), pad('server', 7, true), pad('cmd', 6, true)].join(' ');
  console.log([pad('library', 38), pad('cmds', 4, true), columns, columns].join(' '));
  for (const [name, entry] of results) {
    const half = (samples: Sample[], rawRate: number): string => {
      const rate = median(samples.map((s) => s.rate));
      const cpu = (pick: (sample: Sample) => number): number => median(samples.map(pick));
      return [num(rate, 8), num(rate / rawRate, 6, 2), num(cpu((s) => s.client), 7, 1), num(cpu((s) => s.server), 7, 1), num(cpu((s) => s.commands), 6, 1)].join(' ');
    };
    console.log([pad(name.length > 38 ? `${name.slice(0, 37)}…` : name, 38), num(entry.commands, 4, 1), half(entry.sequential, rawSequential), half(entry.concurrent, rawConcurrent)].join(' '));
  }
  for (const [label, pick] of [['sequential', (entry: Results) => entry.sequential], [`${WORKERS} workers`, (entry: Results) => entry.concurrent]] as const) {
    console.log(`\nserver usec_per_call (calls per cycle), ${label}; the client's commands first, then those run inside scripts:`);
    for (const [name, entry] of results) {
      const samples = pick(entry);
      const names = [...new Set(samples.flatMap((sample) => [...sample.perCommand.keys()]))].sort((a, b) => Number(entry.sent.has(b)) - Number(entry.sent.has(a)));
      const parts = names.map((command) => {
        const of = samples.map((sample) => sample.perCommand.get(command)).filter((stat) => stat !== undefined);
        return `${command} ${median(of.map((stat) => stat.usecPerCall)).toFixed(2)} (×${median(of.map((stat) => stat.perCycle)).toFixed(1)})`;
      });
      console.log(`  ${pad(name, 38)} ${parts.join(', ')}`);
    }
  }
}

async function main(): Promise<void> {
  const server = await startRedis({ persistence: 'none' });
  const client = new Redis(server.url);
  try {
    const sha = (await client.script('LOAD', COMPARE_AND_DELETE)) as string;
    const all = [...contenders(client, sha), ...(BREAKDOWN ? [scriptsAlone(client)] : []), ...(await compared(client))];
    const results = new Map<string, Results>();
    for (const contender of all) {
      const { count, names } = await commandsPerCycle(client, contender);
      results.set(contender.name, { sequential: [], concurrent: [], commands: count, sent: names });
    }
    // NOTE: a warm-up, then many short rounds that interleave the contenders, each round in a rotated order,
    // so drift (JIT, CPU heat, the load of other processes) hits all alike; medians over the rounds.
    for (const contender of all) await measure(client, contender, results.get(contender.name)!.sent, WORKERS, -1);
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const contender of [...all.slice(round % all.length), ...all.slice(0, round % all.length)]) {
        const entry = results.get(contender.name)!;
        entry.sequential.push(await measure(client, contender, entry.sent, 1, round));
        entry.concurrent.push(await measure(client, contender, entry.sent, WORKERS, round));
      }
    }
    const info = (await client.info('server')).match(/redis_version:(\S+)/)?.[1] ?? '?';
    console.log(`redis-server ${info} (no persistence), node ${process.version}, ioredis, ${MEASURE_MS} ms x ${ROUNDS} rounds (medians)`);
    console.log('cmds: commands sent per cycle; client, server: CPU µs per cycle (this Node process, redis-server: user + sys);');
    console.log('cmd: µs per cycle the server spent executing the commands sent (INFO commandstats)\n');
    report(results, all[0]!.name);
  } finally {
    client.disconnect();
    await server.stop();
  }
}

await main();
