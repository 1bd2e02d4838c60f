/**
 * The handle a holder gets from a granted claim: the fence it presents on every operation, what it
 * inherited from the previous holder, and what it knows about its own expiry.
 *
 * The handle holds the grant's secret, a credential: whoever has it can act as the holder. So the secret is
 * no property of the handle: `JSON.stringify(lease)`, `console.log(lease)` and `{ ...lease }` leave it out,
 * and it leaves the handle only through `fence()` (for stores) and `export()` (for another process).
 */
import { InvalidArgumentError, isLeaseError } from './errors.js';
import type { Ending, Fence, LeaseAttributes, StoreTime } from './fence/types.js';
import { REDACTED } from './redact.js';
import { assertKey, assertName, assertRunId, assertToken, describe, toAttributes } from './validate.js';

/** A checkpoint as a holder sees it: the parsed value and the token of the grant that wrote it. */
export interface Checkpoint<T = unknown> {
  readonly value: T;
  readonly token: bigint;
  readonly writtenAt: StoreTime;
}

/**
 * A lease handle in plain JSON, with its secret: what `lease.export()` returns and `Leases.restore`
 * accepts. It is a credential: pass it to the process that takes the lease over, never to a log.
 */
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
  /** The worker's monotonic clock `localDeadline` is measured on (for `timeLeftMs`). */
  readonly monotonic: () => number;
}

const LEASE_BRAND = Symbol.for('leasefence.Lease');
const INSPECT = Symbol.for('nodejs.util.inspect.custom');
const TOKEN_TEXT = /^[1-9][0-9]{0,18}$/;
const LOWER_HEX = /^[0-9a-f]*$/;

/** A lease secret's format: 32 to 128 lowercase hex digits (as `SECRET_PATTERN`, without its slow quantifier). */
function isSecret(secret: unknown): secret is string {
  return typeof secret === 'string' && secret.length >= 32 && secret.length <= 128 && LOWER_HEX.test(secret);
}

/** The fence a handle of this copy of the package was built with (`undefined`: not such a handle). */
let builtFence: (lease: unknown) => Fence | undefined;

/**
 * What a `withLease` run attaches to the handle it claimed: its signal (made on first read) and how an
 * operation on the handle that the store refused tells the run its lease is lost. @internal
 */
export interface LeaseRun {
  readonly signal: AbortSignal;
  lose(reason: unknown): void;
}

/** The run attached to a handle of this copy of the package (`null`: none, or not such a handle). */
let attachedRun: (lease: unknown) => LeaseRun | null;
/** Attaches `run` to `lease` (once, right after the claim). */
let setRun: (lease: Lease, run: LeaseRun) => void;

/** A granted lease. Release it with `leases.release(lease)` or `await using lease = ...`. */
export class Lease {
  /** Which store granted it. */
  readonly storeId: string;
  readonly key: string;
  /** The fencing token: larger than every earlier grant's for this key. */
  readonly token: bigint;
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
  #run: LeaseRun | null = null;
  readonly #monotonic: () => number;
  // NOTE: the fence lives in a private field (made once, shared with the stores the shell hands it to): not
  // enumerable, not copied by spread, not seen by JSON or util.inspect; the public fields are a view of it,
  // so tampering with them changes nothing. Not frozen (a freeze per claim cost ~60 ns): no user code can
  // reach this object, `fence()` hands out frozen copies.
  readonly #fence: Fence;

  /** Made by `createLeases` (a claim or `restore`); applications never construct a lease. @internal */
  constructor(init: LeaseInit) {
    this.storeId = init.storeId;
    this.key = init.key;
    this.token = init.token;
    this.#fence = { key: init.key, token: init.token, secret: init.secret, holder: init.holder, runId: init.runId };
    this.holder = init.holder;
    this.runId = init.runId;
    this.attributes = init.attributes;
    this.acquiredAt = init.acquiredAt;
    this.expiresAt = init.expiresAt;
    this.ttlMs = init.ttlMs;
    this.previous = init.previous;
    this.inherited = init.inherited;
    this.localDeadline = init.localDeadline;
    this.#monotonic = init.monotonic;
  }

  /**
   * Ms of the grant surely left, minus `reserveMs`, from what the store last answered (claim, renew, check)
   * and the worker's monotonic clock: never waits on the store, never more than the store would say (the
   * store's time is counted from when the request was sent). `0` once it is used up, or for a restored
   * handle that has not renewed yet; `Infinity` for a grant without expiry. Use it to bound a slow call
   * (`AbortSignal.timeout(lease.timeLeftMs(5_000))`); right before the side effect, `leases.check` asks the store.
   */
  timeLeftMs(reserveMs = 0): number {
    if (typeof reserveMs !== 'number' || !Number.isFinite(reserveMs) || reserveMs < 0)
      throw new InvalidArgumentError(`reserveMs must be a finite number of milliseconds, at least 0, got ${describe(reserveMs)}`);
    const left = this.localDeadline - this.#monotonic() - reserveMs;
    return left > 0 ? left : 0;
  }

