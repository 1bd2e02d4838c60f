/**
 * What the race suite records: every operation a worker invoked (with the order it was invoked, applied
 * and completed in) and its outcome, plus the expire-now hooks the nemesis ran. `race-invariants.ts` checks it.
 */
import type fc from 'fast-check';
import type { Store } from '../store.js';

/** The kinds of operation a race worker runs. */
export type RaceOpKind = 'claim' | 'renew' | 'write' | 'checkpoint' | 'release' | 'revoke';

/** The parts of an outcome the checkers read (a union of what `Leases` returns for each kind). */
export interface RaceOutcome {
  readonly ok: boolean;
  readonly reason?: string;
  readonly now?: number;
  readonly token?: bigint | null;
  readonly expiresAt?: number | null;
  readonly alreadyReleased?: boolean;
  readonly lease?: { readonly token: bigint; readonly acquiredAt: number | null; readonly expiresAt: number | null };
  readonly previous?: { readonly kind: string; readonly token: bigint; readonly at: number } | null;
  readonly revoked?: { readonly token: bigint };
  readonly checkpoint?: unknown;
}

/** One operation of one worker. */
export interface RaceOp {
  readonly worker: number;
  readonly kind: RaceOpKind;
  /** The token of the lease handle presented (fenced operations), `null` for claim and revoke. */
  readonly presented: bigint | null;
  /** Global sequence number when the worker invoked it. */
  readonly invoke: number;
  /** Global sequence number when the worker saw the outcome. */
  complete: number;
  /** Order in which the store applied it (exact only for in-process stores; `null` otherwise). */
  apply: number | null;
  outcome: RaceOutcome | null;
  /** The ledger entry a write tried to append. */
  readonly entry: string | null;
}

/** One run of the expire-now hook. */
export interface ExpireOp {
  readonly invoke: number;
  complete: number;
}

/** Everything a race run produced. */
export interface RaceHistory {
  readonly ops: RaceOp[];
  readonly expiries: ExpireOp[];
  /** Whether `apply` is the store's exact linearisation order. */
  readonly exactOrder: boolean;
  /**
   * Whether the expire-now hook rewrites a grant's expiry (real servers) rather than moving the store's
   * clock to it (memory): then a grant may end before the expiry its holder was last told.
   */
  readonly expiryHookMovesExpiry: boolean;
}

/** Records a race run; one instance per run. */
export class HistoryRecorder {
  readonly history: RaceHistory;
  #seq = 0;
  #applied = 0;

  constructor(options: { readonly exactOrder: boolean; readonly expiryHookMovesExpiry: boolean }) {
    this.history = { ops: [], expiries: [], ...options };
  }

  begin(worker: number, kind: RaceOpKind, presented: bigint | null, entry: string | null = null): RaceOp {
    const op: RaceOp = {
      worker,
      kind,
      presented,
      invoke: ++this.#seq,
      complete: Number.POSITIVE_INFINITY,
      apply: null,
      outcome: null,
      entry,
    };
    this.history.ops.push(op);
    return op;
  }

  end(op: RaceOp, outcome: RaceOutcome, apply: number | null): void {
    op.outcome = outcome;
    op.apply = this.history.exactOrder ? apply : null;
    op.complete = ++this.#seq;
  }

  beginExpire(): ExpireOp {
    const expire = { invoke: ++this.#seq, complete: Number.POSITIVE_INFINITY };
    this.history.expiries.push(expire);
    return expire;
  }

  endExpire(expire: ExpireOp): void {
    expire.complete = ++this.#seq;
  }

  /** The next apply-order number (called by the scheduled store as soon as the store answered). */
  nextApply(): number {
    return ++this.#applied;
  }
}

const STORE_METHODS = ['claim', 'renew', 'checkpoint', 'fencedWrite', 'release', 'revoke', 'recover', 'inspect'] as const;

/** A store seen through a scheduled network: the slot tells the worker when its last request was applied. */
export interface ScheduledStore<S extends Store> {
  readonly store: S;
  /** Apply-order number of the last request that came back. */
  lastApply: number | null;
}

/**
 * Wraps `inner` so that each request is delivered, and each response returned, only when the scheduler
 * picks it: any interleaving of workers, ticks and expiries between a decision and its effect is explored.
 * The apply order is taken when the store's answer arrives, before the response is delivered.
 */
export function scheduledStore<S extends Store>(
  inner: S,
  scheduler: fc.Scheduler,
  label: string,
  recorder: HistoryRecorder,
): ScheduledStore<S> {
  const slot: { store: S; lastApply: number | null } = { store: inner, lastApply: null };
  const wrapped = new Map<PropertyKey, unknown>();
  for (const method of STORE_METHODS) {
    wrapped.set(method, async (...args: unknown[]) => {
      await scheduler.schedule(Promise.resolve(`${label}:${method}:request`));
      const answer = await (inner[method] as (...params: unknown[]) => Promise<unknown>).apply(inner, args);
      slot.lastApply = recorder.nextApply();
      await scheduler.schedule(Promise.resolve(`${label}:${method}:response`));
      return answer;
    });
  }
  const proxy = new Proxy(inner, {
    get(target, property) {
      if (wrapped.has(property)) return wrapped.get(property);
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  slot.store = proxy;
  return slot;
}
