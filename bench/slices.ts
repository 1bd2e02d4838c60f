/**
 * The measuring engine of `npm run bench`: interleaved short slices, so that the drift of a shared machine
 * (other processes, CPU frequency, JIT warm-up) hits every contender of a group alike.
 *
 * A group is a set of contenders run with the same number of concurrent workers. Each round gives every
 * contender `passes` slices of `sliceMs`, in a new shuffled order at every pass (a fixed seed: the same
 * orders in every run), each slice started on a collected heap; a contender's rate in a round
 * is its cycles over its time summed over that round's slices. Its ratio to its baseline is computed per
 * round and the median of those ratios is reported, with the median round rate. The "(control)" row of a
 * group is its baseline measured a second time under another name: its ratio (ideally 1.00) shows how much
 * of a difference the noise alone makes in that run.
 *
 * CPU per cycle, summed over all slices: the client is this process (`process.cpuUsage`: the library, the
 * driver, syscalls), the server is what the contender's `serverCpuUs` reports (redis-server's `INFO cpu`,
 * the Postgres backends' run time), both in µs per cycle.
 *
 * NOTE: a slice's garbage is collected in whichever slice runs next. A rotated order (as before) kept every
 * contender behind the same neighbour in every pass, so a row after one that makes much garbage (withLease
 * with an AbortSignal, the AbortSignal reference row) paid for it in every pass: an identical copy of the
 * claim + release measured 0.81 of itself that way. Hence the full collection (untimed) before every slice,
 * and orders that change neighbours.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// NOTE: the documented way to reach `gc()` without starting Node with --expose-gc.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as (options: { type: 'minor' | 'major'; execution: 'sync' }) => void;
// NOTE: a young-generation collection only: a forced full one also shrinks the young generation, after
// which every slice ran ~5× slower (measured: 117k claim + release cycles/s instead of ~640k).
/** A young-generation collection, now (untimed, before a slice). */
export const collectGarbage = (): void => gc({ type: 'minor', execution: 'sync' });

/** One thing measured: `prepare(worker)` sets up (untimed) and returns one timed cycle for that worker. */
export interface Contender {
  readonly name: string;
  /** The name of the contender its ratio is taken against. @default the group's first contender */
  readonly baseline?: string;
  prepare(worker: number): Promise<() => Promise<unknown>>;
  /** The server's CPU time so far in µs (a counter); omitted: no server column. */
  serverCpuUs?(): Promise<number>;
}

/** Contenders measured together, each with `workers` concurrent loops. */
export interface Group {
  readonly title: string;
  readonly workers: number;
  readonly contenders: readonly Contender[];
}

/** How long and how often each contender of a group runs. */
export interface SliceSettings {
  /** Rounds; ratios are medians over rounds. */
  readonly rounds: number;
  /** Slices per contender per round, each pass in its own shuffled order. */
  readonly passes: number;
  /** Length of one slice in ms. */
  readonly sliceMs: number;
}

/** What a group's run found for one contender. */
export interface Measured {
  readonly name: string;
  readonly baseline: string;
  /** Median over rounds of the round's cycles per second. */
  readonly rate: number;
  /** Median over rounds of rate ÷ the baseline's rate in the same round. */
  readonly ratio: number;
  /** Smallest and largest per-round ratio. */
  readonly ratioRange: readonly [number, number];
  /** This process's CPU µs per cycle. */
  readonly clientCpuUs: number;
  /** The server's CPU µs per cycle (NaN without a probe). */
  readonly serverCpuUs: number;
}

interface Tally {
  cycles: number[];
  ms: number[];
  clientUs: number;
  serverUs: number;
  total: number;
}

/** Runs `workers` loops of `cycles` for `sliceMs`; returns cycles done, ms taken, and the CPU used. */
async function slice(
  cycles: readonly (() => Promise<unknown>)[],
  contender: Contender,
  sliceMs: number,
): Promise<{ done: number; ms: number; clientUs: number; serverUs: number }> {
  const serverBefore = contender.serverCpuUs === undefined ? 0 : await contender.serverCpuUs();
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  const deadline = started + sliceMs;
  let done = 0;
  await Promise.all(
    cycles.map(async (cycle) => {
      while (performance.now() < deadline) {
        await cycle();
        done += 1;
      }
    }),
  );
  const ms = performance.now() - started;
  const client = process.cpuUsage(clientBefore);
  const serverUs = contender.serverCpuUs === undefined ? Number.NaN : (await contender.serverCpuUs()) - serverBefore;
  return { done, ms, clientUs: client.user + client.system, serverUs };
}

/** The median of `values` (the mean of the two middle ones for an even count). */
export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] ?? Number.NaN) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
};

