/**
 * `npm run bench`, SQLite (issue 27): claim + release and a fenced write against raw statements, at
 * `synchronous = NORMAL` and `FULL` (WAL mode both), one group per operation and mode. better-sqlite3 only (node:sqlite
 * needs Node 22; the bench runs on 20). The driver is synchronous, so each group runs one worker: the figure is the
 * time of one operation, SQLite's work included (it runs in this process: the client CPU column is all of it).
 *
 * Every contender has a database file of its own (no contender checkpoints another's WAL), seeded with the same
 * idle keys (bench/sqlite.ts's 10,000; --quick: 100), and works on one key. Contenders:
 * - raw single statements (the baseline): the claim as one INSERT ... ON CONFLICT DO UPDATE ... WHERE expired
 *   RETURNING token, the release as one UPDATE; the fenced write as one INSERT ... SELECT FROM the lease row WHERE
 *   holder, token and expiry match. Autocommit: one transaction per statement. A token, no secret, no history;
 * - raw `BEGIN IMMEDIATE` transactions, leasefence's shape: BEGIN IMMEDIATE, SELECT the lease row, decide in JS,
 *   write (the upsert, the UPDATE, the ledger INSERT), COMMIT;
 * - leasefence (`leases.claim` + `leases.release`, `leases.fencedWrite` with one ledger INSERT), this tree and, with
 *   BENCH_COMPARE, that tree's ("before: ..."), both bundled as dist/ is (library.ts).
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { comparedLibrary, thisLibrary, type Library } from './library.js';
import type { Contender, Group } from './slices.js';

/** The raw baselines' tables: the lease, a ledger the fenced writes append to, the runs a raw submission records. */
export const RAW_SCHEMA = [
  'CREATE TABLE raw_leases (name TEXT PRIMARY KEY, holder TEXT, token INTEGER NOT NULL, expires_at INTEGER NOT NULL) STRICT, WITHOUT ROWID',
  'CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, token INTEGER NOT NULL, entry TEXT NOT NULL)',
  'CREATE TABLE raw_runs (key TEXT NOT NULL, run_id TEXT NOT NULL, digest TEXT NOT NULL, PRIMARY KEY (key, run_id)) STRICT, WITHOUT ROWID',
];
/** The raw submission's record: once per run id (the fenced INSERT runs only when this one inserted). */
export const RAW_RECORD_RUN = 'INSERT INTO raw_runs (key, run_id, digest) VALUES (?, ?, ?) ON CONFLICT DO NOTHING';
/** ATOMICITY: one statement; SQLite's write lock serialises it with every other writer. */
export const RAW_CLAIM = `INSERT INTO raw_leases AS l (name, holder, token, expires_at) VALUES (?, ?, 1, ?)
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, token = l.token + 1, expires_at = excluded.expires_at
WHERE l.expires_at <= ? OR l.holder IS NULL
RETURNING token`;
export const RAW_RELEASE = 'UPDATE raw_leases SET holder = NULL, expires_at = ? WHERE name = ? AND holder = ? AND token = ?';
export const RAW_FENCED_INSERT = `INSERT INTO ledger (key, token, entry)
SELECT name, token, ? FROM raw_leases WHERE name = ? AND holder = ? AND token = ? AND expires_at > ?`;
export const PLAIN_INSERT = 'INSERT INTO ledger (key, token, entry) VALUES (?, ?, ?)';
/** The raw transactions' read and write (inside their BEGIN IMMEDIATE). */
const RAW_SELECT = 'SELECT holder, token, expires_at FROM raw_leases WHERE name = ?';
const RAW_UPSERT = `INSERT INTO raw_leases (name, holder, token, expires_at) VALUES (?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, token = excluded.token, expires_at = excluded.expires_at`;

const TTL_MS = 60_000;
const SYNC_MODES = ['NORMAL', 'FULL'] as const;
type SyncMode = (typeof SYNC_MODES)[number];

/** The files, connections and bundles the groups opened, closed by `close()`. */
interface Opened {
  readonly databases: Database.Database[];
  readonly directories: string[];
  readonly seedKeys: number;
}

/** A new database file in WAL mode at synchronous = NORMAL (the callers seed it, then set their mode). */
function openDatabase(opened: Opened): Database.Database {
  const directory = mkdtempSync(join(tmpdir(), 'leasefence-bench-sqlite-'));
  opened.directories.push(directory);
  const database = new Database(join(directory, 'bench.db'));
  opened.databases.push(database);
  database.pragma('journal_mode = WAL');
  // NOTE: seeded at NORMAL (10,000 fsyncs would take minutes); `mode` is set once the seed is in.
  database.pragma('synchronous = NORMAL');
  return database;
}

