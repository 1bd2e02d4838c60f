/**
 * The lease row and the pure core's `LeaseRecord`, both ways. Tokens are read as decimal text
 * (`CAST(... AS TEXT)`) and parsed with `BigInt`, never through a JS number; they are bound as bigints.
 * Times are epoch milliseconds. The row's `secret_hash` becomes the record's `grant.secret`: the store
 * judges every fence by hashes (see secret-hash.ts), so the record never holds a plain secret. The record's
 * `submissions` are not in the row (see submissions.ts): a record read from a row has none, and writing a
 * record leaves the key's submissions as they are. Its `waiters` are read with the row; writing a record leaves
 * them as they are (waiters.ts).
 */
import type {
  CheckpointRecord,
  Ending,
  EndingKind,
  GrantState,
  KeyState,
  LeaseAttributes,
  LeaseRecord,
  StateChange,
  SubmissionRecord,
} from '../../store-entry.js';
import { availableAtSql, ROW_INPUTS } from './available-at.js';
import type { SqliteValue } from './client.js';
import type { TableName } from './identifier.js';
import { waitersOf, type StoredWaiter } from './waiters.js';

/** The lease row as `selectRecordSql` returns it. */
interface LeaseRow {
  readonly key: string;
  /** NULL: an item with no record (items.ts). */
  readonly token: string | null;
  readonly holder: string | null;
  readonly run_id: string | null;
  readonly secret_hash: string | null;
  readonly acquired_at: number | bigint | null;
  readonly expires_at: number | bigint | null;
  readonly attributes: string | null;
  readonly ending_kind: string | null;
  readonly ending_token: string | null;
  readonly ending_holder: string | null;
  readonly ending_run_id: string | null;
  readonly ending_at: number | bigint | null;
  readonly checkpoint_json: string | null;
  readonly checkpoint_token: string | null;
  readonly checkpoint_written_at: number | bigint | null;
  readonly recovery_required: number | bigint;
  /** `RARE_COLUMNS_SQL`: `null`, or a JSON array of the rarely set columns. */
  readonly rare: string | null;
}

/** The rarely set columns as `RARE_COLUMNS_SQL` packs them (each `null` when the column is NULL). */
type RareColumns = readonly [
  reason: string | null,
  by: string | null,
  change: StateChange | null,
  state: KeyState | null,
  heldUntil: number | null,
  waiters: readonly StoredWaiter[] | null,
];

/**
 * The columns most rows leave NULL (an ending's reason and author: revokes; a state change; the key state;
 * the hold; the queue of waiting claims, waiters.ts), read as ONE column: NULL when all are (a grant released,
 * expired or held), otherwise a JSON array of them, decoded with one `JSON.parse`. NOTE: a row of 20 or more
 * columns comes back from better-sqlite3 about 1 µs slower than one of 19 (measured: 3.9 µs for 19, 4.7-5.4 µs
 * for 20-22, whatever the columns hold), and every operation reads the row: with this, the read has 18 columns.
 */
const RARE_COLUMNS_SQL = `CASE WHEN ending_reason IS NULL AND ending_by IS NULL AND ending_change IS NULL AND state IS NULL AND held_until IS NULL
  AND waiters IS NULL
  THEN NULL ELSE json_array(ending_reason, ending_by, json(ending_change), json(state), held_until, json(waiters)) END AS rare`;

/** The lease row's columns as `recordOf` reads them (tokens as decimal text). */
export const RECORD_COLUMNS_SQL: string = `key, CAST(token AS TEXT) AS token, holder, run_id, secret_hash, acquired_at, expires_at, attributes,
  ending_kind, CAST(ending_token AS TEXT) AS ending_token, ending_holder, ending_run_id, ending_at,
  checkpoint_json, CAST(checkpoint_token AS TEXT) AS checkpoint_token, checkpoint_written_at, recovery_required,
  ${RARE_COLUMNS_SQL}`;

/** ATOMICITY: a single read; inside the operation's `BEGIN IMMEDIATE` it sees the row as the writer holds it. */
export function selectRecordSql(table: TableName): string {
  return `SELECT ${RECORD_COLUMNS_SQL}
FROM ${table.quoted} WHERE key = ?`;
}

