/**
 * The checker bites: each planted bug (mutants.ts), run against the real servers under the deterministic
 * Kleppmann scenario with concurrent workers, is caught. The same run with the real adapters passes
 * (chaos.test.ts).
 *
 * A run does not last a fixed window: it stops as soon as the checker, run on the history so far, reports
 * a violation that cannot go away (see SETTLED_CHECKS); the ceiling only bounds a run that never exposes
 * the bug, and fails it.
 * The exposing event is forced: for `unfenced-write` and `blind-renew`, the Kleppmann round (the victim is
 * stopped past its TTL while another worker takes over, then sends its write); for `racy-claim`, the
 * scripted rendezvous inside the racy claim (two claimers of a free key both read before either writes).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { StoreKind } from './backend.js';
import { chaosSeed } from './prng.js';
import { checkHistory } from './checker.js';
import { readHistories, runScenario, type RunProgress } from './run.js';
import { mutantRepeats } from '../support/repeats.js';
import { SCENARIOS } from './scenarios.js';
import { MUTANTS, type MutantName } from './mutants.js';

const seed = chaosSeed();
/** Ceiling of one run, ms: runs stop at the first expected violation, within seconds. */
const durationMs = Number(process.env['CHAOS_MUTANT_DURATION'] ?? 60_000);
const dir = mkdtempSync(join(tmpdir(), 'leasefence-chaos-mutants-'));
// NOTE: the racy claims of the worker processes (which inherit this environment) meet in files under here.
process.env['LEASEFENCE_RACY_CLAIM_DIR'] = join(dir, 'racy-claim');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * The checks that, once reported on a run in progress, stay reported at its end: a token granted twice (two
 * completed claims), and a write in the store's ledger that was sent after a newer grant had returned.
 * Others can be an artifact of reading a run mid-flight (an operation applied but not yet recorded): a
 * release in flight looks like two live grants, a claim completed after the store was read looks like a
 * regressed token. Every planted bug here trips one of these two in the exposing round.
 */
const SETTLED_CHECKS: readonly string[] = ['stale-accepted', 'token-reused'];

/** Whether the checker, on the run so far, reports one of the settled checks. */
async function exposed(progress: RunProgress): Promise<boolean> {
  // NOTE: the store first, then the history: every write in the ledger read has its invoke in the history.
  const final = await progress.readFinal();
  const report = checkHistory(readHistories(progress.historyDir), final, { takeoverBoundMs: null });
  return report.violations.some((violation) => SETTLED_CHECKS.includes(violation.check));
}

const kleppmann = SCENARIOS.find((scenario) => scenario.name === 'kleppmann');
const sharedUrl: Record<StoreKind, string | null> = {
  postgres: process.env['LEASEFENCE_PG_URL'] ?? null,
  redis: process.env['LEASEFENCE_REDIS_URL'] ?? null,
  sqlite: null,
  'redis-cluster': null,
  'redis-sentinel': null,
  'postgres-promotion': null,
  'postgres-pgbouncer': null,
  etcd: null,
  'etcd-cluster': null,
};

/** The checks each planted bug must trip (at least one of them). */
const EXPECTED: Record<MutantName, readonly string[]> = {
  'unfenced-write': ['stale-accepted', 'expired-accepted', 'ledger-order'],
  'blind-renew': ['stale-accepted', 'expired-accepted', 'two-live-grants', 'token-reused', 'token-regressed'],
  'racy-claim': ['token-reused', 'two-live-grants', 'token-order'],
};

describe.sequential(`planted bugs are caught by the chaos checker (seed ${seed})`, () => {
  for (const store of ['postgres', 'redis', 'sqlite'] as const) {
    for (const variant of MUTANTS) {
      it(`${store} with ${variant}: the checker reports ${EXPECTED[variant].join(' / ')}`, {
        timeout: durationMs + 180_000,
        repeats: mutantRepeats(),
      }, async () => {
        if (kleppmann === undefined) throw new Error('no kleppmann scenario');
        const started = performance.now();
        const stopWhen = (progress: RunProgress) => exposed(progress);
        const result = await runScenario({
          store,
          scenario: kleppmann,
          seed,
          durationMs,
          variant,
          dir,
          sharedUrl: sharedUrl[store],
          stopWhen,
        }).catch((error: unknown) => {
          console.log(`${store} ${variant}: the run failed: ${String(error)}`);
          throw error;
        });
        const fired = new Set(result.report.violations.map((violation) => violation.check));
        const { rounds, accepted } = result.kleppmann;
        console.log(
          `${store} ${variant}: ${result.report.violations.length} violations (${[...fired].join(', ')}) after ${((performance.now() - started) / 1000).toFixed(1)} s, ${rounds} pause round(s), ${accepted} stale write(s) accepted`,
        );
        expect(result.report.ok).toBe(false);
        expect(
          EXPECTED[variant].some((check) => fired.has(check)),
          `fired: ${[...fired].join(', ')}`,
        ).toBe(true);
      });
    }
  }
});
