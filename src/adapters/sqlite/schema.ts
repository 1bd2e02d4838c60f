/**
 * The lease tables (the leases, their submissions, the token floor) and the gate table, as DDL text you can
 * run in your own migrations, and the pragmas `migrate()` sets. Tables are `STRICT` (SQLite 3.37+, bundled by
 * both drivers) so a wrong type is an error, not a silent conversion. The lease table is a rowid table with its key
 * in a unique index (see `leaseTableSql` for why); the submissions and the gates are `WITHOUT ROWID`, clustered on
 * their primary key (the floor's one row is keyed by an integer).
 */
import { tableName, type TableName } from './identifier.js';

/** The default lease table. */
export const DEFAULT_LEASE_TABLE = 'leasefence_leases';

/** The default gate table. */
export const DEFAULT_GATE_TABLE = 'leasefence_gates';

/** How long a connection waits for another process's write lock before giving up, by default. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

/**
 * One row per key, deleted only by an operator's `remove`. A grant is present iff `holder` is not NULL. Times
 * are epoch milliseconds on the host's clock; `secret_hash` is the SHA-256 of the grant's secret (the secret
 * itself is never stored). Tokens are 64-bit integers. `state` is the key's state as a JSON object (NULL: none),
 * `held_until` the hold, `ending_change` the `{name, from, to}` of a `state-changed` ending (JSON), `waiters` the
 * key's queue of waiting claims (JSON, NULL when nobody waits: see waiters.ts).
 *
 * Claim-next (items.ts): `item_set` and `item_due_at` make the key an item of a set; `available_at` is the
 * pure `availableSince` of the row's record and item, kept equal to it by every statement that writes the row
 * (`availableAtSql`), NULL for a key that is no item; `item_order` is the key as UTF-16 code units (big-endian), whose
 * byte order is the code-unit order claim-next breaks ties by (the key's own BINARY order is UTF-8's, which differs
 * above U+FFFF). A row whose `token` is NULL is an item with no record (added
 * before its first claim, or kept by `remove`): it reads as no record.
 *
 * NOTE: a rowid table, not `WITHOUT ROWID`: a `WITHOUT ROWID` row is stored in an index B-tree, whose cells hold at
 * most ~1 KB of a 4 KiB page, so every row with a 1 KiB checkpoint spilled its tail to an overflow page of its own,
 * mostly empty (1,622 bytes per lease on a mix of a third each released, live and with a 1 KiB checkpoint; 85% of
 * the overflow pages unused). A rowid table keeps rows up to ~4 KB on the leaf page: 473 bytes per lease on the
 * same mix, index included. The key's lookup goes through the unique index to the row (a second B-tree search, a
 * few µs: measured in bench/scale.ts and `npm run bench`, and outweighed from 100k keys on by the file a third the
 * size that the page cache holds).
 */
export function leaseTableSql(table: TableName): string {
  return `CREATE TABLE IF NOT EXISTS ${table.quoted} (
  key TEXT NOT NULL PRIMARY KEY,
  token INTEGER,
  holder TEXT,
  run_id TEXT,
  secret_hash TEXT,
  acquired_at INTEGER,
  expires_at INTEGER,
  attributes TEXT,
  ending_kind TEXT,
  ending_token INTEGER,
  ending_holder TEXT,
  ending_run_id TEXT,
  ending_at INTEGER,
  ending_reason TEXT,
  ending_by TEXT,
  ending_change TEXT,
  checkpoint_json TEXT,
  checkpoint_token INTEGER,
  checkpoint_written_at INTEGER,
  recovery_required INTEGER NOT NULL DEFAULT 0,
  state TEXT,
  held_until INTEGER,
  waiters TEXT,
  item_set TEXT,
  item_due_at INTEGER,
  item_order BLOB,
  available_at INTEGER
) STRICT`;
}

/**
 * Claim-next's indexes, both partial so that a key that is no item has no entry in either (its writes maintain
 * none): `<table>_ready` hands a set's items in grant order (available longest first, then key) from its front,
 * so a claim-next reads O(candidates) rows, never the whole set; `<table>_item_secret` finds the live grant a
 * repeated claim-next (same secret) already holds.
 */
