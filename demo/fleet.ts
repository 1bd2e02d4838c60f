/**
 * `npm run demo`: a simulated fleet of workers sharing leases on the in-memory store. No server, no real
 * waiting: simulated time is the store's manual clock, and every chance is drawn from one seeded PRNG.
 *
 *   npm run demo                            # seed 165
 *   npm run demo -- --seed 42               # or DEMO_SEED=42 npm run demo
 *   npm run demo -- --unfenced              # the straw man: refused writes land anyway; watch the final check fail
 *   npm run demo -- --timeline run.svg      # also draw the run as a timeline picture (docs/timeline.svg: seed 165)
 *
 * Exit code 0 when the final check passes, 1 when it fails, 2 on a bad argument.
 */
import { writeFileSync } from 'node:fs';
import { finalCheck } from './ledger.js';
import { DEFAULT_SEED, runFleet, timelineSvgOf } from './fleet-run.js';
import { printSummary } from './summary.js';
import { OCCURRENCES } from './classifier.js';
import { EXPORT_BATCHES } from './exporter.js';
import { RAMP_WAVES } from './ramp.js';

const USAGE = 'usage: npm run demo -- [--seed N] [--unfenced] [--timeline FILE.svg]   (N: a non-negative integer; or DEMO_SEED=N)';

/** The seed from `--seed N` or `DEMO_SEED`; `null` when it is not a non-negative integer. */
function parseSeed(argv: readonly string[]): number | null {
  const flag = argv.indexOf('--seed');
  const text = flag >= 0 ? (argv[flag + 1] ?? '') : (process.env['DEMO_SEED'] ?? '');
  if (flag < 0 && text === '') return DEFAULT_SEED;
  const seed = Number(text);
  return /^[0-9]+$/.test(text) && Number.isSafeInteger(seed) ? seed : null;
}

/** The file of `--timeline FILE`: `undefined` without the flag, `null` when its value is missing. */
function parseTimelineFile(argv: readonly string[]): string | null | undefined {
  const flag = argv.indexOf('--timeline');
  if (flag < 0) return undefined;
  const file = argv[flag + 1] ?? '';
  return file === '' || file.startsWith('--') ? null : file;
}

async function main(): Promise<number> {
  const wallStart = performance.now();
  const argv = process.argv.slice(2);
  const seed = parseSeed(argv);
  const timelineFile = parseTimelineFile(argv);
  if (seed === null || timelineFile === null) {
    console.error(USAGE);
    return 2;
  }
  const unfenced = argv.includes('--unfenced');
  const run = await runFleet(seed, unfenced);
  const { fleet, workers } = run;

  const wallMs = performance.now() - wallStart;
  const { jobs, journal, sim } = fleet;
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
  if (timelineFile !== undefined) {
    writeFileSync(timelineFile, timelineSvgOf(run));
    console.log(`timeline: ${timelineFile}`);
  }
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