/** A deterministic generator of numbers in [0, 1) (mulberry32): the same slice orders in every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A copy of `items` in a random order (Fisher–Yates). */
export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const copy = [...items];
  for (let index = copy.length - 1; index > 0; index -= 1) {
    const other = Math.floor(random() * (index + 1));
    [copy[index], copy[other]] = [copy[other] as T, copy[index] as T];
  }
  return copy;
}

/** Measures every contender of `group` in interleaved slices (see the module comment). */
export async function runGroup(group: Group, settings: SliceSettings): Promise<Measured[]> {
  const { contenders, workers } = group;
  const cycles = new Map<Contender, (() => Promise<unknown>)[]>();
  for (const contender of contenders) {
    const prepared = await Promise.all(Array.from({ length: workers }, (_, worker) => contender.prepare(worker)));
    // NOTE: one untimed warm-up slice each (connections, prepared statements, JIT).
    await slice(prepared, contender, settings.sliceMs);
    cycles.set(contender, prepared);
  }
  const tallies = new Map<Contender, Tally>(
    contenders.map((contender) => [contender, { cycles: [], ms: [], clientUs: 0, serverUs: 0, total: 0 }]),
  );
  const random = seededRandom(0x1ea5e);
  for (let round = 0; round < settings.rounds; round += 1) {
    for (const tally of tallies.values()) {
      tally.cycles.push(0);
      tally.ms.push(0);
    }
    for (let pass = 0; pass < settings.passes; pass += 1) {
      for (const contender of shuffled(contenders, random)) {
        collectGarbage();
        const measured = await slice(cycles.get(contender) ?? [], contender, settings.sliceMs);
        const tally = tallies.get(contender) as Tally;
        tally.cycles[round] = (tally.cycles[round] ?? 0) + measured.done;
        tally.ms[round] = (tally.ms[round] ?? 0) + measured.ms;
        tally.clientUs += measured.clientUs;
        tally.serverUs += measured.serverUs;
        tally.total += measured.done;
      }
    }
  }
  const first = contenders[0]?.name ?? '';
  const rates = (contender: Contender): number[] => {
    const tally = tallies.get(contender) as Tally;
    return tally.cycles.map((count, round) => (count * 1000) / (tally.ms[round] ?? 1));
  };
  return contenders.map((contender) => {
    const baselineName = contender.baseline ?? first;
    const baseline = contenders.find((other) => other.name === baselineName) ?? contender;
    const own = rates(contender);
    const theirs = rates(baseline);
    const ratios = own.map((rate, round) => rate / (theirs[round] ?? Number.NaN));
    const tally = tallies.get(contender) as Tally;
    return {
      name: contender.name,
      baseline: baselineName,
      rate: median(own),
      ratio: median(ratios),
      ratioRange: [Math.min(...ratios), Math.max(...ratios)],
      clientCpuUs: tally.clientUs / tally.total,
      serverCpuUs: tally.serverUs / tally.total,
    };
  });
}

const number = (value: number, digits = 0): string =>
  Number.isFinite(value) ? value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '';

/** A group's results as a markdown table: rate, ratio (with its range over rounds), CPU per cycle. */
export function markdownTable(group: Group, results: readonly Measured[]): string {
  const byName = new Map(results.map((result) => [result.name, result]));
  const lines = [
    `**${group.title}** (${group.workers} worker${group.workers === 1 ? '' : 's'})`,
    '',
    '| contender | cycles/s | ÷ baseline (min–max over rounds) | baseline | client CPU µs/cycle | server CPU µs/cycle | CPU ÷ baseline CPU |',
    '|---|---:|---:|---|---:|---:|---:|',
  ];
  for (const result of results) {
    const baseline = byName.get(result.baseline);
    const cpu = result.clientCpuUs + (Number.isNaN(result.serverCpuUs) ? 0 : result.serverCpuUs);
    const baselineCpu =
      baseline === undefined ? Number.NaN : baseline.clientCpuUs + (Number.isNaN(baseline.serverCpuUs) ? 0 : baseline.serverCpuUs);
    const isBaseline = result.baseline === result.name;
    lines.push(
      `| ${result.name} | ${number(result.rate)} | ${isBaseline ? '1.00' : `${number(result.ratio, 2)} (${number(result.ratioRange[0], 2)}–${number(result.ratioRange[1], 2)})`} | ${isBaseline ? '(itself)' : result.baseline} | ${number(result.clientCpuUs, 1)} | ${number(result.serverCpuUs, 1)} | ${isBaseline ? '1.00' : number(cpu / baselineCpu, 2)} |`,
    );
  }
  return lines.join('\n');
}
