/**
 * The results the shell returns on its hot paths, each built once with a fixed shape and a non-enumerable,
 * log-safe `toJSON` on its prototype (as `LOGGABLE` gives the others): no copy of the store's outcome
 * through `Object.assign` (~35 ns against ~140 ns a result).
 */
import type { Ending, StoreTime } from './fence/types.js';
import type { Checkpoint, Lease } from './lease.js';
import { loggableFields } from './loggable.js';

/** What the results share: log-safe JSON (tokens as decimal strings, a lease without its secret). */
abstract class LogSafeResult {
  /** Log-safe JSON: tokens as decimal strings, a lease without its secret. */
  toJSON(): unknown {
    return loggableFields(this);
  }
}

/** A granted claim as the shell returns it (`Granted`). */
export class GrantedClaim extends LogSafeResult {
  readonly ok = true as const;
  constructor(
    readonly lease: Lease,
    readonly previous: Ending | null,
    readonly checkpoint: Checkpoint | null,
  ) {
    super();
  }
}

/** An applied release, with exactly the fields of the Store contract's `ReleaseOutcome`. */
export class AppliedRelease extends LogSafeResult {
  readonly ok = true as const;
  readonly key: string;
  readonly token: bigint;
  readonly alreadyReleased: boolean;
  readonly now: StoreTime;

  constructor(outcome: { readonly key: string; readonly token: bigint; readonly alreadyReleased: boolean; readonly now: StoreTime }) {
    super();
    this.key = outcome.key;
    this.token = outcome.token;
    this.alreadyReleased = outcome.alreadyReleased;
    this.now = outcome.now;
  }
}

/** An applied renew, with exactly the fields of the Store contract's `RenewOutcome`. */
export class AppliedRenew extends LogSafeResult {
  readonly ok = true as const;
  readonly key: string;
  readonly token: bigint;
  readonly expiresAt: StoreTime | null;
  readonly now: StoreTime;

  constructor(outcome: { readonly key: string; readonly token: bigint; readonly expiresAt: StoreTime | null; readonly now: StoreTime }) {
    super();
    this.key = outcome.key;
    this.token = outcome.token;
    this.expiresAt = outcome.expiresAt;
    this.now = outcome.now;
  }
}