export function itemIndexStatements(table: TableName): readonly string[] {
  return [
    `CREATE INDEX IF NOT EXISTS "${table.name}_ready" ON ${table.quoted} (item_set, available_at, item_order) WHERE available_at IS NOT NULL`,
    `CREATE INDEX IF NOT EXISTS "${table.name}_item_secret" ON ${table.quoted} (item_set, secret_hash) WHERE item_set IS NOT NULL`,
  ];
}

/** The submissions table of a lease table: `<table>_submissions`. */
export function submissionsTable(table: TableName): TableName {
  return { name: `${table.name}_submissions`, quoted: `"${table.name}_submissions"` };
}

/** The token floor table of a lease table: `<table>_floor`. */
export function floorTable(table: TableName): TableName {
  return { name: `${table.name}_floor`, quoted: `"${table.name}_floor"` };
}

/**
 * The submissions recorded by fenced writes, the newest 32 per key (`SUBMISSION_RETENTION`), in a table of
 * their own so that no claim, renew, release or plain fenced write reads or rewrites them: only a fenced write
 * that carries a submission looks one up (by its primary key) and records one. `seq` orders a key's
 * submissions (the oldest is forgotten first).
 */
export function submissionsTableSql(table: TableName): string {
  return `CREATE TABLE IF NOT EXISTS ${submissionsTable(table).quoted} (
  key TEXT NOT NULL,
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  digest TEXT NOT NULL,
  token INTEGER NOT NULL,
  holder TEXT NOT NULL,
  at INTEGER NOT NULL,
  receipt_json TEXT,
  PRIMARY KEY (key, run_id)
) STRICT, WITHOUT ROWID`;
}

/**
 * One row: the highest token of any record `remove` deleted. A claim of a key with no row (or a row
 * `setKeyState` created, token 0) mints above it, so a key removed and created again never reissues a token,
 * whatever the clock floor (a remove and a claim in the same millisecond, a clock stepped back, `tokenFloor`
 * returning `0n`).
 */
export function floorTableSql(table: TableName): string {
  return `CREATE TABLE IF NOT EXISTS ${floorTable(table).quoted} (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  removed_token INTEGER NOT NULL
) STRICT`;
}

/** Every statement of the lease store's schema, in order (each `CREATE TABLE IF NOT EXISTS`). */
export function leaseSchemaStatements(table: TableName): readonly string[] {
  return [leaseTableSql(table), ...itemIndexStatements(table), submissionsTableSql(table), floorTableSql(table)];
}

/** One row per gated resource: the lease key and the highest token that wrote it. */
export function gateTableSql(table: TableName): string {
  return `CREATE TABLE IF NOT EXISTS ${table.quoted} (
  resource TEXT PRIMARY KEY,
  lease_key TEXT NOT NULL,
  token INTEGER NOT NULL
) STRICT, WITHOUT ROWID`;
}

/**
 * Write-ahead logging: readers never block the writer and the writer never blocks readers, so processes
 * sharing the file only queue behind each other's (short) write transactions. Persistent in the file.
 * NOTE: WAL needs every process on the same host (shared memory); never put the file on a network share.
 */
export const WAL_PRAGMA = 'PRAGMA journal_mode = WAL';

/** Sets the connection's busy timeout (per connection, not persistent). `ms` is a validated integer. */
export function busyTimeoutPragma(ms: number): string {
  return `PRAGMA busy_timeout = ${ms}`;
}

/**
 * The lease store's DDL, for your own migrations (`migrate()` runs it, after `PRAGMA journal_mode = WAL`): the
 * lease table `<table>`, its submissions `<table>_submissions` and its token floor `<table>_floor`, as one text
 * of its statements (the three tables and the two claim-next indexes).
 *
 * ```ts
 * client.exec('PRAGMA journal_mode = WAL');
 * client.exec(sqliteLeaseSchemaSql());
 * ```
 */
export function sqliteLeaseSchemaSql(table: string = DEFAULT_LEASE_TABLE): string {
  return leaseSchemaStatements(tableName(table))
    .map((statement) => `${statement};`)
    .join('\n');
}

/** The gate table's DDL, for your own migrations (the gate's `migrate()` runs it). */
export function sqliteGateSchemaSql(table: string = DEFAULT_GATE_TABLE): string {
  return gateTableSql(tableName(table, 'gate table'));
}