/** A raw database: the raw tables and `seedKeys` idle keys, in `mode`. */
function rawDatabase(opened: Opened, mode: SyncMode): Database.Database {
  const database = openDatabase(opened);
  for (const statement of RAW_SCHEMA) database.exec(statement);
  const seed = database.prepare('INSERT INTO raw_leases (name, holder, token, expires_at) VALUES (?, NULL, 1, 0)');
  database.transaction(() => {
    for (let index = 0; index < opened.seedKeys; index += 1) seed.run(`seed:${index}`);
  })();
  database.pragma(`synchronous = ${mode}`);
  return database;
}

/** A leasefence database of `library`: migrated, `seedKeys` keys claimed and released, and a ledger, in `mode`. */
async function leasesOn(opened: Opened, library: Library, mode: SyncMode) {
  const database = openDatabase(opened);
  const store = library.sqlite.createSqliteStore({ client: database });
  await store.migrate();
  database.exec(RAW_SCHEMA[1] as string);
  const leases = library.root.createLeases(store, { holder: 'bench', ttlMs: TTL_MS });
  for (let index = 0; index < opened.seedKeys; index += 1) {
    const claimed = await leases.claim(`seed:${index}`);
    if (claimed.ok) await leases.release(claimed.lease);
  }
  database.pragma(`synchronous = ${mode}`);
  return leases;
}

let preparation = 0;

/** The raw claim + release: two autocommit statements. */
function rawCycle(opened: Opened, mode: SyncMode, name: string): Contender {
  return {
    name,
    prepare: async () => {
      const database = rawDatabase(opened, mode);
      const claim = database.prepare(RAW_CLAIM);
      const release = database.prepare(RAW_RELEASE);
      const key = `cycle:${++preparation}`;
      return async () => {
        const now = Date.now();
        const row = claim.get(key, 'bench', now + TTL_MS, now) as { token: number } | undefined;
        if (row === undefined) throw new Error('raw claim refused');
        if (release.run(now, key, 'bench', row.token).changes !== 1) throw new Error('raw release refused');
      };
    },
  };
}

/** The raw claim + release as leasefence shapes them: BEGIN IMMEDIATE, SELECT, decide, write, COMMIT, twice. */
function rawImmediateCycle(opened: Opened, mode: SyncMode, name: string, baseline: string): Contender {
  return {
    name,
    baseline,
    prepare: async () => {
      const database = rawDatabase(opened, mode);
      const begin = database.prepare('BEGIN IMMEDIATE');
      const commit = database.prepare('COMMIT');
      const select = database.prepare(RAW_SELECT);
      const upsert = database.prepare(RAW_UPSERT);
      const release = database.prepare(RAW_RELEASE);
      const key = `cycle:${++preparation}`;
      type Row = { holder: string | null; token: number; expires_at: number };
      return async () => {
        begin.run();
        let now = Date.now();
        const found = select.get(key) as Row | undefined;
        if (found !== undefined && found.holder !== null && found.expires_at > now) throw new Error('raw claim refused');
        const token = (found?.token ?? 0) + 1;
        upsert.run(key, 'bench', token, now + TTL_MS);
        commit.run();
        begin.run();
        now = Date.now();
        const held = select.get(key) as Row | undefined;
        if (held?.holder !== 'bench' || held.token !== token) throw new Error('raw release refused');
        release.run(now, key, 'bench', token);
        commit.run();
      };
    },
  };
}

/** leasefence's claim + release of one key (cycles.ts, bundled with `library`). */
function leasesCycle(opened: Opened, mode: SyncMode, library: Library, name: string, baseline: string): Contender {
  return {
    name,
    baseline,
    prepare: async () => library.cycles.claimRelease(await leasesOn(opened, library, mode), `cycle:${++preparation}`, name),
  };
}

/** The raw fenced INSERT, one autocommit statement, under a raw lease held throughout. */
function rawWrite(opened: Opened, mode: SyncMode, name: string): Contender {
  return {
    name,
    prepare: async () => {
      const database = rawDatabase(opened, mode);
      const key = `fenced:${++preparation}`;
      const now = Date.now();
      const { token } = database.prepare(RAW_CLAIM).get(key, 'bench', now + TTL_MS, now) as { token: number };
      const insert = database.prepare(RAW_FENCED_INSERT);
      let entry = 0;
      return async () => {
        if (insert.run(`e${entry++}`, key, 'bench', token, Date.now()).changes !== 1) throw new Error('raw fenced insert refused');
      };
    },
  };
}

