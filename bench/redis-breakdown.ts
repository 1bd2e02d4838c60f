/**
 * Where leasefence's Redis time goes, measured: the server's time per script call and the client's time
 * per operation, against the raw baselines, plus counterfactual variants of our scripts (built here from
 * the real ones by text edits, sent with the exact arguments the store sent) that price one feature each.
 *
 *   npx tsx bench/redis-breakdown.ts     (BENCH_N=2000 calls per scenario per round, BENCH_ROUNDS=5)
 *
 * Server time: every command is logged by SLOWLOG (threshold 0), whose per-call duration is the time the
 * server spent executing it (not queueing, not the network); reported as the median over all calls of a
 * label, so the load of other processes moves it little. Scenarios run one after another in rounds, in
 * rotated order. Client time: the library's own JS per operation, on a connection that answers from a
 * recording of real replies (no I/O): validation, arguments, reply parsing, the pure core, the handle.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createRedisStore, hashTagOf } from '../src/adapters/redis/index.js';
import { fromIoredis, type RedisConnection } from '../src/adapters/redis/connection.js';
import { keyNames } from '../src/adapters/redis/keys.js';
import { fenceArgs } from '../src/adapters/redis/record.js';
import { defineScript } from '../src/adapters/redis/runner.js';
import { CLAIM_SCRIPT, RELEASE_SCRIPT } from '../src/adapters/redis/scripts.js';
import { MEMO_FIELDS, REMEMBER } from '../src/adapters/redis/script-parts.js';
import { FENCED_WRITE_SCRIPT } from '../src/adapters/redis/write-scripts.js';
import { createLeases } from '../src/leases.js';
import { newSecret } from '../src/secret.js';
import { startRedis } from '../test/support/redis-server.js';
import { cpuPerCycleUs } from './cpu-per-cycle.js';

const N = Number(process.env['BENCH_N'] ?? 2_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const TTL_MS = 600_000;

const COMPARE_AND_DELETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
const CHECK_AND_SET = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('SET', KEYS[2], ARGV[2]) end return 0";
const EMPTY = 'return 1';
const TIME_ONLY = "local t = redis.call('TIME') return 1";

/** Counterfactuals: each drops one feature of a real script (for pricing only; never shipped). */
const VARIANTS: Record<string, string> = {
  // NOTE: the replay memo of fenced writes (find the request in the index, cmsgpack the reply, write index and reply).
  'fencedWrite without replay memo': FENCED_WRITE_SCRIPT.replace(REMEMBER, '').replaceAll(MEMO_FIELDS, "'memos', ''"),
  // NOTE: the up-front checks of a multi-command write (COMMAND INFO per distinct command).
  'fencedWrite without command checks': FENCED_WRITE_SCRIPT.replace('for c = 1, (#commands > 1 and #commands or 0) do', 'for c = 1, 0 do'),
  // NOTE: release replying only status and clock, not the pre-image of the lease field.
  'release with a status-only reply': RELEASE_SCRIPT.replace("return '+' .. clock .. '\\0' .. shown", "return '+' .. clock"),
};

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

/**
 * The library's JS per claim + release without I/O: the store on a connection that answers each script
 * with a reply recorded from a real cycle (so validation, arguments, parsing, the pure core and the handle
 * all run as they do against Redis).
 */
async function cannedCycleUs(): Promise<number> {
  const server = await startRedis({ persistence: 'none' });
  const client = new Redis(server.url);
  try {
    const real = fromIoredis(client);
    const replies = new Map<string, unknown>();
    const recorder: RedisConnection = {
      send: async (args) => {
        const reply = await real.send(args);
        replies.set(String(args[1]), reply);
        return reply;
      },
    };
    const recorded = createLeases(createRedisStore({ client: recorder, prefix: 'canned:' }), { holder: 'bench', ttlMs: TTL_MS });
    // NOTE: the first cycle loads the scripts (NOSCRIPT, then EVAL); the second records EVALSHA replies.
    await recorded.release(await recorded.claimOrThrow('k'));
    replies.clear();
    await recorded.release(await recorded.claimOrThrow('k'));
    const canned: RedisConnection = { send: async (args) => replies.get(String(args[1])) };
    const leases = createLeases(createRedisStore({ client: canned, prefix: 'canned:' }), { holder: 'bench', ttlMs: TTL_MS });
    return await cpuPerCycleUs(async () => leases.release(await leases.claimOrThrow('k')), 20_000);
  } finally {
    client.disconnect();
    await server.stop();
  }
}

