/**
 * Where the time of a memory claim + release goes, shell piece by shell piece: each piece is removed in a
 * throwaway copy of `src/` (a text edit, never shipped), every copy is bundled as `dist/` is (library.ts:
 * one bundle per public entry point, the same way for every tree), and all of them run in ONE process in
 * interleaved rounds (shuffled order): a tight single-threaded loop of `await claim; await release`, CPU time from
 * `process.cpuUsage`. A piece's cost is the median over rounds of (full - without it) in the same round;
 * "full (identical copy)" is the noise row (ideally 0). With BENCH_COMPARE (another checkout's `src/`), that
 * tree and its store alone run too: before and after in the same process.
 *
 *   npx tsx bench/memory-breakdown.ts
 *   BENCH_N=100000 BENCH_ROUNDS=11 BENCH_WARM=3 BENCH_COMPARE=/tmp/before/src npx tsx bench/memory-breakdown.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadLibrary, type Library } from './library.js';
import { median } from './slices.js';
import { loadVariants, measureRounds, type Cycles, type Variant } from './source-variants.js';

const VARIANTS: readonly Variant[] = [
  { name: 'full', piece: '', guarantee: '', edits: [] },
  { name: 'full (identical copy)', piece: 'noise (should be ~0)', guarantee: '', edits: [] },
  {
    name: 'no secret',
    piece: 'a fresh secret per claim (newSecret)',
    guarantee: 'yes: 128 CSPRNG bits per grant, or a stale handle could act as a newer grant',
    edits: [
      {
        file: 'leases.ts',
        from: 'const secret = newSecret();\n    const sentAt = monotonic();',
        to: "const secret = '0123456789abcdef0123456789abcdef';\n    const sentAt = monotonic();",
      },
    ],
  },
  {
    name: 'no monotonic read',
    piece: "the worker's clock read before the claim (local deadline)",
    guarantee: 'yes: the local deadline is a lower bound only if measured from before the request',
    edits: [
      {
        file: 'leases.ts',
        from: 'const sentAt = monotonic();\n    const command = { key, holder',
        to: 'const sentAt = 0;\n    const command = { key, holder',
      },
    ],
  },
  {
    name: 'no store clock',
    piece: "the memory store's clock, read in claim and in release (2 × Date.now)",
    guarantee: "yes: the store's clock decides expiry (inside the store alone too)",
    edits: [
      {
        file: 'adapters/memory/memory-store.ts',
        from: 'const clock = given.clock === undefined ? systemClock : checkedClock(given.clock);',
        to: 'const clock = given.clock === undefined ? () => 1_700_000_000_000 : checkedClock(given.clock);',
      },
    ],
  },
  {
    name: 'no events check',
    piece: 'the diagnostics_channel check around each operation',
    guarantee: 'yes: observers get their events',
    edits: [{ file: 'leases.ts', from: 'return observeLeases(leases);', to: 'return leases;' }],
  },
  {
    name: 'no release result',
    piece: 'the log-safe applied release (a `.then` and an AppliedRelease)',
    guarantee: 'yes: JSON.stringify of a result works and never shows a secret',
    edits: [
      {
        file: 'leases.ts',
        from: 'if (checkpoint === undefined) return store.release(holdMs === undefined ? { fence } : { fence, ...hold }).then(releaseResult);',
        to: 'if (checkpoint === undefined) return store.release(holdMs === undefined ? { fence } : { fence, ...hold });',
      },
    ],
  },
  {
    name: 'no claim result class',
    piece: 'the granted claim as a GrantedClaim (log-safe toJSON) instead of a plain object',
    guarantee: 'yes: log-safe JSON of a claim result',
    edits: [
      {
        file: 'leases.ts',
        from: 'return new GrantedClaim(lease, outcome.previous, inherited);',
        to: 'return { ok: true, lease, previous: outcome.previous, checkpoint: inherited } as unknown as GrantedClaim;',
      },
    ],
  },
];

const env = (name: string, fallback: string): string => process.env[name] ?? fallback;
const N = Number(env('BENCH_N', '100000'));
const ROUNDS = Number(env('BENCH_ROUNDS', '11'));
const WARM = Number(env('BENCH_WARM', '3'));
const COMPARE = process.env['BENCH_COMPARE'];

/** `n` claim + release cycles of `library`'s shell on a memory store, one key (its own copy of the loop). */
const shell = (library: Library): Cycles =>
  library.cycles.claimReleaseLoop(
    library.root.createLeases(library.memory.createMemoryStore(), { holder: 'bench', ttlMs: 30_000 }),
    'cycle:0',
  );

/** `n` claim + release cycles of `library`'s memory store alone (no shell). */
const storeAlone = (library: Library): Cycles => library.cycles.storeLoop(library.memory.createMemoryStore(), 'store:0');

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'leasefence-breakdown-'));
  try {
    const libraries = await loadVariants(VARIANTS, work);
    const contenders: [string, Cycles][] = VARIANTS.map((variant, index) => [variant.name, shell(libraries[index] as Library)]);
    const before = COMPARE === undefined || COMPARE === '' ? null : await loadLibrary(COMPARE);
    if (before !== null) contenders.push(['before (BENCH_COMPARE)', shell(before)]);
    contenders.push(['store alone', storeAlone(libraries[0] as Library)]);
    if (before !== null) contenders.push(['store alone (before)', storeAlone(before)]);
    const ns = await measureRounds(contenders, { n: N, rounds: ROUNDS, warm: WARM });
    const full = ns.get('full') as number[];
    console.log(
      `node ${process.version}, ${N} cycles × ${ROUNDS} rounds (after ${WARM} warm-up rounds), one process, load average after: ${loadavg()
        .map((value) => value.toFixed(2))
        .join(' ')}\n`,
    );
    console.log(
      '| tree | ns CPU per claim + release | cycles per CPU-second | saves vs full (median of per-round differences) | piece removed | a guarantee? |',
    );
    console.log('|---|---:|---:|---:|---|---|');
    for (const [name, values] of ns) {
      const variant = VARIANTS.find((candidate) => candidate.name === name);
      const saves = median(values.map((value, round) => (full[round] as number) - value));
      const own = median(values);
      console.log(
        `| ${name} | ${own.toFixed(0)} | ${Math.round(1e9 / own).toLocaleString('en-US')} | ${name === 'full' ? '' : saves.toFixed(0)} | ${variant?.piece ?? ''} | ${variant?.guarantee ?? ''} |`,
      );
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
