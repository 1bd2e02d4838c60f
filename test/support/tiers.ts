/**
 * The four test tiers (vitest projects, see vitest.config.ts), by what a file needs:
 * - `unit`: no server, no build, no browser: the pure core, the shell, the CLI's rendering, the memory,
 *   SQLite and PGlite suites. Every test file not listed below; `npm run test:unit` is the inner loop.
 * - `stores`: the run's real PostgreSQL and redis-server (global-setup.ts), or a server of the file's own.
 * - `long`: chaos runs, topologies (cluster, sentinel, replicas), processes killed or frozen, and what builds
 *   or packs the package or drives Chromium (package, docs, examples, the timeline picture).
 * - `runtimes`: the packed package on Node 20, 22 and 24, Bun and Deno (installed from npm into a cache,
 *   test/support/runtimes.ts), against the run's servers. Last: it is the slowest to start on a new machine.
 * A file that mixes memory and server suites is a `stores` file. `npm test` runs all four.
 *
 * A file listed here that no longer exists, or listed twice, fails the config (`checkTiers`); a server, a build
 * or a browser started from a `unit` file fails that file (`assertTierMayStart`), so a new file that needs one
 * cannot sit in `unit` unnoticed.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The tiers, in the order `npm test` lists them. */
export const TIERS = ['unit', 'stores', 'long', 'runtimes'] as const;
export type Tier = (typeof TIERS)[number];

/** Which tier the running test worker belongs to (set per project in vitest.config.ts). */
export const TIER_VARIABLE = 'LEASEFENCE_TEST_TIER';

/** Files that need the real PostgreSQL or redis-server. */
export const STORES_FILES: readonly string[] = [
  'test/adapters/claim-held-bytes.test.ts',
  'test/adapters/etcd-agrees.test.ts',
  'test/adapters/etcd-expiry.test.ts',
  'test/adapters/etcd-failures.test.ts',
  'test/adapters/etcd-freed.test.ts',
  'test/adapters/etcd-key-state.test.ts',
  'test/adapters/etcd-list.test.ts',
  'test/adapters/etcd-remove.test.ts',
  'test/adapters/etcd-specs.test.ts',
  'test/adapters/etcd-store.test.ts',
  'test/adapters/etcd-submissions.test.ts',
  'test/adapters/etcd-tokens.test.ts',
  'test/adapters/postgres-checkout-error.test.ts',
  'test/adapters/postgres-claim-next.test.ts',
  'test/adapters/postgres-connect-wrappers.test.ts',
  'test/adapters/postgres-errors.test.ts',
  'test/adapters/postgres-fenced-transaction.test.ts',
  'test/adapters/postgres-freed-interest.test.ts',
  'test/adapters/postgres-freed.test.ts',
  'test/adapters/postgres-late-callback.test.ts',
  'test/adapters/postgres-lease-commit.test.ts',
  'test/adapters/postgres-otel-pg.test.ts',
  'test/adapters/postgres-permits.test.ts',
  'test/adapters/postgres-pg.test.ts',
  'test/adapters/postgres-pgbouncer-specs.test.ts',
  'test/adapters/postgres-pgbouncer.test.ts',
  'test/adapters/postgres-postgresjs.test.ts',
  'test/adapters/postgres-search-path.test.ts',
  'test/adapters/postgres-secret.test.ts',
  'test/adapters/postgres-server.test.ts',
  'test/adapters/postgres-stored-data.test.ts',
  'test/adapters/postgres-wire.test.ts',
  'test/adapters/redis-claim-next-agrees.test.ts',
  'test/adapters/redis-claim-next-model.test.ts',
  'test/adapters/redis-claim-next-race.test.ts',
  'test/adapters/redis-claim-next.test.ts',
  'test/adapters/redis-permits-agrees.test.ts',
  'test/adapters/redis-permits-cluster.test.ts',
  'test/adapters/redis-permits-race.test.ts',
  'test/adapters/redis-permits.test.ts',
  'test/adapters/redis-cluster-down.test.ts',
  'test/adapters/redis-command-checks.test.ts',
  'test/adapters/redis-connection.test.ts',
  'test/adapters/redis-errors.test.ts',
  'test/adapters/redis-freed.test.ts',
  'test/adapters/redis-ioredis.test.ts',
  'test/adapters/redis-ioredis6.test.ts',
  'test/adapters/redis-node-redis.test.ts',
  'test/adapters/redis-node-redis6.test.ts',
  'test/adapters/redis-record-cluster.test.ts',
  'test/adapters/redis-record-ops.test.ts',
  'test/adapters/redis-record-races.test.ts',
  'test/adapters/redis-redelivery.test.ts',
  'test/adapters/redis-restart.test.ts',
  'test/adapters/redis-same-bytes.test.ts',
  'test/adapters/redis-subscriber-factory.test.ts',
  'test/chaos/pg-connection-loss.test.ts',
  'test/chaos/redis-redelivery.test.ts',
  'test/cli/cli.test.ts',
  'test/cli/confirmation.test.ts',
  'test/cli/drivers.test.ts',
  'test/cli/etcd.test.ts',
  'test/cli/injection.test.ts',
  'test/cli/printable-input.test.ts',
  'test/cli/secrets.test.ts',
  'test/operator/list-checkpoint-bytes.test.ts',
  'test/operator/list-postgres-cost.test.ts',
  'test/operator/list-postgres.test.ts',
  'test/operator/list-redis.test.ts',
  'test/security/checkpoint-tojson.test.ts',
  'test/security/fuzz-sequences.test.ts',
  'test/security/fuzz-servers.test.ts',
  'test/security/fuzz-stores-agree.test.ts',
  'test/topology/postgres-token-floor.test.ts',
  'test/waiting-stores/revoke-notice.test.ts',
  'test/waiting-stores/wake-flood.test.ts',
  'test/waiting-stores/fair-order.test.ts',
  'test/worker-safety/readme-promises.test.ts',
];

