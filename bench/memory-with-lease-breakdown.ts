/**
 * Where the time of a memory `withLease((lease) => token)` goes beyond its claim + release: as
 * bench/memory-breakdown.ts does for claim + release, each piece of the run is removed in a throwaway copy of
 * `src/` (a text edit, never shipped), every copy is bundled as `dist/` is (library.ts), and all of them run
 * in ONE process in interleaved rounds (shuffled order), a tight loop of `await withLease(key, fn)` timed by
 * `process.cpuUsage`. A piece's cost is the median over rounds of (full - without it) in the same round;
 * "full (identical copy)" is the noise row. The claim + release row of the full tree is the budget's base:
 * the target is withLease <= 2x claim + release.
 *
 *   npx tsx bench/memory-with-lease-breakdown.ts
 *   BENCH_N=50000 BENCH_ROUNDS=11 BENCH_COMPARE=/tmp/before/src npx tsx bench/memory-with-lease-breakdown.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Leases, RunningLease } from '../src/leases-types.js';
import { loadLibrary, type Library } from './library.js';
import { median } from './slices.js';
import { loadVariants, measureRounds, type Cycles, type Variant } from './source-variants.js';

const VARIANTS: readonly Variant[] = [
  { name: 'full', piece: '', guarantee: '', edits: [] },
  { name: 'full (identical copy)', piece: 'noise (should be ~0)', guarantee: '', edits: [] },
  {
    name: 'no revoke watch',
    piece: "the run's watch of revoke notices (Store.watchRevoked: subscribe after the claim, end before the release)",
    guarantee: "yes: an operator's revoke aborts the run's signal within milliseconds, not at the next renewal",
    edits: [
      {
        file: 'renewal.ts',
        from: "if (this.#stopped || typeof store.watchRevoked !== 'function') return;",
        to: 'return;',
      },
    ],
  },
  {
    name: 'no renewal schedule',
    piece: "the renewal's start (the run joins the shared arming of alarms) and its stop",
    guarantee: 'yes: the renewal timer and the safe deadline of a run that outlives its turn',
    edits: [{ file: 'renewal.ts', from: 'if (this.schedule === null || this.#stopped) return;', to: 'return;' }],
  },
  {
    name: 'no options check',
    piece: "withLease's checks of fn and its options before the claim (checkOptions)",
    guarantee: 'yes: bad input gets InvalidArgumentError before any I/O',
    edits: [
      {
        file: 'with-lease.ts',
        from: 'const renewAfterFraction = checkOptions(fn, options, maxCheckpointBytes);',
        to: 'const renewAfterFraction = 1 / 3;',
      },
    ],
  },
];

const env = (name: string, fallback: string): string => process.env[name] ?? fallback;
const N = Number(env('BENCH_N', '50000'));
const ROUNDS = Number(env('BENCH_ROUNDS', '11'));
const WARM = Number(env('BENCH_WARM', '3'));
const COMPARE = process.env['BENCH_COMPARE'];

/**
 * `n` withLease runs of `library`'s shell on a memory store, one key. NOTE: the loop is compiled anew per tree
 * (`new Function`), so each has inline caches of its own, as cycles.ts's loops do (they have no withLease loop).
 */
function withLeaseLoop(library: Library): Cycles {
  const leases = library.root.createLeases(library.memory.createMemoryStore(), { holder: 'bench', ttlMs: 30_000 });
  const loop = new Function(
    'leases',
    'fn',
    "return async (n) => { for (let i = 0; i < n; i++) { const outcome = await leases.withLease('with:0', fn); if (!outcome.ok) throw new Error(outcome.reason); } };",
  ) as (leases: Leases, fn: (lease: RunningLease) => Promise<bigint>) => Cycles;
  return loop(leases, library.cycles.returnToken);
}

/** `n` claim + release cycles of `library`'s shell on a memory store (the budget's base). */
const claimRelease = (library: Library): Cycles =>
  library.cycles.claimReleaseLoop(
    library.root.createLeases(library.memory.createMemoryStore(), { holder: 'bench', ttlMs: 30_000 }),
    'cycle:0',
  );

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'leasefence-with-lease-breakdown-'));
  try {
    const libraries = await loadVariants(VARIANTS, work);
    const contenders: [string, Cycles][] = VARIANTS.map((variant, index) => [variant.name, withLeaseLoop(libraries[index] as Library)]);
    contenders.push(['claim + release (full tree)', claimRelease(libraries[0] as Library)]);
    const before = COMPARE === undefined || COMPARE === '' ? null : await loadLibrary(COMPARE);
    if (before !== null) {
      contenders.push(['before (BENCH_COMPARE)', withLeaseLoop(before)]);
      contenders.push(['before: claim + release', claimRelease(before)]);
    }
    const ns = await measureRounds(contenders, { n: N, rounds: ROUNDS, warm: WARM });
    const full = ns.get('full') as number[];
    const base = ns.get('claim + release (full tree)') as number[];
    console.log(
      `node ${process.version}, ${N} runs × ${ROUNDS} rounds (after ${WARM} warm-up rounds), one process, load average after: ${loadavg()
        .map((value) => value.toFixed(2))
        .join(' ')}\n`,
    );
    console.log(
      '| tree | ns CPU per run | claim + release ÷ it | saves vs full (median of per-round differences) | piece removed | a guarantee? |',
    );
    console.log('|---|---:|---:|---:|---|---|');
    for (const [name, values] of ns) {
      const variant = VARIANTS.find((candidate) => candidate.name === name);
      const saves = median(values.map((value, round) => (full[round] as number) - value));
      const ratio = median(values.map((value, round) => (base[round] as number) / value));
      console.log(
        `| ${name} | ${median(values).toFixed(0)} | ${ratio.toFixed(2)} | ${name === 'full' ? '' : saves.toFixed(0)} | ${variant?.piece ?? ''} | ${variant?.guarantee ?? ''} |`,
      );
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
