/**
 * Each guarantee of leasefence's Redis scripts priced as a measured difference (issue 12, round three):
 * counterfactual variants of the real claim, release and fenced-write scripts (text edits, never
 * shipped), each dropping one guarantee, run interleaved with the real scripts and the raw baselines in
 * short blocks of BENCH_BLOCK cycles, in an order rotated every round, so that drift and order hit all
 * alike (round two found that scenario order alone made a false 8 µs).
 *
 *   npx tsx bench/redis-guarantees.ts       (BENCH_ROUNDS=40, BENCH_BLOCK=50)
 *   BENCH_COMPARE=/tmp/before/src npx tsx bench/redis-guarantees.ts
 *
 * BENCH_COMPARE=<another checkout's src/> adds rows running that checkout's claim, release and fenced-write
 * scripts with this checkout's arguments (so only a change of the Lua, not of the arguments, compares),
 * and a second copy of this checkout's scripts as the noise control; BENCH_VARIANTS=0 leaves out the
 * counterfactual rows.
 *
 * Two figures per cycle: the server's execution time of the scripts (SLOWLOG, threshold 0, 1 µs
 * resolution: a trimmed mean over every call, 10% cut at each end; even rounds) and redis-server's whole CPU
 * (`INFO cpu` per block, odd rounds, SLOWLOG off, which also counts reading the request, writing the reply and the socket:
 * the cost of more arguments shows there). The variants are sent with the arguments the store sends.
 */
import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { fromIoredis } from '../src/adapters/redis/connection.js';
import { PUBLISH_FREED } from '../src/adapters/redis/freed-channel.js';
import { keyNames } from '../src/adapters/redis/keys.js';
import { claimArgs, fenceArgs } from '../src/adapters/redis/record.js';
import { CLAIM_SCRIPT, RELEASE_SCRIPT } from '../src/adapters/redis/scripts.js';
import { MEMO_FIELDS, REMEMBER } from '../src/adapters/redis/script-parts.js';
import { FENCED_WRITE_SCRIPT } from '../src/adapters/redis/write-scripts.js';
import { newSecret } from '../src/secret.js';
import { startRedis } from '../test/support/redis-server.js';
import { redisCpuUs } from './redis-groups.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 40);
const COMPARE = process.env['BENCH_COMPARE'];
const VARIANTS = process.env['BENCH_VARIANTS'] !== '0';
const BLOCK = Number(process.env['BENCH_BLOCK'] ?? 50);
const TTL_MS = '600000';
const COMPARE_AND_DELETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
const CHECK_AND_SET = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('SET', KEYS[2], ARGV[2]) end return 0";
const EMPTY = 'return 1';

/** Replaces `from` in `source` (which must contain it) with `to`. */
function edit(source: string, from: string, to: string): string {
  if (!source.includes(from)) throw new Error(`variant: ${JSON.stringify(from.slice(0, 60))} not in the script`);
  return source.replaceAll(from, to);
}

/** Cuts `source` from `start` to the end of `end` (both must be in it, in that order) and puts `to` there. */
function cut(source: string, start: string, end: string, to: string): string {
  const from = source.indexOf(start);
  const until = source.indexOf(end, from);
  if (from < 0 || until < 0) throw new Error(`variant: ${JSON.stringify(start.slice(0, 60))} … not in the script`);
  return source.slice(0, from) + to + source.slice(until + end.length);
}

// NOTE: the clock passed by the client as the last two KEYS (seconds, µs) instead of `TIME`.
const CLIENT_CLOCK = '{KEYS[#KEYS - 1], KEYS[#KEYS]}';
const noTime = (source: string): string => edit(source, "redis.call('TIME')", CLIENT_CLOCK);
const noClaimHash = (source: string): string => edit(source, 'redis.sha1hex(ARGV[1])', 'ARGV[1]');
// NOTE: the fence's secret is sent as its SHA-1 hex by the client for this variant (see `hashed` below).
const noFenceHash = (source: string): string => edit(source, 'redis.sha1hex(ARGV[2])', 'ARGV[2]');
const noFloor = (source: string): string =>
  cut(source, '  if base and tonumber(base) + 1 > tonumber(clock) then', '    next_token = bumped\n  end\n', '');
const FREE_REPLY =
  "return status .. clock .. '\\0' .. (v[4] or '') .. '\\0' .. ((v[3] and v[3] ~= '') and v[3] or '\\0\\0') .. '\\0' .. (token or '') .. '\\0' .. (v[2] or '')";