/** Chaos, topologies, killed or frozen processes, builds, packing and the browser. */
export const LONG_FILES: readonly string[] = [
  'test/adapters/etcd-cluster.test.ts',
  'test/adapters/postgres-freeze.test.ts',
  'test/adapters/sqlite-migrate-race.test.ts',
  'test/adapters/sqlite-processes.test.ts',
  'test/bench/library.test.ts',
  'test/chaos/chaos.test.ts',
  'test/chaos/etcd.test.ts',
  'test/chaos/mutants.test.ts',
  'test/chaos/pgbouncer.test.ts',
  'test/chaos/topologies.test.ts',
  'test/demo/timeline-browser.test.ts',
  'test/docs/api-reference.test.ts',
  'test/docs/readme.test.ts',
  'test/election/processes.test.ts',
  'test/examples/examples.test.ts',
  'test/operator/list-redis-cluster.test.ts',
  'test/package/package.test.ts',
  'test/topology/postgres-promotion.test.ts',
  'test/topology/redis-cluster-claim-next.test.ts',
  'test/topology/redis-cluster-waiting.test.ts',
  'test/topology/redis-cluster.test.ts',
  'test/topology/redis-failover-long.test.ts',
  'test/topology/redis-sentinel.test.ts',
  'test/waiting-stores/cross-process.test.ts',
  'test/worker-safety/exactly-once.test.ts',
];

/** The runtime matrix: the packed package run by other runtimes than the one vitest runs on. */
export const RUNTIMES_FILES: readonly string[] = ['test/runtimes/runtimes.test.ts'];

/** Every test file under `root` (`test/**\/*.test.ts`), as paths relative to `root`, sorted. */
export function allTestFiles(root: string): string[] {
  return readdirSync(join(root, 'test'), { recursive: true, encoding: 'utf8' })
    .map((path) => `test/${path.split('\\').join('/')}`)
    .filter((path) => path.endsWith('.test.ts'))
    .sort();
}

/** The test files of each tier: `unit` is every file that `stores`, `long` and `runtimes` do not list. */
export function filesByTier(root: string): Record<Tier, readonly string[]> {
  const listed = new Set([...STORES_FILES, ...LONG_FILES, ...RUNTIMES_FILES]);
  return { unit: allTestFiles(root).filter((file) => !listed.has(file)), stores: STORES_FILES, long: LONG_FILES, runtimes: RUNTIMES_FILES };
}

/** Throws unless every listed file exists and is listed once, so each test file runs in exactly one tier. */
export function checkTiers(root: string): void {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const file of [...STORES_FILES, ...LONG_FILES, ...RUNTIMES_FILES]) {
    if (seen.has(file)) problems.push(`${file} is listed twice`);
    seen.add(file);
    if (!existsSync(join(root, file))) problems.push(`${file} does not exist (moved or renamed? update the list)`);
  }
  if (problems.length > 0) throw new Error(`test/support/tiers.ts: ${problems.join('; ')}`);
}

/**
 * Throws in a `unit` worker: `what` (a server, a build, a browser) belongs to the `stores`, `long` or `runtimes` tier.
 * Called by the helpers that start one.
 */
export function assertTierMayStart(what: string): void {
  if (process.env[TIER_VARIABLE] !== 'unit') return;
  throw new Error(
    `the unit tier starts no ${what}: list this test file under STORES_FILES, LONG_FILES or RUNTIMES_FILES in test/support/tiers.ts`,
  );
}
