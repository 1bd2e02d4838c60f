/**
 * `npm run demo`: a simulated fleet of workers sharing leases on the in-memory store. No server, no real
 * waiting: simulated time is the store's manual clock, and every chance is drawn from one seeded PRNG.
 *
 *   npm run demo                            # seed 165
 *   npm run demo -- --seed 42               # or DEMO_SEED=42 npm run demo
 *   npm run demo -- --unfenced              # the straw man: refused writes land anyway; watch the final check fail
 *   npm run demo -- --timeline run.svg      # also draw the run as a timeline picture (docs/timeline.svg: seed 165)
 *
 * Exit code 0 when the final check passes, 1 when it fails, 2 on a bad or unknown argument.
 */
import { writeFileSync } from 'node:fs';
import { finalCheck } from './ledger.js';
import { DEMO_USAGE, parseDemoArguments } from './arguments.js';
import { runFleet, timelineSvgOf } from './fleet-run.js';
import { printSummary } from './summary.js';
import { OCCURRENCES } from './classifier.js';
import { EXPORT_BATCHES } from './exporter.js';
import { RAMP_WAVES } from './ramp.js';

async function main(): Promise<number> {
  const wallStart = performance.now();
  const parsed = parseDemoArguments(process.argv.slice(2), process.env);
  if (parsed === null) {
    console.error(DEMO_USAGE);
    return 2;
  }
  const { seed, unfenced, timelineFile } = parsed;
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
