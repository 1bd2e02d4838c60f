/**
 * A lease record as etcd keeps it: one JSON value per lease key (tokens as decimal strings, the grant's
 * secret as its SHA-256), plus two things only this adapter needs: `stamp`, the store's now of the last
 * change (so a key's now never goes back, whichever client decides), and `applied`, the ids of the last
 * transactions that changed it (so a transaction delivered twice is recognised, see `etcd-store.ts`).
 *
 * The key's submissions live in their own etcd key (`<prefix>submissions/<key>`): read, compared and written
 * only by a fenced write that carries a submission, so no other operation reads or sends them.
 *
 * `remove` replaces the record with a removal mark (`removed: true`, the removed record's `stamp` and
 * `applied` ids, no record) on a short etcd lease, which deletes it `REMOVAL_MARK_SECONDS` later. Every
 * operation reads it as "no record"; until it is gone, a remove delivered twice (or one that lost a race
 * with another) is recognised by its id, and the key's now does not go back. A claim or `setKeyState`
 * that creates the record again puts it without an etcd lease, continuing the ids.
 *
 * The key's queue of waiting claims (fence/queue.ts) is the record's `waiters` field, absent when nobody waits (most
 * records), so a record nobody waits for is written and read as before. `wake` says whether the put frees the key
 * for its release watchers (freed-watch.ts) when the grant alone cannot say it: `false` for a put that only changed
 * the queue (a waiting claim's refusal, a dequeue that frees nobody), `true` for a dequeue that left the key to the
 * next waiter; absent otherwise.
 */
import type {
  CheckpointRecord,
  Ending,
  GrantState,
  LeaseAttributes,
  LeaseRecord,
  QueuedWaiter,
  StoreTime,
  SubmissionRecord,
} from '../../fence/types.js';

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
  readonly v: 2;
  readonly key: string;
  readonly token: string;
  readonly grant: GrantJson | null;
  readonly ending: EndingJson | null;
  readonly checkpoint: CheckpointJson | null;
  readonly recoveryRequired: boolean;
  readonly state: Record<string, string>;
  readonly heldUntil: number | null;
  /** The queue as `[waiterId, holder, arrivedAt, expiresAt]` in order; absent when empty. */
  readonly waiters?: readonly StoredWaiter[];
  /** See the header: absent unless the put says whether it frees the key. */
  readonly wake?: boolean;
  readonly stamp: number;
  readonly applied: readonly string[];
}

/** One waiter as the record keeps it. */
type StoredWaiter = readonly [waiterId: string, holder: string, arrivedAt: number, expiresAt: number];

const NO_WAITERS: readonly QueuedWaiter[] = Object.freeze([]);

const attributesOf = (stored: Record<string, string>): LeaseAttributes =>
  Object.freeze(Object.assign(Object.create(null) as Record<string, string>, stored));

/**
 * The JSON text of `record` (its grant's `secret` must already be the hash: the store judges hashed
 * fences), stamped with `now` and with `requestId` appended to the applied ids; `wake` as the header says.
 */
export function encodeRecord(record: LeaseRecord, now: StoreTime, applied: readonly string[], requestId: string, wake?: boolean): string {
  const { grant, ending, checkpoint, waiters } = record;
  const json: RecordJson = {
    v: 2,
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
    state: { ...record.state },
    heldUntil: record.heldUntil,
    ...(waiters.length === 0
      ? {}
      : { waiters: waiters.map((waiter): StoredWaiter => [waiter.waiterId, waiter.holder, waiter.arrivedAt, waiter.expiresAt]) }),
    ...(wake === undefined ? {} : { wake }),
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
  if (json === null || typeof json !== 'object' || json.v !== 2 || json.key !== key) {
    throw new Error(`leasefence etcd: the record of ${JSON.stringify(key)} is not a version 2 leasefence record of that key`);
  }
  if ((json as unknown as RemovalMarkJson).removed === true) return { record: null, stamp: json.stamp, applied: json.applied };
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
    // NOTE: a plain object as the core builds it; JSON.parse keeps a name such as `__proto__` an own value.
    state: json.state,
    heldUntil: json.heldUntil,
    // NOTE: kept in their own key, read only by a fenced write with a submission (`decodeSubmissions`).
    submissions: NO_SUBMISSIONS,
    waiters:
      json.waiters === undefined
        ? NO_WAITERS
        : json.waiters.map(([waiterId, holder, arrivedAt, expiresAt]) => ({ waiterId, holder, arrivedAt, expiresAt })),
  };
  return { record, stamp: json.stamp, applied: json.applied };
}

const NO_SUBMISSIONS: readonly SubmissionRecord[] = Object.freeze([]);

interface SubmissionJson extends Omit<SubmissionRecord, 'token'> {
  readonly token: string;
}

interface SubmissionsJson {
  readonly v: 2;
  readonly key: string;
  readonly submissions: readonly SubmissionJson[];
}

/** The JSON text of a key's submissions (oldest first, as the record keeps them). */
export function encodeSubmissions(key: string, submissions: readonly SubmissionRecord[]): string {
  const json: SubmissionsJson = {
    v: 2,
    key,
    submissions: submissions.map((submission) => ({ ...submission, token: submission.token.toString() })),
  };
  return JSON.stringify(json);
}

/** The submissions in `value` (written by `encodeSubmissions`), `[]` when there is none. */
export function decodeSubmissions(key: string, value: Buffer | undefined): readonly SubmissionRecord[] {
  if (value === undefined) return NO_SUBMISSIONS;
  const json = parseJson(key, 'submissions', value) as SubmissionsJson;
  if (json === null || typeof json !== 'object' || json.v !== 2 || json.key !== key || !Array.isArray(json.submissions)) {
    throw new Error(`leasefence etcd: the submissions of ${JSON.stringify(key)} are not version 2 leasefence submissions of that key`);
  }
  return json.submissions.map((submission) => ({ ...submission, token: BigInt(submission.token) }));
}

/** How long a removal mark lives, in seconds (its etcd lease): far beyond one operation's retries. */
export const REMOVAL_MARK_SECONDS = 120;

interface RemovalMarkJson {
  readonly v: 2;
  readonly key: string;
  readonly removed: true;
  readonly stamp: number;
  readonly applied: readonly string[];
}

/** The removal mark (see the header) that replaces a record whose ids were `applied`, removed at `now`. */
export function encodeRemovalMark(key: string, now: StoreTime, applied: readonly string[], requestId: string): string {
  const json: RemovalMarkJson = { v: 2, key, removed: true, stamp: now, applied: [...applied, requestId].slice(-APPLIED_KEPT) };
  return JSON.stringify(json);
}

function parseJson(key: string, what: string, value: Buffer): unknown {
  try {
    return JSON.parse(value.toString('utf8'));
  } catch (error) {
    throw new Error(`leasefence etcd: the ${what} of ${JSON.stringify(key)} is not leasefence JSON`, { cause: error });
  }
}
