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

/** The lease row as `selectRecordSql` returns it: the key, the record's columns packed (`PACKED_RECORD_SQL`), the checkpoint. */
interface LeaseRow {
  readonly key: string;
  /** `PACKED_RECORD_SQL`: a JSON array, decoded into `PackedRecord` with one `JSON.parse`. */
  readonly record: string;
  /** The checkpoint's JSON text; `''` where a read left it out (`CLAIM_RECORD_COLUMNS_SQL`, list.ts). */
  readonly checkpoint_json: string | null;
}

/** The record's columns as `PACKED_RECORD_SQL` packs them (tokens as decimal text; JSON columns as JSON). */
type PackedRecord = readonly [
  /** NULL: an item with no record (items.ts). */
  token: string | null,
  holder: string | null,
  runId: string | null,
  secretHash: string | null,
  acquiredAt: number | null,
  expiresAt: number | null,
  attributes: LeaseAttributes | null,
  endingKind: string | null,
  endingToken: string | null,
  endingHolder: string | null,
  endingRunId: string | null,
  endingAt: number | null,
  checkpointToken: string | null,
  checkpointWrittenAt: number | null,
  recoveryRequired: number,
  reason: string | null,
  by: string | null,
  change: StateChange | null,
  state: KeyState | null,
  heldUntil: number | null,
  waiters: readonly StoredWaiter[] | null,
];

/**
 * The record's columns (all but the key and the checkpoint's JSON) as ONE column: a JSON array, decoded with one
 * `JSON.parse`, tokens as decimal text (never through a JS number), the JSON columns embedded as JSON. NOTE: a row
 * comes back from the drivers at a cost per column (better-sqlite3 makes one property per column): the record read
 * as 18 columns took 4.4-4.5 µs, as these 3 with the parse 2.3 µs (bench/sqlite-groups.ts's table, 10,000 keys).
 * The checkpoint's JSON stays a column of its own: it is not re-escaped, and a read can leave it out.
 */
const PACKED_RECORD_SQL = `json_array(CAST(token AS TEXT), holder, run_id, secret_hash, acquired_at, expires_at, json(attributes),
  ending_kind, CAST(ending_token AS TEXT), ending_holder, ending_run_id, ending_at, CAST(checkpoint_token AS TEXT),
  checkpoint_written_at, recovery_required, ending_reason, ending_by, json(ending_change), json(state), held_until, json(waiters)) AS record`;

/** The lease row's columns as `recordOf` reads them. */
export const RECORD_COLUMNS_SQL: string = `key, ${PACKED_RECORD_SQL}, checkpoint_json`;

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
 * the checkpoint's JSON is `''` (left out) while a live grant of another secret holds the row. Its two parameters
 * come first: the store's now (ms), the claim's secret hash.
 */
export const CLAIM_RECORD_COLUMNS_SQL: string = `key, ${PACKED_RECORD_SQL},
  CASE WHEN checkpoint_json IS NULL OR holder IS NULL OR (expires_at IS NOT NULL AND ? >= expires_at) OR secret_hash = ?
  THEN checkpoint_json ELSE '' END AS checkpoint_json`;

/**
 * A claim read by `CLAIM_RECORD_COLUMNS_SQL` whose transition changes the record: refused loudly when the read left
 * the checkpoint out (the written record would drop it; unreachable while the SQL condition is `isLive` negated).
 */
export function assertCheckpointRead(row: unknown, changed: boolean): void {
  if (changed && (row as LeaseRow | undefined)?.checkpoint_json === '')
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

function grantOf(packed: PackedRecord, token: bigint): GrantState | null {
  const [, holder, runId, secretHash, acquiredAt, expiresAt, attributes] = packed;
  if (holder === null || secretHash === null) return null;
  return {
    token,
    holder,
    runId,
    secret: secretHash,
    acquiredAt: acquiredAt ?? 0,
    expiresAt,
    attributes: attributes ?? {},
  };
}

function endingOf(packed: PackedRecord): Ending | null {
  const [, , , , , , , kind, token, holder, runId, at, , , , reason, by, change] = packed;
  if (kind === null || token === null || holder === null) return null;
  const ending: Ending = { kind: kind as EndingKind, token: BigInt(token), holder, runId, at: at ?? 0, reason, by };
  // NOTE: `change` only on a `state-changed` ending: endings of the other kinds keep their shape.
  return change === null ? ending : { ...ending, change };
}

/** The key's state as stored: `NULL` for none (most keys), so a row without state reads and writes no JSON. */
function stateText(state: KeyState): string | null {
  for (const _ in state) return JSON.stringify(state);
  return null;
}

const NO_STATE: KeyState = Object.freeze({});
const NO_SUBMISSIONS: readonly SubmissionRecord[] = Object.freeze([]);

function checkpointOf(json: string | null, packed: PackedRecord): CheckpointRecord | null {
  const [, , , , , , , , , , , , token, writtenAt] = packed;
  if (json === null || token === null) return null;
  return { json, token: BigInt(token), writtenAt: writtenAt ?? 0 };
}

/**
 * The record of a row `selectRecordSql` returned (`undefined`: no row, the key was never claimed; a NULL token:
 * an item with no record).
 */
export function recordOf(row: unknown): LeaseRecord | null {
  if (row === undefined || row === null) return null;
  const lease = row as LeaseRow;
  const packed = JSON.parse(lease.record) as PackedRecord;
  if (packed[0] === null) return null;
  const token = BigInt(packed[0]);
  return {
    key: lease.key,
    token,
    grant: grantOf(packed, token),
    ending: endingOf(packed),
    checkpoint: checkpointOf(lease.checkpoint_json, packed),
    recoveryRequired: packed[14] !== 0,
    state: packed[18] ?? NO_STATE,
    heldUntil: packed[19],
    submissions: NO_SUBMISSIONS,
    waiters: waitersOf(packed[20]),
  };
}
