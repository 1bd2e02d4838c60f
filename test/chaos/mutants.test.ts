/**
 * The checker bites: each planted bug (mutants.ts), run against the real servers under the deterministic
 * Kleppmann scenario with concurrent workers, is caught. The same run with the real adapters passes
 * (chaos.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { StoreKind } from './backend.js';
import { chaosSeed } from './prng.js';
import { runScenario } from './run.js';
import { SCENARIOS } from './scenarios.js';
import { MUTANTS, type MutantName } from './mutants.js';

const seed = chaosSeed();
const durationMs = Number(process.env['CHAOS_MUTANT_DURATION'] ?? 5000);
const dir = mkdtempSync(join(tmpdir(), 'leasefence-chaos-mutants-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const kleppmann = SCENARIOS.find((scenario) => scenario.name === 'kleppmann');
const sharedUrl: Record<StoreKind, string | null> = {
  postgres: process.env['LEASEFENCE_PG_URL'] ?? null,
  redis: process.env['LEASEFENCE_REDIS_URL'] ?? null,
};

/** The checks each planted bug must trip (at least one of them). */
const EXPECTED: Record<MutantName, readonly string[]> = {
  'unfenced-write': ['stale-accepted', 'expired-accepted', 'ledger-order'],
  'blind-renew': ['stale-accepted', 'expired-accepted', 'two-live-grants', 'token-reused', 'token-regressed'],
  'racy-claim': ['token-reused', 'two-live-grants', 'token-order'],
};

describe.sequential(`planted bugs are caught by the chaos checker (seed ${seed})`, () => {
  for (const store of ['postgres', 'redis'] as const) {
    for (const variant of MUTANTS) {
      it(`${store} with ${variant}: the checker reports ${EXPECTED[variant].join(' / ')}`, { timeout: durationMs + 60_000 }, async () => {
        if (kleppmann === undefined) throw new Error('no kleppmann scenario');
        const result = await runScenario({ store, scenario: kleppmann, seed, durationMs, variant, dir, sharedUrl: sharedUrl[store] });
        const fired = new Set(result.report.violations.map((violation) => violation.check));
        console.log(`${store} ${variant}: ${result.report.violations.length} violations (${[...fired].join(', ')})`);
        expect(result.report.ok).toBe(false);
        expect(EXPECTED[variant].some((check) => fired.has(check)), `fired: ${[...fired].join(', ')}`).toBe(true);
      });
    }
  }
});
