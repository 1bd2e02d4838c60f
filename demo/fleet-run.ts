/**
 * One run of the demo fleet, without printing: the fleet after the simulation ended, for the summary
 * (`fleet.ts`) and the timeline picture (`npm run demo -- --timeline <file.svg>`, and its tests).
 */
import { createMemoryStore, createMemoryTokenGate } from '../src/adapters/memory/index.js';
import { Journal, ProtectedData } from './ledger.js';
import { Recording, timelineOf } from './recording.js';
import { createSimulation } from './sim.js';
import { Tally } from './summary.js';
import { classifier } from './classifier.js';
import { exporter } from './exporter.js';
import { operator, rampRunner } from './ramp.js';
import { renderTimelineSvg } from './timeline-svg.js';
import type { Fleet } from './workers.js';

/** The seed of `npm run demo` without `--seed`, and of the committed `docs/timeline.svg`. */
export const DEFAULT_SEED = 165;
const START = Date.UTC(2025, 0, 6, 9, 0, 0); // a Monday morning, on the store's clock
const EXPORTERS = ['exporter-1', 'exporter-2', 'exporter-3'];
const RAMP_RUNNERS = ['ramp-cron', 'ramp-manual'];
const CLASSIFIERS = ['classifier-1', 'classifier-2', 'classifier-3'];
const OPERATOR = 'oncall:ana';

/** A finished run. */
export interface FleetRun {
  readonly seed: number;
  readonly fleet: Fleet;
  /** The workers' names, in the order they started (the operator is not one). */
  readonly workers: readonly string[];
  readonly operator: string;
}

/** Runs the fleet for `seed` until every job is done (or the horizon passed). */
export async function runFleet(seed: number, unfenced: boolean): Promise<FleetRun> {
  const sim = createSimulation(seed, START);
  let runs = 0;
  const fleet: Fleet = {
    sim,
    store: createMemoryStore({ clock: sim.clock }),
    gate: createMemoryTokenGate(),
    data: new ProtectedData(),
    journal: new Journal(),
    tally: new Tally(sim.elapsed),
    recording: new Recording(START, sim.elapsed),
    unfenced,
    jobs: { exportedBatches: 0, sentWaves: 0, decided: new Set() },
    nextRunId: () => `r${++runs}`,
  };
  for (const holder of EXPORTERS) sim.spawn(() => exporter(fleet, holder));
  for (const holder of RAMP_RUNNERS) sim.spawn(() => rampRunner(fleet, holder));
  for (const holder of CLASSIFIERS) sim.spawn(() => classifier(fleet, holder));
  sim.spawn(() => operator(fleet, OPERATOR));
  await sim.run();
  return { seed, fleet, workers: [...EXPORTERS, ...RAMP_RUNNERS, ...CLASSIFIERS], operator: OPERATOR };
}

/** The timeline picture of a finished run, as SVG text. */
export function timelineSvgOf(run: FleetRun): string {
  const { fleet } = run;
  return renderTimelineSvg(
    timelineOf(fleet.recording, fleet.journal, { seed: run.seed, lanes: [...run.workers, run.operator], durationMs: fleet.sim.elapsed() }),
  );
}