/** The raw fenced write as leasefence shapes it: BEGIN IMMEDIATE, SELECT the lease, check, INSERT, COMMIT. */
function rawImmediateWrite(opened: Opened, mode: SyncMode, name: string, baseline: string): Contender {
  return {
    name,
    baseline,
    prepare: async () => {
      const database = rawDatabase(opened, mode);
      const key = `fenced:${++preparation}`;
      const now = Date.now();
      const { token } = database.prepare(RAW_CLAIM).get(key, 'bench', now + TTL_MS, now) as { token: number };
      const begin = database.prepare('BEGIN IMMEDIATE');
      const commit = database.prepare('COMMIT');
      const select = database.prepare(RAW_SELECT);
      const insert = database.prepare(PLAIN_INSERT);
      let entry = 0;
      return async () => {
        begin.run();
        const found = select.get(key) as { holder: string | null; token: number; expires_at: number } | undefined;
        if (found?.holder !== 'bench' || found.token !== token || found.expires_at <= Date.now()) throw new Error('raw fence refused');
        insert.run(key, token, `e${entry++}`);
        commit.run();
      };
    },
  };
}

/** leasefence's fenced write of one ledger INSERT, under a lease held throughout. */
function leasesWrite(opened: Opened, mode: SyncMode, library: Library, name: string, baseline: string): Contender {
  return {
    name,
    baseline,
    prepare: async () => {
      const leases = await leasesOn(opened, library, mode);
      const held = await leases.claim(`fenced:${++preparation}`);
      if (!held.ok) throw new Error(`${name}: not granted`);
      const { lease } = held;
      let entry = 0;
      return async () => {
        const outcome = await leases.fencedWrite(lease, (tx) => tx.run(PLAIN_INSERT, lease.key, tx.token, `e${entry++}`));
        if (!outcome.ok) throw new Error(`${name}: fenced write refused: ${outcome.reason}`);
      };
    },
  };
}

/**
 * The SQLite groups: claim + release and the fenced write at NORMAL and FULL, with BENCH_COMPARE's tree
 * as "before: ..." rows. `close()` closes every file and removes them.
 */
export async function sqliteGroups(quick: boolean): Promise<{ groups: Group[]; close(): void }> {
  const opened: Opened = { databases: [], directories: [], seedKeys: quick ? 100 : 10_000 };
  const mine = await thisLibrary();
  const before = await comparedLibrary();
  const groups: Group[] = [];
  for (const mode of SYNC_MODES) {
    const rawCycleName = 'raw: claim INSERT ... ON CONFLICT ... RETURNING + release UPDATE (2 autocommit statements)';
    groups.push({
      title: `SQLite claim + release, synchronous = ${mode}`,
      workers: 1,
      contenders: [
        rawCycle(opened, mode, rawCycleName),
        rawCycle(opened, mode, `${rawCycleName} (control)`),
        rawImmediateCycle(opened, mode, 'raw: 2 × (BEGIN IMMEDIATE, SELECT, write, COMMIT)', rawCycleName),
        leasesCycle(opened, mode, mine, 'leasefence claim + release', rawCycleName),
        ...(before === null ? [] : [leasesCycle(opened, mode, before, 'before: leasefence claim + release', rawCycleName)]),
      ],
    });
    const rawWriteName = 'raw: fenced INSERT ... SELECT FROM the lease row (1 autocommit statement)';
    groups.push({
      title: `SQLite fenced write (one INSERT), synchronous = ${mode}`,
      workers: 1,
      contenders: [
        rawWrite(opened, mode, rawWriteName),
        rawWrite(opened, mode, `${rawWriteName} (control)`),
        rawImmediateWrite(opened, mode, 'raw: BEGIN IMMEDIATE, SELECT the lease, INSERT, COMMIT', rawWriteName),
        leasesWrite(opened, mode, mine, 'leasefence fencedWrite(one INSERT)', rawWriteName),
        ...(before === null ? [] : [leasesWrite(opened, mode, before, 'before: leasefence fencedWrite(one INSERT)', rawWriteName)]),
      ],
    });
  }
  return {
    groups,
    close: () => {
      for (const database of opened.databases.splice(0)) database.close();
      for (const directory of opened.directories.splice(0)) rmSync(directory, { recursive: true, force: true });
    },
  };
}
