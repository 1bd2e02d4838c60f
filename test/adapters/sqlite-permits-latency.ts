/**
 * A quick measurement, not a test: one `acquirePermit` against one `claim` on the same SQLite file (WAL, one
 * connection, the wall clock). Each loop times only the operation (its release is untimed):
 * - claim: a plain key, claimed and released;
 * - acquire: a semaphore with limit 3 whose other two permits are held (so each acquire reads 3 permit rows and
 *   takes the one released last round), acquired and released;
 * - full: an acquire of a semaphore whose 3 permits are all held (the answer a waiter gets);
 * - wide: as acquire, with limit 10 and nine permits held (10 rows read: the cost of a permit row).
 * Prints the median and p99 in µs of each, over rounds interleaved so that both see the same machine.
 *
 * ```sh
 * npx tsx test/adapters/sqlite-permits-latency.ts [iterations=5000] [rounds=5] [better-sqlite3|node:sqlite]
 * ```
 * (node:sqlite on Node 22+.)
 */
import { createRequire } from 'node:module';
import { createSqliteStore, type SqliteClient } from '../../src/adapters/sqlite/index.js';
import type { Fence } from '../../src/fence/types.js';
import { newSecret } from '../../src/secret.js';
import { permitCommand } from '../permits/race-checks.js';
import { freshDatabasePath } from './sqlite-harness.js';

const iterations = Number(process.argv[2] ?? '5000');
const rounds = Number(process.argv[3] ?? '5');
const driver = process.argv[4] ?? 'better-sqlite3';

const file = freshDatabasePath('leasefence-permits-latency');
type Closable = SqliteClient & { close(): unknown };
const require = createRequire(import.meta.url);
// NOTE: loaded by name: better-sqlite3 is built for the repo's Node 20 only, node:sqlite exists from Node 22.
const database: Closable =
  driver === 'node:sqlite'
    ? new (require('node:sqlite') as { DatabaseSync: new (path: string) => Closable }).DatabaseSync(file.path)
    : new (require('better-sqlite3') as new (path: string) => Closable)(file.path);
// NOTE: better-sqlite3 is built with WAL's synchronous = NORMAL by default; node:sqlite keeps FULL (an fsync per
// commit, milliseconds each on a shared disk): set NORMAL so both figures measure the work, not the disk.
database.exec('PRAGMA synchronous = NORMAL');
const store = createSqliteStore({ client: database });
await store.migrate();

const quantile = (sorted: readonly number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;

const timed = async (label: string, operation: () => Promise<Fence | null>, release: (fence: Fence) => Promise<unknown>) => {
  const times: number[] = [];
  for (let index = 0; index < iterations; index += 1) {
    const started = process.hrtime.bigint();
    const fence = await operation();
    times.push(Number(process.hrtime.bigint() - started) / 1_000);
    if (fence !== null) await release(fence);
  }
  times.sort((a, b) => a - b);
  return { label, median: quantile(times, 0.5), p99: quantile(times, 0.99) };
};

const release = (fence: Fence) => store.release({ fence });

const claimOnce = async (): Promise<Fence> => {
  const secret = newSecret();
  const outcome = await store.claim({
    key: 'plain',
    holder: 'bench',
    runId: null,
    secret,
    ttlMs: 60_000,
    attributes: {},
    recovering: false,
  });
  if (!outcome.ok) throw new Error(`claim answered ${outcome.reason}`);
  return { key: outcome.key, token: outcome.token, secret, holder: 'bench', runId: null };
};

const acquireOnce =
  (semaphore: string, expect: boolean, limit = 3) =>
  async (): Promise<Fence | null> => {
    // NOTE: an hour: the held permits must outlive the run (node:sqlite fsyncs every commit: ms per operation).
    const command = permitCommand(semaphore, 'bench', limit, 3_600_000);
    const outcome = await store.acquirePermit(command);
    if (outcome.ok !== expect) throw new Error(`acquire of ${semaphore} answered ${outcome.ok ? 'a grant' : outcome.reason}`);
    return outcome.ok ? { key: outcome.key, token: outcome.token, secret: command.secret, holder: 'bench', runId: command.runId } : null;
  };

// Held for the run: two permits of `pool`, all three of `busy`, nine of `wide`.
for (let index = 0; index < 2; index += 1) await acquireOnce('pool', true)();
for (let index = 0; index < 3; index += 1) await acquireOnce('busy', true)();
for (let index = 0; index < 9; index += 1) await acquireOnce('wide', true, 10)();

const results = new Map<string, { median: number[]; p99: number[] }>();
for (let round = 0; round < rounds; round += 1) {
  for (const result of [
    await timed('claim', claimOnce, release),
    await timed('acquire (limit 3, 2 held)', acquireOnce('pool', true), release),
    await timed('acquire answering full', acquireOnce('busy', false), release),
    await timed('acquire (limit 10, 9 held)', acquireOnce('wide', true, 10), release),
  ]) {
    const seen = results.get(result.label) ?? { median: [], p99: [] };
    seen.median.push(result.median);
    seen.p99.push(result.p99);
    results.set(result.label, seen);
  }
}
console.log(`${driver}, Node ${process.version}, ${iterations} iterations x ${rounds} rounds`);
for (const [label, { median, p99 }] of results) {
  const best = (values: number[]) => Math.min(...values).toFixed(1);
  console.log(
    `${label.padEnd(28)} median ${best(median)} µs  p99 ${best(p99)} µs  (per round medians: ${median.map((m) => m.toFixed(1)).join(', ')})`,
  );
}
database.close();
file.remove();
