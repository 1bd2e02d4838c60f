/**
 * What the diagnostics_channel events cost: memory-store claim + release cycles through the public API,
 * (a) in this tree with nobody subscribed, (b) a reference, (c) in this tree with a subscriber on every
 * channel. Rounds of the variants alternate (rotated order) and medians are reported, so machine load
 * moves them alike. The reference is either
 * - by default, this tree with its event hooks applied twice (`observeLeases` on a `Leases` that already
 *   has them), in the same process and module copy: (b) minus (a) is what one layer of unsubscribed hooks
 *   costs; or
 * - with BENCH_BASELINE, a tree without events, each round in a fresh process (two copies of the same code
 *   in one process measured about 10% apart, whichever loaded first: an A/A run showed it).
 *
 *   npx tsx bench/events.ts
 *   git archive main src | tar -x -C /tmp/leasefence-main   # a baseline without events
 *   BENCH_BASELINE=/tmp/leasefence-main/src npx tsx bench/events.ts
 *   BENCH_MS=300 BENCH_ROUNDS=31 ...   (per-round time and number of rounds; defaults 300 ms, 21)
 *   BENCH_SUBSCRIBED=0 ...             (leave out (c))
 *
 * Reported per variant: cycles/s (wall) and CPU µs per cycle (`process.cpuUsage()`), medians over the rounds,
 * and the overhead of (a) and (c) against (b): the median over rounds of the ratio within each round.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createMemoryStore } from '../src/adapters/memory/index.js';
import { isObserved, LEASE_OPERATIONS, operationChannel } from '../src/events.js';
import { createLeases } from '../src/leases.js';
import { observeLeases } from '../src/observed-leases.js';

const MEASURE_MS = Number(process.env['BENCH_MS'] ?? 300);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 21);
const BASELINE = process.env['BENCH_BASELINE'];

type LeasesFactory = typeof createLeases;
type StoreFactory = typeof createMemoryStore;

interface Variant {
  readonly name: string;
  readonly createLeases: LeasesFactory;
  readonly createMemoryStore: StoreFactory;
  readonly subscribe: boolean;
  /** Wrap the operations in a second layer of event hooks: the cost of one layer, in one module copy. */
  readonly doubleHooks?: boolean;
}

