/**
 * Serialises work per key inside one process: the memory store's stand-in for a row lock, so that no
 * takeover can happen while a fenced write's callback runs.
 */
export class KeyLock {
  readonly #tails = new Map<string, Promise<unknown>>();

  /** Runs `task` after every earlier task on `key` has settled. */
  run<T>(key: string, task: () => T | Promise<T>): Promise<T> {
    const before = this.#tails.get(key) ?? Promise.resolve();
    const result = before.then(task, task);
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