const noClaimPreImage = (source: string): string => edit(source, FREE_REPLY, 'return status .. clock');
const noReleasePreImage = (source: string): string => edit(source, "return '+' .. clock .. '\\0' .. shown", "return '+' .. clock");
const noPublish = (source: string): string => edit(source, PUBLISH_FREED('released'), '');
const noMemo = (source: string): string => edit(edit(source, REMEMBER, ''), MEMO_FIELDS, "'memos', ''");
const noDecode = (source: string): string =>
  cut(
    source,
    '\nlocal firsts, lasts, counted = {}, {}, {}\n',
    '  pos = pos + argc + 1\nend\n',
    '\nlocal commands, firsts, lasts, counted = 1, {at + 3}, {at + 5}, {}\nlocal pos = at + 5\n',
  );

/** The recorded SET of a fenced write as script arguments: tagged for scripts before issue 27, as sent after. */
const setArgs = (base: Scripts, data: string): string[] =>
  base === THIS ? ['1', '-3', 'SET', data, 'x'] : ['1', '-3', 'vSET', 'k2', 'vx'];

/** Which counterfactual edits a variant applies; the client adapts its arguments to them. */
interface Drops {
  readonly time?: boolean;
  readonly hash?: boolean;
  readonly floor?: boolean;
  readonly preImage?: boolean;
  readonly publish?: boolean;
  readonly memo?: boolean;
  readonly decode?: boolean;
}

const CYCLE_VARIANTS: Record<string, Drops> = {
  'leasefence claim + release (real scripts)': {},
  'without TIME (client-passed clock)': { time: true },
  "without the secret's SHA-1": { hash: true },
  'without the token floor (token = clock)': { floor: true },
  'without the pre-image in the replies': { preImage: true },
  'without the SPUBLISH on release': { publish: true },
  'without all five': { time: true, hash: true, floor: true, preImage: true, publish: true },
};

const WRITE_VARIANTS: Record<string, Drops> = {
  'leasefence fencedWrite(one SET) (real script)': {},
  'without TIME (client-passed clock)': { time: true },
  "without the secret's SHA-1": { hash: true },
  'without the replay memo': { memo: true },
  'without decoding the recorded command': { decode: true },
  'without all four': { time: true, hash: true, memo: true, decode: true },
};

/** Another checkout's scripts (BENCH_COMPARE). */
interface Scripts {
  readonly claim: string;
  readonly release: string;
  readonly write: string;
}

const THIS: Scripts = { claim: CLAIM_SCRIPT, release: RELEASE_SCRIPT, write: FENCED_WRITE_SCRIPT };

async function scriptsOf(src: string): Promise<Scripts> {
  const lua = (await import(`${src}/adapters/redis/scripts.ts`)) as typeof import('../src/adapters/redis/scripts.js');
  const writes = (await import(`${src}/adapters/redis/write-scripts.ts`)) as typeof import('../src/adapters/redis/write-scripts.js');
  return { claim: lua.CLAIM_SCRIPT, release: lua.RELEASE_SCRIPT, write: writes.FENCED_WRITE_SCRIPT };
}

function cycleScripts(drops: Drops, base: Scripts = THIS): { claim: string; release: string } {
  let claim = base.claim;
  let release = base.release;
  if (drops.time) [claim, release] = [noTime(claim), noTime(release)];
  if (drops.hash) [claim, release] = [noClaimHash(claim), noFenceHash(release)];
  if (drops.floor) claim = noFloor(claim);
  if (drops.preImage) [claim, release] = [noClaimPreImage(claim), noReleasePreImage(release)];
  if (drops.publish) release = noPublish(release);
  return { claim, release };
}

function writeScript(drops: Drops, base: Scripts = THIS): string {
  let script = base.write;
  if (drops.time) script = noTime(script);
  if (drops.hash) script = noFenceHash(script);
  if (drops.memo) script = noMemo(script);
  if (drops.decode) script = noDecode(script);
  return script;
}

let lastClock = 0;
/** A client clock for the `time` variants: epoch µs, strictly increasing, as `TIME`'s two parts. */
function clientClock(): [string, string] {
  lastClock = Math.max(Date.now() * 1000, lastClock + 1);
  return [String(Math.floor(lastClock / 1e6)), String(lastClock % 1e6)];
}

const sha1 = (text: string): string => createHash('sha1').update(text).digest('hex');

/** Trimmed mean: the mean of the middle 80%. */
function trimmed(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const cutAt = Math.floor(sorted.length / 10);
  const middle = sorted.slice(cutAt, sorted.length - cutAt);
  return middle.reduce((sum, value) => sum + value, 0) / middle.length;
}
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1] ?? Number.NaN;