/**
 * The claim's read: as `selectRecordSql`, except that the checkpoint is left out (NULL) while a live grant of
 * another secret holds the row. Bind: the store's now (ms), the claim's secret hash, the key. NOTE: such a
 * claim is refused `held`, which carries no checkpoint and changes nothing; without this every claim of a
 * held key (a waiter's every attempt) copied the whole checkpoint (up to its size limit) out of the file.
 * The condition is `isLive` (fence/verdict.ts) negated, or the claim's own secret (a re-delivery).
 */
export function selectClaimRecordSql(table: TableName): string {
  return `SELECT ${CLAIM_RECORD_COLUMNS_SQL}
FROM ${table.quoted} WHERE key = ?`;
}

/**
 * `RECORD_COLUMNS_SQL` for a claim's read (`selectClaimRecordSql`, and an acquire's read of a semaphore's permits):
 * the checkpoint is NULL while a live grant of another secret holds the row. Its two parameters come first: the
 * store's now (ms), the claim's secret hash.
 */
export const CLAIM_RECORD_COLUMNS_SQL: string = RECORD_COLUMNS_SQL.replace(
  'checkpoint_json,',
  'CASE WHEN holder IS NULL OR (expires_at IS NOT NULL AND ? >= expires_at) OR secret_hash = ? THEN checkpoint_json END AS checkpoint_json,',
);

/**
 * A claim read by `CLAIM_RECORD_COLUMNS_SQL` whose transition changes the record: refused loudly when the read left
 * the checkpoint out (the written record would drop it; unreachable while the SQL condition is `isLive` negated).
 */
export function assertCheckpointRead(row: unknown, changed: boolean): void {
  const read = row as { checkpoint_json: string | null; checkpoint_token: string | null } | undefined;
  if (changed && read !== undefined && read.checkpoint_json === null && read.checkpoint_token !== null)
    throw new Error('leasefence/sqlite: a claim read without its checkpoint would change the record; this is a bug');
}

/**
 * ATOMICITY: one statement, inside remove's `BEGIN IMMEDIATE`, after the read it was decided on. A key that is an
 * item stays one (`remove` deletes the record, not the item): its row keeps only the item, available since its due
 * time, as `availableSince(null, item)` is. Bind: the key.
 */
export function clearItemRecordSql(table: TableName): string {
  const recordColumns = COLUMNS.filter((column) => column !== 'key' && column !== 'recovery_required').map((column) => `${column} = NULL`);
  return `UPDATE ${table.quoted} SET ${recordColumns.join(', ')}, recovery_required = 0, waiters = NULL, available_at = item_due_at
WHERE key = ? AND item_set IS NOT NULL`;
}

/** ATOMICITY: as `clearItemRecordSql`, for a key that is no item: the row goes. Bind: the key. */
export function deleteRecordSql(table: TableName): string {
  return `DELETE FROM ${table.quoted} WHERE key = ? AND item_set IS NULL`;
}

/**
 * The columns `upsertRecordSql` writes, in the order of `recordParams`. NOTE: not `waiters`: the upsert keeps the
 * queue as it is (waiters.ts), so the record's write costs what it did before the queue.
 */
const COLUMNS = [
  'key',
  'token',
  'holder',
  'run_id',
  'secret_hash',
  'acquired_at',
  'expires_at',
  'attributes',
  'ending_kind',
  'ending_token',
  'ending_holder',
  'ending_run_id',
  'ending_at',
  'ending_reason',
  'ending_by',
  'ending_change',
  'checkpoint_json',
  'checkpoint_token',
  'checkpoint_written_at',
  'recovery_required',
  'state',
  'held_until',
] as const;

/**
 * `available_at` of the row an upsert updates: the record's columns as written (`excluded`), the item's as they
 * are (an UPDATE's SET reads the old row). A new row is no item: its `available_at` stays NULL.
 */
const UPSERT_AVAILABLE_AT = availableAtSql({
  ...ROW_INPUTS,
  recoveryRequired: 'excluded.recovery_required',
  holder: 'excluded.holder',
  expiresAt: 'excluded.expires_at',
  endingAt: 'excluded.ending_at',
  heldUntil: 'excluded.held_until',
});

/**
 * ATOMICITY: one statement writing the whole record and the row's `available_at` (claim-next's index, kept equal
 * to `availableSince` here, so no operation needs a statement of its own for it); runs inside the operation's
 * `BEGIN IMMEDIATE`, after the read. The item columns stay as they are.
 */
