/**
 * Expiry on etcd's own timer, as a bound on the clients' clocks: every grant with a TTL has a "live" key
 * (`<prefix>live/<key>`, value: the grant's token) attached to an etcd lease of `ceil(ttl / 1 s) + 1`
 * seconds, granted after the claim's (or renew's) decision. etcd's leader deletes the key when that lease
 * runs out. A grant whose live key is gone (or holds another token) counts as expired whatever the clocks
 * say, and every transaction compares the live key's mod revision with the one read, so etcd's expiry
 * between a read and a commit makes the commit lose its compare.
 *
 * The extra second keeps etcd's expiry after the clients' (it only catches a client whose clock lags by
 * more than about a second, or a decision committed later than that). A new leader extends every etcd
 * lease by its TTL: the bound loosens during elections, takeover never waits for it (the clock rule
 * expires grants on its own).
 */
import { StoreUnavailableError } from '../../errors.js';
import type { LeaseRecord, StoreTime } from '../../fence/types.js';
import { loggableCause } from '../../redact.js';
import type { EtcdKeyValue, EtcdLeaseService, EtcdRequestOp } from './client.js';

/** What the read saw of a grant's live key. */
export interface LiveKey {
  /** Its mod revision ('0': absent), compared by the transaction. */
  readonly modRevision: string;
  /** The token it holds (`null`: absent). */
  readonly token: bigint | null;
  /** The etcd lease it is attached to ('0': none). */
  readonly lease: string;
}

export const NO_LIVE_KEY: LiveKey = { modRevision: '0', token: null, lease: '0' };

export function liveKeyOf(found: EtcdKeyValue | undefined): LiveKey {
  if (found === undefined) return NO_LIVE_KEY;
  return { modRevision: found.mod_revision, token: BigInt(found.value.toString('utf8')), lease: found.lease };
}

/**
 * The store's now for `record`: `now`, or the grant's expires-at when etcd already ended the grant (its
 * live key is gone), so that the pure core judges it expired.
 */
export function nowWithEtcdExpiry(record: LeaseRecord | null, live: LiveKey, now: StoreTime): StoreTime {
  const grant = record?.grant ?? null;
  if (grant === null || grant.expiresAt === null || now >= grant.expiresAt) return now;
  return live.token === grant.token ? now : grant.expiresAt;
}

/** The etcd lease TTL in seconds for a grant expiring `ms` after its decision. */
export const leaseSeconds = (ms: number): number => Math.ceil(Math.max(ms, 0) / 1_000) + 1;

/**
 * The live-key operations a change of `before` into `after` needs (decided at `now`): a new etcd lease
 * when a grant with a TTL starts or moves its expiry, a delete when the grant ends. `staleLease` is the
 * lease the live key leaves (revoke it after the commit).
 */
export async function liveKeyOperations(
  leases: EtcdLeaseService,
  liveKey: Buffer,
  before: LeaseRecord | null,
  after: LeaseRecord,
  live: LiveKey,
  now: StoreTime,
  operation: string,
): Promise<{ operations: EtcdRequestOp[]; staleLease: string | null }> {
  const old = before?.grant ?? null;
  const grant = after.grant;
  const stale = live.lease === '0' ? null : live.lease;
  if (grant === null)
    return live.token === null
      ? { operations: [], staleLease: null }
      : { operations: [{ request_delete_range: { key: liveKey } }], staleLease: stale };
  if (old !== null && old.token === grant.token && old.expiresAt === grant.expiresAt) return { operations: [], staleLease: null };
  if (grant.expiresAt === null)
    return live.token === null
      ? { operations: [], staleLease: null }
      : { operations: [{ request_delete_range: { key: liveKey } }], staleLease: stale };
  let id: string;
  try {
    ({ ID: id } = await leases.leaseGrant({ TTL: leaseSeconds(grant.expiresAt - now) }));
  } catch (error) {
    // NOTE: an etcd lease alone changes no record; nothing of the operation was applied.
    throw new StoreUnavailableError(
      `etcd ${operation}: granting the etcd lease of the grant failed: ${error instanceof Error ? error.message : String(error)}`,
      { cause: loggableCause(error) },
    );
  }
  return {
    operations: [{ request_put: { key: liveKey, value: Buffer.from(grant.token.toString(), 'utf8'), lease: id } }],
    staleLease: stale,
  };
}
