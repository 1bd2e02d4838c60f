/**
 * A chaos run through PgBouncer: PostgreSQL (a server of its own) reached through PgBouncer 1.18 in
 * transaction mode, workers on pg and postgres.js with `prepare: false`, the pooler killed and restarted
 * mid-run (every client and server connection cut), with Kleppmann pauses, worker kills and pauses in
 * between; checked by the independent history checker. `CHAOS_SEED` replays a fault schedule,
 * `LEASEFENCE_TEST_SCALE` lengthens it (12 s x scale); the long run is `npm run chaos -- --stores postgres-pgbouncer`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { formatViolations } from './checker.js';
import { chaosSeed } from './prng.js';
import { runScenario, type RunResult } from './run.js';
import { scenariosFor } from './scenarios.js';
import { formatSummary } from './summary.js';
import { scaled } from '../support/scale.js';

const seed = chaosSeed();
const durationMs = scaled(12_000);
const dir = mkdtempSync(join(tmpdir(), 'leasefence-chaos-pgbouncer-'));
const results: RunResult[] = [];
let failed = false;

afterAll(() => {
  console.log(`\nchaos through PgBouncer, seed ${seed} (replay with CHAOS_SEED=${seed})\n${formatSummary(results)}`);
  if (failed) console.log(`histories of the failing runs are kept in ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
});

const [scenario] = scenariosFor('postgres-pgbouncer');

it(`postgres-pgbouncer / ${scenario!.name} (pg + postgres-js): ${scenario!.summary}; every check holds`, {
  timeout: durationMs + 240_000,
}, async () => {
  const result = await runScenario({ store: 'postgres-pgbouncer', scenario: scenario!, seed, durationMs, dir });
  results.push(result);
  const { report, crashes, kleppmann } = result;
  failed ||= report.violations.length > 0 || crashes.length > 0;
  expect(crashes.map((crash) => `${crash.proc} exited ${crash.code ?? crash.signal}: ${crash.stderr.slice(-600)}`)).toEqual([]);
  expect(report.violations.length, `seed ${seed}, history in ${result.historyDir}\n${formatViolations(report.violations)}`).toBe(0);
  // NOTE: the pooler was restarted at least once (the scenario's first fault), and work went on after it.
  expect(report.figures.faults['restart'] ?? 0).toBeGreaterThan(0);
  expect(report.figures.grants).toBeGreaterThan(5);
  expect(report.figures.writesAcked).toBeGreaterThan(10);
  expect(result.diedInWrite.applied).toBe(0);
  expect(kleppmann.accepted).toBe(0);
});
