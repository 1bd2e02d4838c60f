/**
 * Turns the row every lease statement returns (pre-image as text, `now_ms`, `applied`) back into the pure
 * core's `LeaseRecord`. Tokens are parsed with `BigInt` from decimal text, never through `Number`.
 */
import type { EndingKind, LeaseAttributes, LeaseRecord, StoreTime } from '../../fence/types.js';

/** One row of a lease statement: the pre-image (all NULL when there was no row), now and applied. */
export interface PreImageRow {
  readonly key: string | null;
  readonly token: string | null;
  readonly holder: string | null;
  readonly run_id: string | null;
  readonly secret: string | null;
  readonly acquired_at: string | null;
  readonly expires_at: string | null;
  readonly attributes: string | null;
  readonly ending_kind: string | null;
  readonly ending_token: string | null;
  readonly ending_holder: string | null;
  readonly ending_run_id: string | null;
  readonly ending_at: string | null;
  readonly ending_reason: string | null;
  readonly ending_by: string | null;
  readonly checkpoint_json: string | null;
  readonly checkpoint_token: string | null;
  readonly checkpoint_written_at: string | null;
  readonly recovery_required: boolean | string | null;
  readonly now_ms: string | number;
  readonly applied: boolean | string;
}

/** Drivers return booleans as booleans; tolerate `'t'`/`'true'` from drivers configured to return text. */
export function toBoolean(value: unknown): boolean {
  return value === true || value === 't' || value === 'true';
}

const time = (text: string | null): StoreTime | null => (text === null ? null : Number(text));

/** The row's pre-image as a `LeaseRecord` (`null` when the key had no row). */
export function toRecord(row: PreImageRow): LeaseRecord | null {
  if (row.key === null || row.token === null) return null;
  const token = BigInt(row.token);
  const grant =
    row.holder === null || row.secret === null
      ? null
      : {
          token,
          holder: row.holder,
          runId: row.run_id,
          secret: row.secret,
          acquiredAt: time(row.acquired_at) ?? 0,
          expiresAt: time(row.expires_at),
          attributes: Object.freeze(JSON.parse(row.attributes ?? '{}') as Record<string, string>) as LeaseAttributes,
        };
  const ending =
    row.ending_kind === null || row.ending_token === null || row.ending_holder === null
      ? null
      : {
          kind: row.ending_kind as EndingKind,
          token: BigInt(row.ending_token),
          holder: row.ending_holder,
          runId: row.ending_run_id,
          at: time(row.ending_at) ?? 0,
          reason: row.ending_reason,
          by: row.ending_by,
        };
  const checkpoint =
    row.checkpoint_json === null || row.checkpoint_token === null
      ? null
      : { json: row.checkpoint_json, token: BigInt(row.checkpoint_token), writtenAt: time(row.checkpoint_written_at) ?? 0 };
  return { key: row.key, token, grant, ending, checkpoint, recoveryRequired: toBoolean(row.recovery_required) };
}

/** The store's now of a row, in epoch ms. */
export function nowOf(row: PreImageRow): StoreTime {
  return Number(row.now_ms);
}
