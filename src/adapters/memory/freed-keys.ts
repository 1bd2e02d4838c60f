/**
 * The memory store's release and revoke notifications (`Store.watchFreed` for waiters, `Store.watchRevoked`
 * for running `withLease` holders): in-process listeners per key, told after a release or a revoke of the
 * key commits.
 */
import type { DequeueOutcome, ReleaseOutcome, RemoveOutcome, RevokeOutcome, SetKeyStateOutcome } from '../../fence/operations.js';

/** Per-key listeners of one memory store, told when a release or revoke frees the key. */
export class FreedKeys {
  readonly #listeners = new Map<string, Set<() => void>>();

  /** `Store.watchFreed`: live as soon as it resolves; the returned function ends it (idempotent). */
  readonly watch = (key: string, onFreed: () => void): Promise<() => void> => {
    // NOTE: a wrapper per subscription, so one callback subscribed twice is two subscriptions.
    const listener = (): void => onFreed();
    let listeners = this.#listeners.get(key);
    if (listeners === undefined) {
      listeners = new Set();
      this.#listeners.set(key, listeners);
    }
    listeners.add(listener);
    const unsubscribe = (): void => {
      const current = this.#listeners.get(key);
      if (current === undefined || !current.delete(listener)) return;
      if (current.size === 0) this.#listeners.delete(key);
    };
    return Promise.resolve(unsubscribe);
  };

  /**
   * Passes `outcome` through, telling `key`'s listeners when it freed the key: a release (not a repeated one),
   * a revoke, a removal, a key-state change that ended a grant, or a dequeue that left the key to the next waiter.
   */
  readonly afterCommit = <O extends ReleaseOutcome | RevokeOutcome | RemoveOutcome | SetKeyStateOutcome | DequeueOutcome>(
    key: string,
    outcome: O,
  ): O => {
    if (!outcome.ok) return outcome;
    if ('freed' in outcome && !outcome.freed) return outcome;
    if ('alreadyReleased' in outcome && outcome.alreadyReleased) return outcome;
    if ('ended' in outcome && outcome.ended === null) return outcome;
    this.#notify(key);
    return outcome;
  };

  #notify(key: string): void {
    const listeners = this.#listeners.get(key);
    if (listeners === undefined) return;
    // NOTE: after the store's step returns, so a listener's claim queues behind the release, not inside it;
    // a listener that throws cannot break the release or the other listeners.
    queueMicrotask(() => {
      for (const listener of [...listeners]) {
        try {
          listener();
        } catch {
          // NOTE: a notification is a hint; a failing listener only loses its own.
        }
      }
    });
  }
}
