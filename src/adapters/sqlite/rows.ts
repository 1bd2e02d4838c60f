/**
 * The lease row and the pure core's `LeaseRecord`, both ways. Tokens are read as decimal text
 * (`CAST(... AS TEXT)`) and parsed with `BigInt`, never through a JS number; they are bound as bigints.
 * Times are epoch milliseconds. The row's `secret_hash` becomes the record's `grant.secret`: the store
 * judges every fence by hashes (see secret-hash.ts), so the record never holds a plain secret. The record's
 * `submissions` are not in the row (see submissions.ts): a record read from a row has none, and writing a
 * record leaves the key's submissions as they are.
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
import type { SqliteValue } from './client.js';
import type { TableName } from './identifier.js';

/** The lease row as `selectRecordSql` returns it. */
interface LeaseRow {
  readonly key: string;
  readonly token: string;
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
  readonly ending_reason: string | null;
  readonly ending_by: string | null;
  readonly ending_change: string | null;
  readonly checkpoint_json: string | null;
  readonly checkpoint_token: string | null;
  readonly checkpoint_written_at: number | bigint | null;
  readonly recovery_required: number | bigint;
  readonly state: string | null;
  readonly held_until: number | bigint | null;
}

/** The lease row's columns as `recordOf` reads them (tokens as decimal text). */
export const RECORD_COLUMNS_SQL = `key, CAST(token AS TEXT) AS token, holder, run_id, secret_hash, acquired_at, expires_at, attributes,
  ending_kind, CAST(ending_token AS TEXT) AS ending_token, ending_holder, ending_run_id, ending_at, ending_reason, ending_by,
  ending_change, checkpoint_json, CAST(checkpoint_token AS TEXT) AS checkpoint_token, checkpoint_written_at, recovery_required, state,
  held_until`;

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
  const needed = 'holder IS NULL OR (expires_at IS NOT NULL AND ? >= expires_at) OR secret_hash = ?';
  return `SELECT ${RECORD_COLUMNS_SQL.replace('checkpoint_json,', `CASE WHEN ${needed} THEN checkpoint_json END AS checkpoint_json,`)}
FROM ${table.quoted} WHERE key = ?`;
}

/** ATOMICITY: one statement, inside remove's `BEGIN IMMEDIATE`, after the read it was decided on. */
export function deleteRecordSql(table: TableName): string {
  return `DELETE FROM ${table.quoted} WHERE key = ?`;
}

/** The columns `upsertRecordSql` writes, in the order of `recordParams`. */
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

/** ATOMICITY: one statement writing the whole row; runs inside the operation's `BEGIN IMMEDIATE`, after the read. */
export function upsertRecordSql(table: TableName): string {
  const updates = COLUMNS.filter((column) => column !== 'key').map((column) => `${column} = excluded.${column}`);
  return `INSERT INTO ${table.quoted} (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})
ON CONFLICT (key) DO UPDATE SET ${updates.join(', ')}`;
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

function grantOf(row: LeaseRow): GrantState | null {
  if (row.holder === null || row.secret_hash === null) return null;
  return {
    token: BigInt(row.token),
    holder: row.holder,
    runId: row.run_id,
    secret: row.secret_hash,
    acquiredAt: timeOf(row.acquired_at) ?? 0,
    expiresAt: timeOf(row.expires_at),
    attributes: JSON.parse(row.attributes ?? '{}') as LeaseAttributes,
  };
}

function endingOf(row: LeaseRow): Ending | null {
  if (row.ending_kind === null || row.ending_token === null || row.ending_holder === null) return null;
  const ending: Ending = {
    kind: row.ending_kind as EndingKind,
    token: BigInt(row.ending_token),
    holder: row.ending_holder,
    runId: row.ending_run_id,
    at: timeOf(row.ending_at) ?? 0,
    reason: row.ending_reason,
    by: row.ending_by,
  };
  // NOTE: `change` only on a `state-changed` ending: endings of the other kinds keep their shape.
  return row.ending_change === null ? ending : { ...ending, change: JSON.parse(row.ending_change) as StateChange };
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

/** The record of a row `selectRecordSql` returned (`undefined`: no row, the key was never claimed). */
export function recordOf(row: unknown): LeaseRecord | null {
  if (row === undefined || row === null) return null;
  const lease = row as LeaseRow;
  return {
    key: lease.key,
    token: BigInt(lease.token),
    grant: grantOf(lease),
    ending: endingOf(lease),
    checkpoint: checkpointOf(lease),
    recoveryRequired: Number(lease.recovery_required) !== 0,
    state: lease.state === null ? NO_STATE : (JSON.parse(lease.state) as KeyState),
    heldUntil: timeOf(lease.held_until),
    submissions: NO_SUBMISSIONS,
  };
}
