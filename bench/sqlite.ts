/**
 * SQLite benchmark: leasefence's SQLite store against a raw single-statement baseline, in the same run, on
 * one database file in WAL mode (one better-sqlite3 connection; the driver is synchronous, so one process
 * runs one operation at a time and sequential throughput is the figure).
 *
 *   npx tsx bench/sqlite.ts     (BENCH_MS=1000 per measurement, BENCH_ROUNDS=5 in rotated order, medians;
 *                                BENCH_SYNC=NORMAL,FULL: PRAGMA synchronous modes to measure)
 *
 * Both lease tables hold the same 10,000 idle keys. Contenders:
 * - claim + release cycles, each on one of 32 keys in turn: leasefence (`leases.claim` + `leases.release`:
 *   two BEGIN IMMEDIATE transactions, each a read, the pure transition and an upsert; a secret hashed, a
 *   token minted with its floor, the ending and checkpoint kept) and the raw baseline (an INSERT ... ON
 *   CONFLICT DO UPDATE ... WHERE expired RETURNING claim and an UPDATE release: two autocommit statements,
 *   a token, no secret, no history);
 * - fenced writes (one ledger INSERT each, under a lease held throughout): `leases.fencedWrite` (BEGIN
 *   IMMEDIATE, read + fence check, the INSERT, COMMIT), the raw single-statement fenced INSERT (INSERT ...
 *   SELECT FROM the lease row WHERE holder, token and expiry match) and a plain INSERT (no fence at all);
 * - submissions (issue 24): `fencedWrite` with a submission (a new run id each time: lookup, write, record) and
 *   replayed (the same run again: the lookup alone), against a raw transaction that records the run id
 *   (INSERT ... ON CONFLICT DO NOTHING) and then makes the raw fenced INSERT.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteStore } from '../src/adapters/sqlite/index.js';
import { createLeases } from '../src/leases.js';
import { PLAIN_INSERT, RAW_CLAIM, RAW_FENCED_INSERT, RAW_RECORD_RUN, RAW_RELEASE, RAW_SCHEMA } from './sqlite-groups.js';

const MEASURE_MS = Number(process.env['BENCH_MS'] ?? 1_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const SYNC_MODES = (process.env['BENCH_SYNC'] ?? 'NORMAL,FULL').split(',');
const TTL_MS = 60_000;
const SEED_KEYS = 10_000;
const CYCLE_KEYS = 32;

type Contender = { readonly label: string; run(): Promise<void> | void };

/** Operations per second of `run` over MEASURE_MS. */
async function measure(contender: Contender): Promise<number> {
  const startedAt = performance.now();
  let operations = 0;
  while (performance.now() - startedAt < MEASURE_MS) {
    for (let batch = 0; batch < 50; batch += 1) await contender.run();
    operations += 50;
  }
  return (operations * 1000) / (performance.now() - startedAt);
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Runs the contenders ROUNDS times in rotated order and returns each one's median ops/s. */
async function rounds(contenders: readonly Contender[]): Promise<Map<string, number>> {
  const samples = new Map<string, number[]>(contenders.map((contender) => [contender.label, []]));
  for (let round = 0; round < ROUNDS; round += 1) {
    for (let index = 0; index < contenders.length; index += 1) {
      const contender = contenders[(index + round) % contenders.length]!;
      samples.get(contender.label)!.push(await measure(contender));
    }
  }
  return new Map([...samples].map(([label, values]) => [label, median(values)]));
}

async function benchMode(synchronous: string): Promise<void> {
  const directory = mkdtempSync(join(tmpdir(), 'leasefence-bench-sqlite-'));
  const database = new Database(join(directory, 'bench.db'));
  try {
    const store = createSqliteStore({ client: database });
    await store.migrate();
    // NOTE: seeded with synchronous = NORMAL (10,000 fsyncs would take minutes), measured in the mode asked.
    database.exec('PRAGMA synchronous = NORMAL');
    for (const statement of RAW_SCHEMA) database.exec(statement);
    const leases = createLeases(store, { holder: 'bench', ttlMs: TTL_MS });
    // NOTE: both tables hold the same idle keys, so every lookup is a B-tree search in a table in use.
    const seedRaw = database.prepare('INSERT INTO raw_leases (name, holder, token, expires_at) VALUES (?, NULL, 1, 0)');
    database.transaction(() => {
      for (let index = 0; index < SEED_KEYS; index += 1) seedRaw.run(`seed:${index}`);
    })();
    for (let index = 0; index < SEED_KEYS; index += 1) {
      const claimed = await leases.claim(`seed:${index}`);
      if (claimed.ok) await leases.release(claimed.lease);
    }

    database.exec(`PRAGMA synchronous = ${synchronous === 'FULL' ? 'FULL' : 'NORMAL'}`);
    const rawClaim = database.prepare(RAW_CLAIM);
    const rawRelease = database.prepare(RAW_RELEASE);
    const rawFenced = database.prepare(RAW_FENCED_INSERT);
    const plainInsert = database.prepare(PLAIN_INSERT);
    const recordRun = database.prepare(RAW_RECORD_RUN);
    // ATOMICITY: one IMMEDIATE transaction: the run recorded and the fenced INSERT together, or neither.
    const rawSubmit = database.transaction((runId: string, entryText: string, token: number) => {
      if ((recordRun.run('bench:fenced', runId, 'a'.repeat(64)) as { changes: number }).changes !== 1) return;
      const result = rawFenced.run(entryText, 'bench:fenced', 'bench', token, Date.now()) as { changes: number };
      if (result.changes !== 1) throw new Error('raw fenced insert refused');
    });
    const payload = { verdict: 'ok', score: 0.93, labels: ['a', 'b'] };
    let run = 0;
    let cycle = 0;
    const held = await leases.claim('bench:fenced');
    if (!held.ok) throw new Error('could not claim the fenced-write lease');
    const lease = held.lease;
    const rawHeld = rawClaim.get('bench:fenced', 'bench', Date.now() + TTL_MS, Date.now()) as { token: number };
    let entry = 0;
    // NOTE: the replayed run on a key of its own: the new runs' 32 newest would push it out of the retention.
    const replayHeld = await leases.claim('bench:replay');
    if (!replayHeld.ok) throw new Error('could not claim the replay lease');
    const replayLease = replayHeld.lease;
    await leases.fencedWrite(replayLease, (tx) => tx.run(PLAIN_INSERT, replayLease.key, tx.token, 'first'), {
      submission: { payload: { verdict: 'ok', score: 0.93, labels: ['a', 'b'] }, runId: 'r0' },
    });

    const cycles = await rounds([
      {
        label: 'leasefence',
        run: async () => {
          const claimed = await leases.claim(`cycle:${cycle++ % CYCLE_KEYS}`);
          if (!claimed.ok) throw new Error(`claim refused: ${claimed.reason}`);
          await leases.release(claimed.lease);
        },
      },
      {
        label: 'raw',
        run: () => {
          const name = `cycle:${cycle++ % CYCLE_KEYS}`;
          const now = Date.now();
          const row = rawClaim.get(name, 'bench', now + TTL_MS, now) as { token: number } | undefined;
          if (row === undefined) throw new Error('raw claim refused');
          rawRelease.run(now, name, 'bench', row.token);
        },
      },
    ]);
    const writes = await rounds([
      {
        label: 'leasefence',
        run: async () => {
          const outcome = await leases.fencedWrite(lease, (tx) => tx.run(PLAIN_INSERT, lease.key, tx.token, `e${entry++}`));
          if (!outcome.ok) throw new Error(`fenced write refused: ${outcome.reason}`);
        },
      },
      {
        label: 'raw',
        run: () => {
          const result = rawFenced.run(`e${entry++}`, 'bench:fenced', 'bench', rawHeld.token, Date.now()) as { changes: number };
          if (result.changes !== 1) throw new Error('raw fenced insert refused');
        },
      },
      { label: 'plain', run: () => void plainInsert.run('bench:plain', 0, `e${entry++}`) },
      {
        label: 'submission',
        run: async () => {
          const outcome = await leases.fencedWrite(lease, (tx) => tx.run(PLAIN_INSERT, lease.key, tx.token, `e${entry++}`), {
            submission: { payload, runId: `r${++run}` },
          });
          if (!outcome.ok) throw new Error(`fenced write refused: ${outcome.reason}`);
        },
      },
      {
        label: 'replayed',
        run: async () => {
          const outcome = await leases.fencedWrite(replayLease, (tx) => tx.run(PLAIN_INSERT, replayLease.key, tx.token, `e${entry++}`), {
            submission: { payload, runId: 'r0' },
          });
          if (outcome.ok || outcome.reason !== 'replayed') throw new Error(`not replayed: ${outcome.ok ? 'applied' : outcome.reason}`);
        },
      },
      { label: 'raw submission', run: () => void rawSubmit(`r${++run}`, `e${entry++}`, rawHeld.token) },
    ]);
    const fmt = (ops: number) => `${Math.round(ops)}/s (${(1e6 / ops).toFixed(1)} µs)`;
    const ratio = (a: number, b: number) => (a / b).toFixed(2);
    const journal = database.pragma('journal_mode', { simple: true });
    console.log(`\n## synchronous = ${synchronous}, journal_mode = ${journal}, ${ROUNDS} rounds × ${MEASURE_MS} ms, medians`);
    console.log('| | ops/s (µs per op) | ÷ raw |');
    console.log('|---|---|---|');
    console.log(
      `| claim+release cycles: **leasefence** | ${fmt(cycles.get('leasefence')!)} | **${ratio(cycles.get('leasefence')!, cycles.get('raw')!)}** |`,
    );
    console.log(`| claim+release cycles: raw single-statement SQL | ${fmt(cycles.get('raw')!)} | 1.00 |`);
    console.log(
      `| fenced writes: **leasefence** \`fencedWrite\` (BEGIN IMMEDIATE, check, INSERT, COMMIT) | ${fmt(writes.get('leasefence')!)} | **${ratio(writes.get('leasefence')!, writes.get('raw')!)}** |`,
    );
    console.log(`| fenced writes: raw single-statement fenced INSERT | ${fmt(writes.get('raw')!)} | 1.00 |`);
    console.log(`| plain INSERT (no fence) | ${fmt(writes.get('plain')!)} | ${ratio(writes.get('plain')!, writes.get('raw')!)} |`);
    const sub = (label: string) =>
      `${fmt(writes.get(label)!)} | **${ratio(writes.get(label)!, writes.get('raw submission')!)}** (÷ plain fencedWrite ${ratio(writes.get(label)!, writes.get('leasefence')!)})`;
    console.log(`| submissions: **leasefence** \`fencedWrite\` + submission, a new run each time | ${sub('submission')} |`);
    console.log(`| submissions: **leasefence** \`fencedWrite\` + submission replayed (nothing written) | ${sub('replayed')} |`);
    console.log(
      `| submissions: raw transaction, INSERT run ON CONFLICT DO NOTHING + fenced INSERT | ${fmt(writes.get('raw submission')!)} | 1.00 (÷ raw for submissions) |`,
    );
  } finally {
    database.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

console.log(
  `Node ${process.version}, SQLite ${(new Database(':memory:').prepare('SELECT sqlite_version() AS v').get() as { v: string }).v} (better-sqlite3)`,
);
for (const mode of SYNC_MODES) await benchMode(mode);