/** Claim + release cycles on one key for `MEASURE_MS`: cycles and CPU µs. */
async function round(variant: Variant): Promise<{ perSecond: number; cpuPerCycle: number }> {
  const created = variant.createLeases(variant.createMemoryStore(), { holder: 'bench', ttlMs: 30_000 });
  const leases = variant.doubleHooks === true ? observeLeases(created) : created;
  const unsubscribe: Array<() => void> = [];
  if (variant.subscribe) {
    for (const operation of LEASE_OPERATIONS) {
      const handlers = { start() {}, end() {}, asyncStart() {}, asyncEnd() {}, error() {} };
      operationChannel(operation).subscribe(handlers);
      unsubscribe.push(() => operationChannel(operation).unsubscribe(handlers));
    }
  }
  // NOTE: warm up, so every variant is measured with its code optimised.
  for (let index = 0; index < 2_000; index += 1) {
    const claimed = await leases.claim('bench:key');
    if (claimed.ok) await leases.release(claimed.lease);
  }
  const cpu = process.cpuUsage();
  const started = performance.now();
  let cycles = 0;
  while (performance.now() - started < MEASURE_MS) {
    for (let batch = 0; batch < 100; batch += 1) {
      const claimed = await leases.claim('bench:key');
      if (!claimed.ok) throw new Error('the bench key is held');
      await leases.release(claimed.lease);
      cycles += 1;
    }
  }
  const elapsed = performance.now() - started;
  const used = process.cpuUsage(cpu);
  for (const stop of unsubscribe) stop();
  return { perSecond: (cycles / elapsed) * 1000, cpuPerCycle: (used.user + used.system) / cycles };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

/** The variant named `name`, loaded in this process. */
async function loadVariant(name: string): Promise<Variant> {
  if (name !== 'baseline (no events)')
    return { name, createLeases, createMemoryStore, subscribe: name.includes('subscribed'), doubleHooks: name.includes('twice') };
  const root = resolve(BASELINE ?? '');
  const baseLeases = (await import(pathToFileURL(resolve(root, 'leases.ts')).href)) as { createLeases: LeasesFactory };
  const baseMemory = (await import(pathToFileURL(resolve(root, 'adapters/memory/index.ts')).href)) as { createMemoryStore: StoreFactory };
  return { name, createLeases: baseLeases.createLeases, createMemoryStore: baseMemory.createMemoryStore, subscribe: false };
}

/** One round of `name` in a fresh process (so no variant runs second in a warm process, or shares its JIT feedback). */
function roundInChild(name: string): Promise<{ perSecond: number; cpuPerCycle: number }> {
  return new Promise((done, fail) => {
    execFile(
      process.execPath,
      [...process.execArgv, fileURLToPath(import.meta.url), '--child', name],
      { env: process.env },
      (error, stdout) => {
        if (error) fail(error);
        else done(JSON.parse(stdout) as { perSecond: number; cpuPerCycle: number });
      },
    );
  });
}

/**
 * The unsubscribed hook alone, in isolation: ns per call of a function behind the same check the hooks
 * make (`isObserved`) minus ns per direct call, the best of 7 alternating runs of 10^7 calls each.
 */
function hookNanoseconds(): number {
  const traced = operationChannel('claim');
  const direct = (value: number): number => value + 1;
  const hooked = (value: number): number => (isObserved(traced) ? 0 : direct(value));
  const time = (call: (value: number) => number): number => {
    let sum = 0;
    const started = process.hrtime.bigint();
    for (let index = 0; index < 10_000_000; index += 1) sum += call(index);
    if (sum === 0) throw new Error('unreachable');
    return Number(process.hrtime.bigint() - started) / 10_000_000;
  };
  let best = Number.POSITIVE_INFINITY;
  for (let run = 0; run < 7; run += 1) best = Math.min(best, time(hooked) - time(direct));
  return Math.max(0, best);
}

async function main(): Promise<void> {
  const child = process.argv.indexOf('--child');
  if (child >= 0) {
    console.log(JSON.stringify(await round(await loadVariant(process.argv[child + 1] ?? ''))));
    return;
  }
  // NOTE: without a baseline tree, the reference is this tree with its hooks applied twice, in this one
  // process: the difference between the two is the cost of one layer of unsubscribed hooks.
  const reference = BASELINE !== undefined ? 'baseline (no events)' : 'this tree, hooks applied twice, no subscriber';
  const names = ['this tree, no subscriber', reference];
  if (process.env['BENCH_SUBSCRIBED'] !== '0') names.push('this tree, subscribed to every channel');
  const results = new Map(names.map((name) => [name, { perSecond: [] as number[], cpu: [] as number[] }]));
  for (let index = 0; index < ROUNDS; index += 1) {
    for (let turn = 0; turn < names.length; turn += 1) {
      const name = names[(index + turn) % names.length] as string;
      const { perSecond, cpuPerCycle } = BASELINE !== undefined ? await roundInChild(name) : await round(await loadVariant(name));
      results.get(name)?.perSecond.push(perSecond);
      results.get(name)?.cpu.push(cpuPerCycle);
    }
  }
  const base = results.get(reference);
  // NOTE: a round of each variant runs back to back, so the ratio within one round cancels most of the load.
  const ratios = (values: number[], against: number[]): number[] =>
    values.map((value, at) => value / (against[at] ?? Number.NaN)).sort((a, b) => a - b);
  const pairedRatio = (values: number[], against: number[]): number => median(ratios(values, against));
  /** The interquartile range of the paired ratios, as percentages: how much the load moved them. */
  const spread = (values: number[], against: number[], sign: 1 | -1): string => {
    const sorted = ratios(values, against).map((ratio) => sign * (ratio - 1) * 100);
    const [low, high] = [
      sorted[Math.floor(sorted.length / 4)] ?? Number.NaN,
      sorted[Math.floor((sorted.length * 3) / 4)] ?? Number.NaN,
    ].sort((a, b) => a - b);
    return `IQR ${low?.toFixed(1)}..${high?.toFixed(1)}`;
  };
  console.log(`memory store, claim + release on one key, ${ROUNDS} rounds x ${MEASURE_MS} ms, medians (node ${process.version})`);
  console.log(`reference: ${reference}`);
  console.log('| variant | cycles/s | vs reference | CPU µs/cycle | vs reference |');
  console.log('|---|---|---|---|---|');
  for (const [name, { perSecond, cpu }] of results) {
    const rate = median(perSecond);
    const cpuPerCycle = median(cpu);
    const vsRate =
      base === undefined
        ? '-'
        : `${((1 - pairedRatio(perSecond, base.perSecond)) * 100).toFixed(2)}% slower (${spread(perSecond, base.perSecond, -1)})`;
    const vsCpu = base === undefined ? '-' : `${((pairedRatio(cpu, base.cpu) - 1) * 100).toFixed(2)}% more (${spread(cpu, base.cpu, 1)})`;
    console.log(`| ${name} | ${Math.round(rate)} | ${vsRate} | ${cpuPerCycle.toFixed(3)} | ${vsCpu} |`);
  }
  const hook = hookNanoseconds();
  const cycle = median(results.get('this tree, no subscriber')?.cpu ?? []) * 1000;
  // NOTE: a claim + release cycle passes two hooks (claim, release).
  console.log(
    `unsubscribed hook in isolation: ${hook.toFixed(2)} ns per operation, ${((200 * hook) / cycle).toFixed(2)}% of a ${(cycle / 1000).toFixed(2)} µs claim + release cycle`,
  );
}

await main();
