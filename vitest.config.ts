import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/support/fast-check-setup.ts'],
    // NOTE: one ephemeral Postgres and one redis-server for the whole run (LEASEFENCE_PG_URL / _REDIS_URL).
    globalSetup: ['test/support/global-setup.ts'],
    // NOTE: the second reporter prints the plain closing line CI reads: `Tests: N passed, N failed, N skipped`.
    reporters: ['default', './test/support/closing-line-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