interface Row {
  readonly name: string;
  /** The shas whose SLOWLOG durations count toward this row, per call of its cycle. */
  readonly shas: Set<string>;
  readonly cycle: () => Promise<void>;
  readonly scriptUs: number[];
  readonly cpuUs: number[];
}

async function main(): Promise<void> {
  const server = await startRedis({ persistence: 'none' });
  const client = new Redis(server.url);
  const admin = new Redis(server.url);
  const connection = fromIoredis(client);
  const send = (args: string[]): Promise<unknown> => connection.send(args);
  const names = keyNames('g:');
  try {
    await admin.config('SET', 'slowlog-log-slower-than', '0');
    await admin.config('SET', 'slowlog-max-len', '100000');
    let loaded = 0;
    // NOTE: a comment naming the load makes every row's scripts distinct (their own sha in SLOWLOG), at no cost per call.
    const load = async (source: string): Promise<string> => (await admin.script('LOAD', `${source}\n-- load ${++loaded}`)) as string;
    const rows: Row[] = [];
    const row = (name: string, shas: string[], cycle: () => Promise<void>): void => {
      rows.push({ name, shas: new Set(shas), cycle, scriptUs: [], cpuUs: [] });
    };

    // Claim + release.
    const cad = await load(COMPARE_AND_DELETE);
    row('raw SET NX PX + compare-and-delete', ['SET', cad], async () => {
      const id = randomUUID();
      if ((await client.set('g:raw', id, 'PX', Number(TTL_MS), 'NX')) !== 'OK') throw new Error('raw: not acquired');
      await client.evalsha(cad, 1, 'g:raw', id);
    });
    const empty = await load(EMPTY);
    row("fixed floor: two EVALSHA `return 1` with claim's and release's argument counts", [empty], async () => {
      await send(['EVALSHA', empty, '1', 'g:floor', newSecret(), `bench${'\u0000'}${'\u0000'}`, TTL_MS]);
      await send(['EVALSHA', empty, '1', 'g:floor', '1796093210433880', newSecret(), `bench${'\u0000'}${'\u0000'}`]);
    });
    let variant = 0;
    // NOTE: each entry: row name, the drops, the scripts they apply to.
    const compared: [string, Drops, Scripts][] = [];
    const variants = (table: Record<string, Drops>): [string, Drops, Scripts][] =>
      (VARIANTS ? Object.entries(table) : Object.entries(table).slice(0, 1)).map(([name, drops]) => [name, drops, THIS]);
    if (COMPARE !== undefined) {
      const before = await scriptsOf(COMPARE);
      compared.push([`BENCH_COMPARE's scripts (${COMPARE})`, {}, before], ['real scripts, a second copy (noise control)', {}, THIS]);
    }
    for (const [name, drops, base] of [...variants(CYCLE_VARIANTS), ...compared]) {
      const scripts = cycleScripts(drops, base);
      const [claim, release] = [await load(scripts.claim), await load(scripts.release)];
      const record = names.record(`cycle:${++variant}`, 'lease');
      row(`cycle: ${name}`, [claim, release], async () => {
        const secret = newSecret();
        const clock = drops.time ? clientClock() : [];
        const claimed = String(
          await send([
            'EVALSHA',
            claim,
            String(1 + clock.length),
            record,
            ...clock,
            ...claimArgs(secret, 'bench', null, Number(TTL_MS), {}, false),
          ]),
        );
        if (claimed[0] !== '+') throw new Error(`${name}: not claimed`);
        // NOTE: a free key's new token is the clock here (the previous token is an older clock).
        const end = claimed.indexOf('\u0000');
        const token = BigInt(claimed.slice(1, end < 0 ? undefined : end));
        // NOTE: the no-SHA-1 claim stored '#' .. the secret itself, which its release compares with '#' .. the presented one.
        const fence = { key: 'k', token, secret, holder: 'bench', runId: null };
        const releaseClock = drops.time ? clientClock() : [];
        const released = String(
          await send(['EVALSHA', release, String(1 + releaseClock.length), record, ...releaseClock, ...fenceArgs(fence)]),
        );
        if (released[0] !== '+') throw new Error(`${name}: not released`);
      });
    }

    // Fenced write (one SET).
    const cas = await load(CHECK_AND_SET);
    await client.set('g:{w}:lock', 'id', 'PX', Number(TTL_MS));
    row('raw check-and-SET script', [cas], async () => {
      if ((await client.evalsha(cas, 2, 'g:{w}:lock', 'g:{w}:data', 'id', 'x')) !== 'OK') throw new Error('raw: fenced');
    });
    const emptyWrite = await load(EMPTY);
    row("fixed floor: EVALSHA `return 1` with the fenced write's argument count", [emptyWrite], async () => {
      await send([
        'EVALSHA',
        emptyWrite,
        '2',
        'g:{f}:lease',
        'g:{f}:data',
        '1796093210433880',
        newSecret(),
        `bench${'\u0000'}${'\u0000'}`,
        '0',
        newSecret(),
        '300000',
        '',
        '1',
        '-3',
        'SET',
        'g:{f}:data',
        'x',
      ]);
    });
    for (const [name, drops, base] of [...variants(WRITE_VARIANTS), ...compared]) {
      const source = writeScript(drops, base);
      const sha = await load(source);
      const key = `write:${++variant}`;
      const record = names.record(key, 'lease');
      const secret = newSecret();
      const claimed = String(
        await send(['EVALSHA', await load(CLAIM_SCRIPT), '1', record, ...claimArgs(secret, 'bench', null, Number(TTL_MS), {}, false)]),
      );
      const token = BigInt(claimed.slice(1, claimed.indexOf('\u0000')));
      // NOTE: the real claim stored '#' .. SHA-1(secret); the no-SHA-1 variant is presented that SHA-1 as its secret.
      const fence = { key, token, secret: drops.hash ? sha1(secret) : secret, holder: 'bench', runId: null };
      const data = `g:{${key}}:data`;
      row(`write: ${name}`, [sha], async () => {
        const clock = drops.time ? clientClock() : [];
        const args = fenceArgs(fence, [newSecret(), '300000', '', ...setArgs(base, data)]);
        const reply = (await send(['EVALSHA', sha, String(2 + clock.length), record, data, ...clock, ...args])) as unknown[];
        if (!Array.isArray(reply) || String(reply[0])[0] !== '+' || reply[2] !== 0)
          throw new Error(`${name}: not written (${JSON.stringify(reply)})`);
      });
    }
    for (const r of rows) await r.cycle();

    for (let round = 0; round < ROUNDS; round += 1) {
      // NOTE: SLOWLOG at threshold 0 also logs every command a script runs, which costs the server ~0.2-0.4 µs per
      // redis.call (measured: TIME, HGET, HMGET, HSET, SPUBLISH each, in a Lua loop timed with TIME); so
      // execution is measured in even rounds and server CPU in odd rounds, with SLOWLOG off.
      const logging = round % 2 === 0;
      await admin.config('SET', 'slowlog-log-slower-than', logging ? '0' : '-1');
      await admin.slowlog('RESET');
      const order = rows.map((_, index) => (index + round) % rows.length);
      for (const index of order) {
        const r = rows[index]!;
        const before = await redisCpuUs(admin);
        for (let i = 0; i < BLOCK; i += 1) await r.cycle();
        if (!logging) r.cpuUs.push(((await redisCpuUs(admin)) - before) / BLOCK);
      }
      if (!logging) continue;
      const entries = (await admin.slowlog('GET', -1)) as [number, number, number, string[]][];
      for (const [, , micros, args] of entries) {
        const command = String(args[0]).toUpperCase();
        const id = command === 'EVALSHA' ? String(args[1]) : command;
        // NOTE: SLOWLOG also logs the commands scripts run; the raw cycle's own SET is the only one on g:raw.
        if (command === 'SET' && String(args[1]) !== 'g:raw') continue;
        for (const r of rows) if (r.shas.has(id)) r.scriptUs.push(micros);
      }
    }
    console.log(
      `redis-server ${/redis_version:(\S+)/.exec(await admin.info('server'))?.[1] ?? '?'}; ${ROUNDS} rounds × blocks of ${BLOCK} cycles per row, rotated order; SLOWLOG on in even rounds (execution), off in odd rounds (server CPU)\n`,
    );
    console.log(
      '| row | logged calls per cycle | execution µs per cycle (SLOWLOG, trimmed mean × calls) | redis-server CPU µs per cycle (INFO cpu, median of blocks) |',
    );
    console.log('|---|---:|---:|---:|');
    for (const r of rows) {
      const calls = r.scriptUs.length / (Math.ceil(ROUNDS / 2) * BLOCK);
      console.log(`| ${r.name} | ${calls.toFixed(2)} | ${(trimmed(r.scriptUs) * calls).toFixed(2)} | ${median(r.cpuUs).toFixed(2)} |`);
    }
  } finally {
    client.disconnect();
    admin.disconnect();
    await server.stop();
  }
}

await main();
