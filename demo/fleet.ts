/**
 * `npm run demo`: a simulated fleet of workers sharing leases on the in-memory store. No server, no real
 * waiting: simulated time is the store's manual clock, and every chance is drawn from one seeded PRNG.
 *
 *   npm run demo                  # seed 165
 *   npm run demo -- --seed 42     # or DEMO_SEED=42 npm run demo
 *   npm run demo -- --unfenced    # the straw man: refused writes land anyway; watch the final check fail
 *
 * Exit code 0 when the final check passes, 1 when it fails, 2 on a bad argument.
 */
import { createMemoryStore, createMemoryTokenGate } from '../src/adapters/memory/index.js';
import { finalCheck, Journal, ProtectedData } from './ledger.js';
import { createSimulation } from './sim.js';
import { printSummary, Tally } from './summary.js';
import { classifier, OCCURRENCES } from './classifier.js';
import { EXPORT_BATCHES, exporter } from './exporter.js';
import { operator, RAMP_WAVES, rampRunner } from './ramp.js';
import type { Fleet } from './workers.js';

const DEFAULT_SEED = 165;
const START = Date.UTC(2025, 0, 6, 9, 0, 0); // a Monday morning, on the store's clock

/** The seed from `--seed N` or `DEMO_SEED`; `null` when it is not a non-negative integer. */
function parseSeed(argv: readonly string[]): number | null {
  const flag = argv.indexOf('--seed');
  const text = flag >= 0 ? (argv[flag + 1] ?? '') : (process.env['DEMO_SEED'] ?? '');
  if (flag < 0 && text === '') return DEFAULT_SEED;
  const seed = Number(text);
  return /^[0-9]+$/.test(text) && Number.isSafeInteger(seed) ? seed : null;
}

async function main(): Promise<number> {
  const wallStart = performance.now();
  const seed = parseSeed(process.argv.slice(2));
  if (seed === null) {
    console.error('usage: npm run demo -- [--seed N] [--unfenced]   (N: a non-negative integer; or DEMO_SEED=N)');
    return 2;
  }
  const unfenced = process.argv.includes('--unfenced');
  const sim = createSimulation(seed, START);
  let runs = 0;
  const fleet: Fleet = {
    sim,
    store: createMemoryStore({ clock: sim.clock }),
    gate: createMemoryTokenGate(),
    data: new ProtectedData(),
    journal: new Journal(),
    tally: new Tally(sim.elapsed),
    unfenced,
    jobs: { exportedBatches: 0, sentWaves: 0, decided: new Set() },
    nextRunId: () => `r${++runs}`,
  };

  const workers = [
    ...['exporter-1', 'exporter-2', 'exporter-3'].map((holder) => () => exporter(fleet, holder)),
    ...['ramp-cron', 'ramp-manual'].map((holder) => () => rampRunner(fleet, holder)),
    ...['classifier-1', 'classifier-2', 'classifier-3'].map((holder) => () => classifier(fleet, holder)),
  ];
  for (const worker of workers) sim.spawn(worker);
  sim.spawn(() => operator(fleet, 'oncall:ana'));
  await sim.run();

  const wallMs = performance.now() - wallStart;
  const { jobs, journal } = fleet;
  const accepted = journal.attempts.filter((attempt) => attempt.verdict === 'accepted').length;
  const passed = printSummary(fleet.tally, {
    seed,
    header: [
      `leasefence demo: ${workers.length} workers and an operator on the in-memory store (seed ${seed}${unfenced ? ', UNFENCED straw man' : ''})`,
      `simulated ${(sim.elapsed() / 1000).toFixed(1)} s of fleet time in ${wallMs.toFixed(0)} ms; ${journal.attempts.length} writes attempted, ${accepted} accepted`,
    ].join('\n'),
    jobs: [
      `export:daily     ${jobs.exportedBatches}/${EXPORT_BATCHES} batches exported`,
      `ramp:current     ${jobs.sentWaves}/${RAMP_WAVES} waves sent`,
      `classify:occ-*   ${jobs.decided.size}/${OCCURRENCES.length} occurrences decided`,
    ],
    check: finalCheck(fleet.data, journal),
  });
  return passed ? 0 : 1;
}

// NOTE: `npm run demo | head` closes stdout early; that is not a failure of the demo.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
});

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
