/**
 * A lease record as etcd keeps it: one JSON value per lease key (tokens as decimal strings, the grant's
 * secret as its SHA-256), plus two things only this adapter needs: `stamp`, the store's now of the last
 * change (so a key's now never goes back, whichever client decides), and `applied`, the ids of the last
 * transactions that changed it (so a transaction delivered twice is recognised, see `etcd-store.ts`).
 */
import type { CheckpointRecord, Ending, GrantState, LeaseAttributes, LeaseRecord, StoreTime } from '../../fence/types.js';

/** How many transaction ids a record remembers. */
export const APPLIED_KEPT = 8;

/** A record read from etcd with what the store needs to change it. */
export interface StoredRecord {
  readonly record: LeaseRecord | null;
  /** The store's now of the record's last change (0 when there is no record). */
  readonly stamp: StoreTime;
  /** Ids of the last transactions that changed the record, newest last. */
  readonly applied: readonly string[];
}

interface GrantJson {
  readonly token: string;
  readonly holder: string;
  readonly runId: string | null;
  readonly secretHash: string;
  readonly acquiredAt: number;
  readonly expiresAt: number | null;
  readonly attributes: Record<string, string>;
}

interface EndingJson extends Omit<Ending, 'token'> {
  readonly token: string;
}

interface CheckpointJson extends Omit<CheckpointRecord, 'token'> {
  readonly token: string;
}

interface RecordJson {
  readonly v: 1;
  readonly key: string;
  readonly token: string;
  readonly grant: GrantJson | null;
  readonly ending: EndingJson | null;
  readonly checkpoint: CheckpointJson | null;
  readonly recoveryRequired: boolean;
  readonly stamp: number;
  readonly applied: readonly string[];
}

const attributesOf = (stored: Record<string, string>): LeaseAttributes =>
  Object.freeze(Object.assign(Object.create(null) as Record<string, string>, stored));

/**
 * The JSON text of `record` (its grant's `secret` must already be the hash: the store judges hashed
 * fences), stamped with `now` and with `requestId` appended to the applied ids.
 */
export function encodeRecord(record: LeaseRecord, now: StoreTime, applied: readonly string[], requestId: string): string {
  const { grant, ending, checkpoint } = record;
  const json: RecordJson = {
    v: 1,
    key: record.key,
    token: record.token.toString(),
    grant:
      grant === null
        ? null
        : {
            token: grant.token.toString(),
            holder: grant.holder,
            runId: grant.runId,
            secretHash: grant.secret,
            acquiredAt: grant.acquiredAt,
            expiresAt: grant.expiresAt,
            attributes: { ...grant.attributes },
          },
    ending: ending === null ? null : { ...ending, token: ending.token.toString() },
    checkpoint: checkpoint === null ? null : { ...checkpoint, token: checkpoint.token.toString() },
    recoveryRequired: record.recoveryRequired,
    stamp: now,
    applied: [...applied, requestId].slice(-APPLIED_KEPT),
  };
  return JSON.stringify(json);
}

/** The record in `value` (JSON written by `encodeRecord`), or an error naming the key: etcd holds something else there. */
export function decodeRecord(key: string, value: Buffer | undefined): StoredRecord {
  if (value === undefined) return { record: null, stamp: 0, applied: [] };
  let json: RecordJson;
  try {
    json = JSON.parse(value.toString('utf8')) as RecordJson;
  } catch (error) {
    throw new Error(`leasefence etcd: the record of ${JSON.stringify(key)} is not leasefence JSON`, { cause: error });
  }
  if (json === null || typeof json !== 'object' || json.v !== 1 || json.key !== key) {
    throw new Error(`leasefence etcd: the record of ${JSON.stringify(key)} is not a version 1 leasefence record of that key`);
  }
  const stored = json.grant;
  const grant: GrantState | null =
    stored === null
      ? null
      : {
          token: BigInt(stored.token),
          holder: stored.holder,
          runId: stored.runId,
          secret: stored.secretHash,
          acquiredAt: stored.acquiredAt,
          expiresAt: stored.expiresAt,
          attributes: attributesOf(stored.attributes),
        };
  const record: LeaseRecord = {
    key,
    token: BigInt(json.token),
    grant,
    ending: json.ending === null ? null : { ...json.ending, token: BigInt(json.ending.token) },
    checkpoint: json.checkpoint === null ? null : { ...json.checkpoint, token: BigInt(json.checkpoint.token) },
    recoveryRequired: json.recoveryRequired,
  };
  return { record, stamp: json.stamp, applied: json.applied };
}
