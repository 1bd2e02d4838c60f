/**
 * Serialises work per key inside one process: the memory store's stand-in for a row lock, so that no
 * takeover can happen while a fenced write's callback runs.
 */
export class KeyLock {
  /** The last pending task per key; a key is absent when nothing on it is pending. */
  readonly #tails = new Map<string, Promise<unknown>>();

  /** Whether nothing on `key` is pending: a task run now would run at once, inside `run`. */
  isIdle(key: string): boolean {
    return !this.#tails.has(key);
  }

  /**
   * Runs `task` after every earlier task on `key` has settled: at once (inside this call) when nothing on
   * `key` is pending, otherwise chained behind the last pending one.
   */
  run<T>(key: string, task: () => T | Promise<T>): Promise<T> {
    const before = this.#tails.get(key);
    if (before !== undefined) return this.#hold(key, before.then(task, task));
    let value: T | Promise<T>;
    try {
      value = task();
    } catch (error) {
      return Promise.reject(error);
    }
    // NOTE: a synchronous task has already finished: nothing is pending on the key, so nothing to record.
    // Only a task that returned a promise holds the key until it settles.
    return isThenable(value) ? this.#hold(key, Promise.resolve(value)) : Promise.resolve(value);
  }

  /** Records `result` as the key's last pending task until it settles. */
  #hold<T>(key: string, result: Promise<T>): Promise<T> {
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }
}

/** A decision, or the busy key to wait for before deciding again. */
export type Decided<O> = O | { readonly waitFor: string };

/**
 * Decides at once (`decide(null)`: no key owned) or, when the decision names a busy key, again under that key's lock
 * (`decide(key)`: the key it runs under, whose earlier operations have settled), then under the next key it names,
 * and so on. One lock at a time: waiting for the next key inside the task of the last one would hold that key until
 * the next settled, and two calls could each hold the key the other waited for (both hung, and every later
 * operation on either key). Claim-next and acquirePermit of the memory store decide this way.
 */
export function decideWaitingForBusy<O extends object>(lock: KeyLock, decide: (owned: string | null) => Decided<O>): O | Promise<O> {
  const first = decide(null);
  if (!('waitFor' in first)) return first;
  return (async () => {
    let key = first.waitFor;
    for (;;) {
      const owned = key;
      const decision = await lock.run(owned, () => decide(owned));
      if (!('waitFor' in decision)) return decision;
      key = decision.waitFor;
    }
  })();
}

const isThenable = <T>(value: T | Promise<T>): value is Promise<T> =>
  typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
