import { fileURLToPath } from 'node:url';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { checkTiers, filesByTier, TIER_VARIABLE, TIERS, type Tier } from './test/support/tiers.js';

const ROOT = fileURLToPath(new URL('.', import.meta.url));
// NOTE: a listed file that is gone, or listed twice, stops the run here rather than dropping out of every tier.
checkTiers(ROOT);
const files = filesByTier(ROOT);

/**
 * One tier as a vitest project (test/support/tiers.ts says which file is where). `stores`, `long` and `runtimes`
 * share one PostgreSQL and one redis-server: the first project's globalSetup starts them and sets
 * LEASEFENCE_PG_URL / _REDIS_URL, which the others find set and use as they are.
 */
function tier(name: Tier, servers: boolean, test: TestProjectInlineConfiguration['test'] = {}): TestProjectInlineConfiguration {
  return {
    extends: true,
    test: {
      name,
      include: [...files[name]],
      globalSetup: servers ? ['test/support/global-setup.ts'] : [],
      // NOTE: `npm test` runs the tiers one after the other, in this order (unit's failures come first).
      sequence: { groupOrder: TIERS.indexOf(name) },
      ...test,
      env: { [TIER_VARIABLE]: name, ...test.env },
    },
  };
}

export default defineConfig({
  test: {
    setupFiles: ['test/support/fast-check-setup.ts'],
    // NOTE: the second reporter prints the plain closing line CI reads: `Tests: N passed, N failed, N skipped`,
    // once for the whole run, whichever projects ran.
    reporters: ['default', './test/support/closing-line-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    projects: [
      tier('unit', false, {
        // NOTE: a unit worker sees no server URL, even inside `npm test` where the stores' servers run.
        env: { LEASEFENCE_PG_URL: '', LEASEFENCE_REDIS_URL: '' },
        // NOTE: the unit files share one module graph per worker (importing src/ once, not once per file: most
        // of the tier's time otherwise), and two workers overlap the files that wait on real timers.
        isolate: false,
        maxWorkers: 2,
      }),
      tier('stores', true),
      tier('long', true),
      // NOTE: the runtimes run programs as child processes, one at a time (the file's tests are sequential),
      // each bounded at 120 s (test/runtimes/runtimes.test.ts); a test runs up to two.
      tier('runtimes', true, { testTimeout: 300_000 }),
    ],
  },
});