async function main(): Promise<void> {
  const server = await startRedis({ persistence: 'none' });
  const client = new Redis(server.url);
  const admin = new Redis(server.url);
  try {
    await admin.config('SET', 'slowlog-log-slower-than', '0');
    // NOTE: a script's own redis.call commands are logged too: room for ~10 entries per call.
    await admin.config('SET', 'slowlog-max-len', String(N * 24 + 100));
    const labels = new Map<string, string>();
    const load = async (label: string, source: string): Promise<string> => {
      const sha = (await admin.script('LOAD', source)) as string;
      labels.set(sha, label);
      return sha;
    };
    for (const [label, source] of [
      ['leasefence claim', CLAIM_SCRIPT],
      ['leasefence release', RELEASE_SCRIPT],
      ['leasefence fencedWrite', FENCED_WRITE_SCRIPT],
    ] as const) {
      labels.set(defineScript(label, source).sha, label);
    }
    const cad = await load('raw compare-and-delete', COMPARE_AND_DELETE);
    const cas = await load('raw check-and-SET', CHECK_AND_SET);
    const empty = await load('EVALSHA return 1 (fixed cost)', EMPTY);
    const time = await load('EVALSHA TIME only', TIME_ONLY);
    const variants = new Map<string, string>();
    for (const [label, source] of Object.entries(VARIANTS)) {
      if (source === FENCED_WRITE_SCRIPT || source === RELEASE_SCRIPT) throw new Error(`variant "${label}" did not change its script`);
      variants.set(label, await load(label, source));
    }

    // A connection that records what the store sends, so that variants replay the exact arguments.
    const real = fromIoredis(client);
    let recording: string[][] | null = null;
    const recorder: RedisConnection = {
      send: (args) => {
        recording?.push([...args]);
        return real.send(args);
      },
    };
    const leases = createLeases(createRedisStore({ client: recorder, prefix: 'bd:' }), { holder: 'bench', ttlMs: TTL_MS });
    const held = await leases.claimOrThrow('write');
    const held2 = await leases.claimOrThrow('write2');
    const data = `${hashTagOf('write')}:data`;
    const [data2, counter] = [`${hashTagOf('write2')}:data`, `${hashTagOf('write2')}:n`];
    const rawLock = `bd:raw:{w}:lock`;
    const rawId = randomUUID();
    await client.set(rawLock, rawId, 'PX', TTL_MS);

    /** Sends a recorded fenced write again with another script's sha, under a fresh request id. */
    const replayAs = (sha: string, command: string[]) => {
      const copy = ['EVALSHA', sha, ...command.slice(2)];
      // NOTE: EVALSHA sha numkeys KEYS..., then token, secret, who, attribute count, request id.
      copy[3 + Number(command[2]) + 4] = newSecret();
      return real.send(copy);
    };
    recording = [];
    await leases.fencedWrite(held, (tx) => tx.call('SET', data, 'x'));
    const oneWrite = recording[0] as string[];
    recording = [];
    await leases.fencedWrite(held2, (tx) => {
      void tx.call('INCR', counter);
      return tx.call('SET', data2, 'x');
    });
    const twoWrites = recording[0] as string[];
    recording = null;

    const scenarios: Record<string, () => Promise<unknown>> = {
      'raw cycle': async () => {
        const id = randomUUID();
        await client.set('bd:raw:cycle', id, 'PX', TTL_MS, 'NX');
        await client.evalsha(cad, 1, 'bd:raw:cycle', id);
      },
      'leasefence cycle': async () => leases.release(await leases.claimOrThrow('cycle')),
      'fixed costs': async () => {
        await client.evalsha(empty, 0);
        await client.evalsha(time, 0);
      },
      'raw check-and-SET': () => client.evalsha(cas, 2, rawLock, 'bd:raw:{w}:data', rawId, 'x'),
      'fencedWrite, 1 command': () => leases.fencedWrite(held, (tx) => tx.call('SET', data, 'x')),
      'fencedWrite, 2 commands': () =>
        leases.fencedWrite(held2, (tx) => {
          void tx.call('INCR', counter);
          return tx.call('SET', data2, 'x');
        }),
      'variant: no memo': () => replayAs(variants.get('fencedWrite without replay memo') as string, oneWrite),
      'variant: no command checks': () => replayAs(variants.get('fencedWrite without command checks') as string, twoWrites),
      'variant: short release reply': async () => {
        const lease = await leases.claimOrThrow('short-release');
        const released = await real.send([
          'EVALSHA',
          variants.get('release with a status-only reply') as string,
          '1',
          keyNames('bd:').record('short-release', 'lease'),
          ...fenceArgs(lease.fence()),
        ]);
        if (!String(released).startsWith('+')) throw new Error('variant release: not released');
      },
    };

    const durations = new Map<string, number[]>();
    let memoBytes = 0;
    const perOperation = new Map<string, { serverUs: number[]; clientUs: number[] }>();
    const names = Object.keys(scenarios);
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const name of [...names.slice(round % names.length), ...names.slice(0, round % names.length)]) {
        await admin.slowlog('RESET');
        await admin.config('RESETSTAT');
        const cpuBefore = process.cpuUsage();
        for (let i = 0; i < N; i += 1) await scenarios[name]?.();
        const cpu = process.cpuUsage(cpuBefore);
        const stats = await admin.info('commandstats');
        let usec = 0;
        for (const [, command = '', total] of stats.matchAll(/^cmdstat_([^:]+):calls=\d+,usec=(\d+)/gm)) {
          // NOTE: commands run inside scripts are counted inside the script's time too; count client commands only.
          if (['evalsha', 'set', 'get', 'del'].includes(command) && !(command !== 'evalsha' && name.startsWith('fencedWrite')))
            usec += Number(total);
        }
        const totals = perOperation.get(name) ?? { serverUs: [], clientUs: [] };
        totals.serverUs.push(usec / N);
        totals.clientUs.push((cpu.user + cpu.system) / N);
        perOperation.set(name, totals);
        if (name === 'fencedWrite, 1 command')
          memoBytes = String(await client.hget(keyNames('bd:').record('write', 'lease'), 'memos')).length;
        const entries = (await admin.slowlog('GET', -1)) as [number, number, number, string[]][];
        for (const [, , micros, args] of entries) {
          const command = String(args[0]).toUpperCase();
          if (command === 'SLOWLOG' || command === 'CONFIG') continue;
          const script = labels.get(String(args[1]));
          const label =
            command === 'EVALSHA'
              ? script === 'leasefence fencedWrite'
                ? `${script} (${name})`
                : (script ?? `EVALSHA ${String(args[1]).slice(0, 8)}`)
              : `${command}${command === 'SET' && args.length > 3 ? ' NX PX' : ''} (in: ${name})`;
          const list = durations.get(label) ?? [];
          list.push(micros);
          durations.set(label, list);
        }
      }
    }
    console.log(
      `redis-server ${/redis_version:(\S+)/.exec(await admin.info('server'))?.[1] ?? '?'}, ${ROUNDS} rounds × ${N} calls per scenario; SLOWLOG durations (server execution time)\n`,
    );
    console.log('| command or script | calls | median µs | mean µs |\n|---|---:|---:|---:|');
    for (const [label, list] of [...durations].sort((a, b) => a[0].localeCompare(b[0]))) {
      console.log(
        `| ${label} | ${list.length} | ${median(list).toFixed(1)} | ${(list.reduce((s, v) => s + v, 0) / list.length).toFixed(1)} |`,
      );
    }
    console.log(
      '\n| scenario (per operation) | server µs (INFO commandstats, commands the client sent) | client CPU µs (this process) |\n|---|---:|---:|',
    );
    for (const [name, totals] of perOperation)
      console.log(`| ${name} | ${median(totals.serverUs).toFixed(1)} | ${median(totals.clientUs).toFixed(1)} |`);
    console.log(
      `\nleasefence's own JS per claim + release on a connection that answers from recorded replies (no I/O): ${(await cannedCycleUs()).toFixed(2)} µs`,
    );
    const sizeProbe = await leases.claimOrThrow('size-probe');
    const released = String(
      await real.send([
        'EVALSHA',
        defineScript('release', RELEASE_SCRIPT).sha,
        '1',
        keyNames('bd:').record('size-probe', 'lease'),
        ...fenceArgs(sizeProbe.fence()),
      ]),
    );
    const written = (await real.send(oneWrite)) as unknown[];
    console.log(
      `\nreply sizes: release ${released.length} bytes; fenced write (1 command) ${JSON.stringify(written).length} bytes as JSON; replay memo field of a lease after ${N} writes: ${memoBytes} bytes`,
    );
  } finally {
    client.disconnect();
    admin.disconnect();
    await server.stop();
  }
}

await main();
