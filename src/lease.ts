/**
 * The handle a holder gets from a granted claim: the fence it presents on every operation, what it
 * inherited from the previous holder, and what it knows about its own expiry.
 */
import { InvalidArgumentError } from './errors.js';
import type { Ending, Fence, LeaseAttributes, StoreTime } from './fence/types.js';
import { assertKey, assertName, assertRunId, toAttributes } from './validate.js';

/** A checkpoint as a holder sees it: the parsed value and the token of the grant that wrote it. */
export interface Checkpoint<T = unknown> {
  readonly value: T;
  readonly token: bigint;
  readonly writtenAt: StoreTime;
}

/** A lease handle in plain JSON, to pass to another process (see `Leases.restore`). */
export interface LeaseJson {
  readonly storeId: string;
  readonly key: string;
  readonly token: string;
  readonly secret: string;
  readonly holder: string;
  readonly runId: string | null;
  readonly attributes: LeaseAttributes;
  readonly expiresAt: StoreTime | null;
}

/** Fields a lease is built from. */
export interface LeaseInit {
  readonly storeId: string;
  readonly key: string;
  readonly token: bigint;
  readonly secret: string;
  readonly holder: string;
  readonly runId: string | null;
  readonly attributes: LeaseAttributes;
  readonly acquiredAt: StoreTime | null;
  readonly expiresAt: StoreTime | null;
  /** The TTL a bare `renew(lease)` extends by: the claim's, or the last explicit renew's (`null`: no expiry). */
  readonly ttlMs: number | null;
  readonly previous: Ending | null;
  readonly inherited: Checkpoint | null;
  /** Monotonic ms at which this handle's expiry is no longer guaranteed (`Infinity`: never expires). */
  readonly localDeadline: number;
}

const LEASE_BRAND = Symbol.for('leasefence.Lease');
const SECRET_PATTERN = /^[0-9a-f]{32,128}$/;
const TOKEN_PATTERN = /^[1-9][0-9]{0,38}$/;

/** A granted lease. Release it with `leases.release(lease)` or `await using lease = ...`. */
export class Lease {
  /** Which store granted it. */
  readonly storeId: string;
  readonly key: string;
  /** The fencing token: larger than every earlier grant's for this key. */
  readonly token: bigint;
  /** Proof of this grant. Keep it private: whoever has it can act as the holder. */
  readonly secret: string;
  readonly holder: string;
  readonly runId: string | null;
  readonly attributes: LeaseAttributes;
  /** When the store granted it (store clock; `null` for a restored handle). */
  readonly acquiredAt: StoreTime | null;
  /** The latest expires-at this handle knows, on the store's clock (`null`: never expires). */
  expiresAt: StoreTime | null;
  /** The TTL a bare `renew(lease)` extends by: the claim's, updated by a renew with an explicit `ttlMs`. */
  ttlMs: number | null;
  /** How the previous grant of this key ended (`null`: first grant, or a restored handle). */
  readonly previous: Ending | null;
  /** The checkpoint this grant inherited (`null`: none). Resume it, or discard it with `leases.recover`. */
  readonly inherited: Checkpoint | null;
  /** Monotonic ms (worker clock) after which the grant may have expired: the safe deadline before margins. */
  localDeadline: number;
  /** Set by `Leases` so `await using` can release. */
  disposer: ((lease: Lease) => Promise<unknown>) | null = null;

  constructor(init: LeaseInit) {
    this.storeId = init.storeId;
    this.key = init.key;
    this.token = init.token;
    this.secret = init.secret;
    this.holder = init.holder;
    this.runId = init.runId;
    this.attributes = init.attributes;
    this.acquiredAt = init.acquiredAt;
    this.expiresAt = init.expiresAt;
    this.ttlMs = init.ttlMs;
    this.previous = init.previous;
    this.inherited = init.inherited;
    this.localDeadline = init.localDeadline;
  }

  static {
    // NOTE: a symbol brand (not instanceof) so a handle from the ESM build is accepted by the CJS build; on
    // the prototype, so that making a handle (claim is the hot path) defines no property of its own.
    Object.defineProperty(Lease.prototype, LEASE_BRAND, { value: true });
  }

  /** The fence this handle presents; `attributes` are the ones the operation requires to match. */
  fence(attributes?: LeaseAttributes): Fence {
    const base = { key: this.key, token: this.token, secret: this.secret, holder: this.holder, runId: this.runId };
    return attributes === undefined ? base : { ...base, attributes };
  }

  /** JSON for another process; restore it with `leases.restore(json)`. Contains the secret. */
  toJSON(): LeaseJson {
    return {
      storeId: this.storeId,
      key: this.key,
      token: this.token.toString(),
      secret: this.secret,
      holder: this.holder,
      runId: this.runId,
      attributes: this.attributes,
      expiresAt: this.expiresAt,
    };
  }

  /** Releases the lease (for `await using`). */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.disposer?.(this);
  }
}

/** Checks that `lease` is a well-formed handle of the store `storeId`, before any I/O. */
export function assertLease(lease: unknown, storeId: string): asserts lease is Lease {
  if (typeof lease !== 'object' || lease === null || (lease as Record<symbol, unknown>)[LEASE_BRAND] !== true) throw new InvalidArgumentError('lease must be a Lease handle from claim() or restore()');
  if ((lease as Lease).storeId !== storeId) {
    const { key, token, storeId: other } = lease as Lease;
    throw new InvalidArgumentError(`lease ${key} token ${token} belongs to store ${other}, not ${storeId}`);
  }
}

/** Parses a `LeaseJson` from another process into fields for a handle, refusing anything malformed. */
export function parseLeaseJson(json: unknown, storeId: string): LeaseJson & { tokenValue: bigint } {
  if (typeof json !== 'object' || json === null) throw new InvalidArgumentError('a lease JSON must be an object');
  const candidate = json as Record<string, unknown>;
  if (candidate['storeId'] !== storeId) throw new InvalidArgumentError(`lease JSON belongs to store ${String(candidate['storeId'])}, not ${storeId}`);
  const { key, token, secret, holder, runId, attributes, expiresAt } = candidate;
  assertKey(key);
  if (typeof token !== 'string' || !TOKEN_PATTERN.test(token)) throw new InvalidArgumentError(`lease token must be a positive decimal string, got ${String(token)}`);
  if (typeof secret !== 'string' || !SECRET_PATTERN.test(secret)) throw new InvalidArgumentError('lease secret must be 32 to 128 lowercase hex digits');
  assertName('holder', holder);
  assertRunId(runId ?? null);
  if (expiresAt !== null && (typeof expiresAt !== 'number' || !Number.isFinite(expiresAt))) throw new InvalidArgumentError('lease expiresAt must be a number or null');
  return {
    storeId,
    key,
    token,
    tokenValue: BigInt(token),
    secret,
    holder,
    runId: (runId ?? null) as string | null,
    attributes: toAttributes(attributes),
    expiresAt: expiresAt as number | null,
  };
}