export function upsertRecordSql(table: TableName): string {
  const updates = COLUMNS.filter((column) => column !== 'key').map((column) => `${column} = excluded.${column}`);
  return `INSERT INTO ${table.quoted} (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})
ON CONFLICT (key) DO UPDATE SET ${updates.join(', ')}, available_at = ${UPSERT_AVAILABLE_AT}`;
}

/** The bind parameters of `upsertRecordSql` for `record` (whose `grant.secret` is already a hash). */
export function recordParams(record: LeaseRecord): SqliteValue[] {
  const { grant, ending, checkpoint } = record;
  return [
    record.key,
    record.token,
    grant?.holder ?? null,
    grant?.runId ?? null,
    grant?.secret ?? null,
    grant?.acquiredAt ?? null,
    grant?.expiresAt ?? null,
    grant === null ? null : JSON.stringify(grant.attributes),
    ending?.kind ?? null,
    ending?.token ?? null,
    ending?.holder ?? null,
    ending?.runId ?? null,
    ending?.at ?? null,
    ending?.reason ?? null,
    ending?.by ?? null,
    ending?.change === undefined ? null : JSON.stringify(ending.change),
    checkpoint?.json ?? null,
    checkpoint?.token ?? null,
    checkpoint?.writtenAt ?? null,
    record.recoveryRequired ? 1 : 0,
    stateText(record.state),
    record.heldUntil,
  ];
}

/** A time column as epoch ms (a connection set to return bigints for integers gives bigints). */
function timeOf(value: number | bigint | null): number | null {
  return value === null ? null : Number(value);
}

function grantOf(row: LeaseRow, token: bigint): GrantState | null {
  if (row.holder === null || row.secret_hash === null) return null;
  return {
    token,
    holder: row.holder,
    runId: row.run_id,
    secret: row.secret_hash,
    acquiredAt: timeOf(row.acquired_at) ?? 0,
    expiresAt: timeOf(row.expires_at),
    attributes: JSON.parse(row.attributes ?? '{}') as LeaseAttributes,
  };
}

function endingOf(row: LeaseRow, rare: RareColumns | null): Ending | null {
  if (row.ending_kind === null || row.ending_token === null || row.ending_holder === null) return null;
  const ending: Ending = {
    kind: row.ending_kind as EndingKind,
    token: BigInt(row.ending_token),
    holder: row.ending_holder,
    runId: row.ending_run_id,
    at: timeOf(row.ending_at) ?? 0,
    reason: rare?.[0] ?? null,
    by: rare?.[1] ?? null,
  };
  // NOTE: `change` only on a `state-changed` ending: endings of the other kinds keep their shape.
  const change = rare?.[2] ?? null;
  return change === null ? ending : { ...ending, change };
}

/** The key's state as stored: `NULL` for none (most keys), so a row without state reads and writes no JSON. */
function stateText(state: KeyState): string | null {
  for (const _ in state) return JSON.stringify(state);
  return null;
}

const NO_STATE: KeyState = Object.freeze({});
const NO_SUBMISSIONS: readonly SubmissionRecord[] = Object.freeze([]);

function checkpointOf(row: LeaseRow): CheckpointRecord | null {
  if (row.checkpoint_json === null || row.checkpoint_token === null) return null;
  return { json: row.checkpoint_json, token: BigInt(row.checkpoint_token), writtenAt: timeOf(row.checkpoint_written_at) ?? 0 };
}

/**
 * The record of a row `selectRecordSql` returned (`undefined`: no row, the key was never claimed; a NULL token:
 * an item with no record).
 */
export function recordOf(row: unknown): LeaseRecord | null {
  if (row === undefined || row === null) return null;
  const lease = row as LeaseRow;
  if (lease.token === null) return null;
  const rare = lease.rare === null ? null : (JSON.parse(lease.rare) as RareColumns);
  const token = BigInt(lease.token);
  return {
    key: lease.key,
    token,
    grant: grantOf(lease, token),
    ending: endingOf(lease, rare),
    checkpoint: checkpointOf(lease),
    recoveryRequired: Number(lease.recovery_required) !== 0,
    state: rare?.[3] ?? NO_STATE,
    heldUntil: rare?.[4] ?? null,
    submissions: NO_SUBMISSIONS,
    waiters: waitersOf(rare?.[5]),
  };
}
