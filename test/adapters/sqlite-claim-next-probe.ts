/**
 * A hand-run probe (not a test) of what claim-next costs on the SQLite store, in CPU per operation (user + system,
 * `process.cpuUsage`), better-sqlite3 on a file in WAL mode with `synchronous = NORMAL`:
 *
 *   npx tsx test/adapters/sqlite-claim-next-probe.ts
 *   LF_BEFORE_SRC=/tmp/before/src npx tsx test/adapters/sqlite-claim-next-probe.ts
 *
 * - claim-next + release cycles and idle claim-nexts (every item held) on sets of 100 and 10,000 items: the
 *   index makes both independent of the set's size;
 * - with `LF_BEFORE_SRC` (the `src` of an earlier revision, e.g. `git archive <rev> src | tar -x -C /tmp/before`,
 *   with node_modules reachable from it): the ordinary-key hot path (claim + release, renew, a fenced write with one
 *   INSERT, inspect) of that revision's store against this one, same process, alternating rounds, each on its own
 *   file of 10,000 idle keys (this one's also holding 1,000 items), medians of 9 rounds.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as current from '../../src/adapters/sqlite/index.js';
import { newSecret } from '../../src/secret.js';

type ProbeStore = current.SqliteStore;
const cpuNow = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};
const median = (values: readonly number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const directories: string[] = [];

async function openStore(module: typeof current): Promise<{ store: ProbeStore; database: Database.Database }> {
  const directory = mkdtempSync(join(tmpdir(), 'leasefence-claim-next-probe-'));
  directories.push(directory);
  const database = new Database(join(directory, 'leases.db'));
  const store = module.createSqliteStore({ client: database });
  await store.migrate();
  database.exec('PRAGMA synchronous = NORMAL');
  return { store, database };
}

const claimNextCommand = (ttlMs: number) => ({
  set: 'q',
  holder: 'w',
  runId: null,
  secret: newSecret(),
  ttlMs,
  attributes: {},
  onExpired: 'take-over' as const,
});

async function claimNextCosts(): Promise<void> {
  const operations = 2_000;
  for (const size of [100, 10_000]) {
    const { store, database } = await openStore(current);
    for (let start = 0; start < size; start += 1_000)
      await store.addItems({ set: 'q', keys: Array.from({ length: Math.min(1_000, size - start) }, (_, index) => `{q}:${start + index}`) });
    const cycles: number[] = [];
    const idles: number[] = [];
    for (let round = 0; round < 5; round += 1) {
      const started = cpuNow();
      for (let index = 0; index < operations; index += 1) {
        const command = claimNextCommand(60_000);
        const granted = await store.claimNext(command);
        if (!granted.ok) throw new Error('claim-next answered idle');
        await store.release({ fence: { key: granted.key, token: granted.token, secret: command.secret, holder: 'w', runId: null } });
      }
      cycles.push((cpuNow() - started) / operations);
    }
    while ((await store.claimNext(claimNextCommand(600_000))).ok) {}
    for (let round = 0; round < 5; round += 1) {
      const started = cpuNow();
      for (let index = 0; index < operations; index += 1)
        if ((await store.claimNext(claimNextCommand(60_000))).ok) throw new Error('granted');
      idles.push((cpuNow() - started) / operations);
    }
    console.log(`set of ${size}: claim-next + release ${median(cycles).toFixed(1)} µs, idle claim-next ${median(idles).toFixed(1)} µs`);
    database.close();
  }
}

async function hotPathAgainst(beforeSrc: string): Promise<void> {
  const before = (await import(join(beforeSrc, 'adapters/sqlite/index.ts'))) as typeof current;
  const operations = 3_000;
  const seeded = async (module: typeof current, items: boolean) => {
    const opened = await openStore(module);
    for (let index = 0; index < 10_000; index += 1)
      await opened.store.claim({
        key: `seed:${index}`,
        holder: 'h',
        runId: null,
        secret: newSecret(),
        ttlMs: 1,
        attributes: {},
        recovering: false,
      });
    if (items)
      for (let start = 0; start < 1_000; start += 500)
        await opened.store.addItems({ set: 'q', keys: Array.from({ length: 500 }, (_, index) => `{q}:${start + index}`) });
    opened.database.exec('CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT, token INTEGER)');
    return opened.store;
  };
  const variants = { before: await seeded(before, false), after: await seeded(current, true) };
  const results = new Map<string, { before: number[]; after: number[] }>();
  const record = (variant: 'before' | 'after', operation: string, value: number) => {
    const entry = results.get(operation) ?? { before: [], after: [] };
    entry[variant].push(value);
    results.set(operation, entry);
  };
  for (let round = 0; round < 9; round += 1) {
    for (const variant of round % 2 === 0 ? (['before', 'after'] as const) : (['after', 'before'] as const)) {
      const store = variants[variant];
      let started = cpuNow();
      for (let index = 0; index < operations; index += 1) {
        const secret = newSecret();
        const key = `cycle:${index % 32}`;
        const claimed = await store.claim({ key, holder: 'w', runId: null, secret, ttlMs: 60_000, attributes: {}, recovering: false });
        if (!claimed.ok) throw new Error(`claim refused: ${claimed.reason}`);
        await store.release({ fence: { key, token: claimed.token, secret, holder: 'w', runId: null } });
      }
      record(variant, 'claim + release', (cpuNow() - started) / operations);
      const secret = newSecret();
      const held = await store.claim({ key: 'held', holder: 'w', runId: null, secret, ttlMs: 60_000, attributes: {}, recovering: false });
      if (!held.ok) throw new Error('claim refused');
      const fence = { key: 'held', token: held.token, secret, holder: 'w', runId: null };
      started = cpuNow();
      for (let index = 0; index < operations; index += 1) await store.renew({ fence, ttlMs: 60_000 });
      record(variant, 'renew', (cpuNow() - started) / operations);
      started = cpuNow();
      for (let index = 0; index < operations; index += 1)
        await store.fencedWrite(fence, (tx) => tx.run('INSERT INTO ledger (key, token) VALUES (?, ?)', 'held', fence.token), {});
      record(variant, 'fenced write + INSERT', (cpuNow() - started) / operations);
      started = cpuNow();
      for (let index = 0; index < operations; index += 1) await store.inspect(`seed:${index % 10_000}`);
      record(variant, 'inspect', (cpuNow() - started) / operations);
      await store.release({ fence });
    }
  }
  for (const [operation, { before: was, after: now }] of results) {
    const [a, b] = [median(was), median(now)];
    console.log(`${operation.padEnd(22)} before ${a.toFixed(2)} µs, after ${b.toFixed(2)} µs (${(((b - a) / a) * 100).toFixed(1)}%)`);
  }
}

await claimNextCosts();
const beforeSrc = process.env['LF_BEFORE_SRC'];
if (beforeSrc !== undefined) await hotPathAgainst(beforeSrc);
for (const directory of directories) rmSync(directory, { recursive: true, force: true });