  static {
    builtFence = (lease) => (typeof lease === 'object' && lease !== null && #fence in lease ? lease.#fence : undefined);
    attachedRun = (lease) => (typeof lease === 'object' && lease !== null && #run in lease ? lease.#run : null);
    setRun = (lease, run) => {
      lease.#run = run;
    };
    // NOTE: a symbol brand (not instanceof) so a handle from the ESM build is accepted by the CJS build; on
    // the prototype, so that making a handle (claim is the hot path) defines no property of its own.
    Object.defineProperty(Lease.prototype, LEASE_BRAND, { value: true });
    // NOTE: `util.inspect` / `console.log` look this symbol up; defined here so no node module is imported.
    Object.defineProperty(Lease.prototype, INSPECT, {
      value: function inspectLease(
        this: Lease,
        depth: number,
        options: unknown,
        inspect?: (value: unknown, options: unknown) => string,
      ): unknown {
        if (depth < 0) return '[Lease]';
        const view = {
          ...this.toJSON(),
          token: this.token,
          secret: REDACTED,
          previous: this.previous,
          inherited: this.inherited,
          localDeadline: this.localDeadline,
        };
        return typeof inspect === 'function' ? `Lease ${inspect(view, options)}` : view;
      },
    });
  }

  /**
   * The AbortSignal of the `withLease` run this handle was claimed for (the one `fn` may also take as its
   * second argument): it aborts as soon as the lease is known lost or the run is stopped. Made on first
   * read, so a run that never reads it does not pay for one; aborted already, with the reason, if the run
   * ended that way before the read. `null` for a handle from `claim` or `restore`.
   */
  get signal(): AbortSignal | null {
    return this.#run === null ? null : this.#run.signal;
  }

  /**
   * The fence this handle presents (with its secret), as a frozen copy; `attributes` are the ones the
   * operation requires to match.
   */
  fence(attributes?: LeaseAttributes): Fence {
    return Object.freeze(attributes === undefined ? { ...this.#fence } : { ...this.#fence, attributes });
  }

  /**
   * The handle as JSON WITH ITS SECRET, to hand the lease to another process (`leases.restore(json)` there).
   * This is a credential: whoever has it can write, renew and release as this holder until the grant ends.
   * Send it over a channel you would trust with a password; never log it. (`JSON.stringify(lease)` leaves
   * the secret out, so a restore of that is refused.)
   */
  export(): LeaseJson {
    return {
      storeId: this.storeId,
      key: this.key,
      token: this.token.toString(),
      secret: this.#fence.secret,
      holder: this.holder,
      runId: this.runId,
      attributes: this.attributes,
      expiresAt: this.expiresAt,
    };
  }

  /** The handle for logs: no secret, the token as a decimal string. To hand the lease over, use `export()`. */
  toJSON(): Omit<LeaseJson, 'secret'> & { readonly acquiredAt: StoreTime | null } {
    return {
      storeId: this.storeId,
      key: this.key,
      token: this.token.toString(),
      holder: this.holder,
      runId: this.runId,
      attributes: this.attributes,
      acquiredAt: this.acquiredAt,
      expiresAt: this.expiresAt,
    };
  }

  /** Releases the lease (for `await using`). */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.disposer?.(this);
  }
}

/** The `withLease` run `lease` was claimed for, if any (`null` also for anything that is not a handle). */
export function runOf(lease: unknown): LeaseRun | null {
  return attachedRun(lease);
}

/** Attaches a `withLease` run to the handle it claimed. */
export function attachRun(lease: Lease, run: LeaseRun): void {
  setRun(lease, run);
}

/**
 * The fence of `lease`, checked field by field before any I/O: a handle of the store `storeId` (by brand,
 * so a handle of another copy of the package is accepted), with a well-formed key, token, secret, holder,
 * run id and attributes. A forged or tampered object, a Proxy or a throwing getter gets
 * `InvalidArgumentError`. For a handle of this copy of the package, the fence returned is the handle's own
 * (stores read it and must not change it); for any other, a fresh copy the handle cannot change afterwards.
 */
export function leaseFence(lease: unknown, storeId: string): Fence {
  const built = builtFence(lease);
  if (built !== undefined) {
    // NOTE: a handle of this copy: its fence was checked when it was made; only its public view can differ.
    const handle = lease as Lease;
    let owner: unknown;
    let tampered: boolean;
    try {
      tampered = handle.key !== built.key || handle.token !== built.token || handle.holder !== built.holder || handle.runId !== built.runId;
      owner = handle.storeId;
    } catch {
      // NOTE: a getter defined on the handle after it was made: the caller gets the typed refusal, not its error.
      throw new InvalidArgumentError(`lease ${built.key} was tampered with: a field of its public view could not be read`);
    }
    if (tampered)
      throw new InvalidArgumentError(`lease ${built.key} was tampered with: its key, token, holder or run id differs from its grant`);
    if (owner !== storeId)
      throw new InvalidArgumentError(
        `lease ${built.key} belongs to store ${typeof owner === 'string' ? owner : typeof owner}, not ${storeId}`,
      );
    return built;
  }
  let fields: Record<'key' | 'token' | 'secret' | 'holder' | 'runId', unknown>;
  let owner: unknown;
  try {
    if (typeof lease !== 'object' || lease === null || (lease as Record<symbol, unknown>)[LEASE_BRAND] !== true) {
      throw new InvalidArgumentError('lease must be a Lease handle from claim() or restore()');
    }
    owner = (lease as Lease).storeId;
    const fence: unknown = (lease as Lease).fence();
    if (typeof fence !== 'object' || fence === null)
      throw new InvalidArgumentError('lease must be a Lease handle from claim() or restore()');
    // NOTE: each field read once, inside the try: a getter on another copy's fence cannot escape raw or change.
    const { key, token, secret, holder, runId } = fence as Fence;
    fields = { key, token, secret, holder, runId };
  } catch (error) {
    if (isLeaseError(error)) throw error;
    throw new InvalidArgumentError(
      'lease must be a Lease handle from claim() or restore(); this object is not one (forged, proxied or tampered with)',
    );
  }
  const { key, token, secret, holder, runId } = fields;
  assertKey(key);
  if (owner !== storeId)
    throw new InvalidArgumentError(`lease ${key} belongs to store ${typeof owner === 'string' ? owner : typeof owner}, not ${storeId}`);
  assertToken('lease token', token);
  if (!isSecret(secret)) throw new InvalidArgumentError(`lease ${key} has a malformed secret (tampered with?)`);
  assertName('holder', holder);
  assertRunId(runId);
  return { key, token, secret, holder, runId };
}

/** Checks that `lease` is a well-formed handle of the store `storeId`, before any I/O (see `leaseFence`). */
export function assertLease(lease: unknown, storeId: string): asserts lease is Lease {
  leaseFence(lease, storeId);
}

/** Parses a `LeaseJson` from another process into fields for a handle, refusing anything malformed. */
export function parseLeaseJson(json: unknown, storeId: string): LeaseJson & { tokenValue: bigint } {
  if (typeof json !== 'object' || json === null) throw new InvalidArgumentError('a lease JSON must be an object (from lease.export())');
  let fields: Record<string, unknown>;
  try {
    const { storeId: owner, key, token, secret, holder, runId, attributes, expiresAt } = json as Record<string, unknown>;
    fields = { owner, key, token, secret, holder, runId, attributes, expiresAt };
  } catch {
    throw new InvalidArgumentError('a lease JSON must be a plain object (from lease.export()); this one could not be read');
  }
  const { owner, key, token, secret, holder, runId, attributes, expiresAt } = fields;
  if (owner !== storeId)
    throw new InvalidArgumentError(
      `lease JSON belongs to store ${typeof owner === 'string' ? owner : String(typeof owner)}, not ${storeId}`,
    );
  assertKey(key);
  if (typeof token !== 'string' || !TOKEN_TEXT.test(token))
    throw new InvalidArgumentError(
      `lease token must be a positive decimal string, got ${typeof token === 'string' ? JSON.stringify(token.slice(0, 40)) : typeof token}`,
    );
  const tokenValue = BigInt(token);
  assertToken('lease token', tokenValue);
  if (secret === undefined) {
    throw new InvalidArgumentError(
      'lease JSON has no secret: JSON.stringify(lease) leaves the secret out; hand a lease to another process with lease.export()',
    );
  }
  if (!isSecret(secret)) throw new InvalidArgumentError('lease secret must be 32 to 128 lowercase hex digits');
  assertName('holder', holder);
  assertRunId(runId ?? null);
  if (expiresAt !== null && (typeof expiresAt !== 'number' || !Number.isFinite(expiresAt))) {
    throw new InvalidArgumentError('lease expiresAt must be a finite number (store epoch ms) or null');
  }
  return {
    storeId,
    key,
    token,
    tokenValue,
    secret,
    holder,
    runId: (runId ?? null) as string | null,
    attributes: toAttributes(attributes),
    expiresAt: expiresAt as number | null,
  };
}
