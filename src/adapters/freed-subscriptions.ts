/**
 * The in-process side of `Store.watchFreed` for stores that hear releases over a network connection (Redis
 * pub/sub, Postgres LISTEN): many watchers share one backend subscription per name, opened for the first
 * watcher and closed after the last one leaves. Backend operations on one name run one after the other, so
 * an unsubscribe never overtakes the subscribe it undoes.
 */
import { InvalidArgumentError, StoreUnavailableError } from '../errors.js';
import { describe } from '../validate.js';

/** The default `subscribeTimeoutMs` of the stores' notification connections. */
export const DEFAULT_SUBSCRIBE_TIMEOUT_MS = 2_000;

/** Checks a `subscribeTimeoutMs` option (before any I/O): an integer of 1 to 60,000 ms. */
export function subscribeTimeoutOf(value: unknown): number {
  if (value === undefined) return DEFAULT_SUBSCRIBE_TIMEOUT_MS;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 60_000) {
    throw new InvalidArgumentError(`subscribeTimeoutMs must be an integer number of milliseconds from 1 to 60000, got ${describe(value)}`);
  }
  return value;
}

/** How a store opens and closes one backend subscription (a Redis channel, a Postgres LISTEN). */
export interface FreedTransport {
  /** Resolves once the backend confirmed the subscription (messages published after that are delivered). */
  subscribe(name: string): Promise<void>;
  /** Ends the backend subscription of `name`. */
  unsubscribe(name: string): Promise<void>;
}

interface Entry {
  readonly listeners: Set<() => void>;
  readonly live: Promise<void>;
}

/** Refcounted backend subscriptions, each fanned out to its in-process watchers. */
export interface FreedSubscriptions {
  /** `Store.watchFreed` for `name`: resolves when the backend subscription is live, with the function that ends this watch. */
  watch(name: string, onFreed: () => void): Promise<() => void>;
  /** A message on `name` arrived: calls its watchers. */
  deliver(name: string): void;
  /**
   * Calls every watcher: after the connection came back, since messages published while it was down are
   * lost (a spurious wake-up costs a waiter one claim; a lost one, a wait until its next scheduled attempt).
   */
  deliverAll(): void;
  /** How many names have a backend subscription wanted (for tests and leak checks). */
  readonly size: number;
}

/** Calls each watcher, isolating the others from one that throws. */
export function wake(watchers: Iterable<() => void>): void {
  for (const onFreed of [...watchers]) {
    try {
      onFreed();
    } catch {
      // NOTE: a wake-up is a hint; a watcher's own failure must not stop the others' wake-ups.
    }
  }
}

/**
 * Creates the subscriptions of one notification connection. `subscribeTimeoutMs` bounds how long a watch
 * waits for its backend subscription (a connection that is down): it then rejects with
 * `StoreUnavailableError` and leaves nothing behind.
 */
export function createFreedSubscriptions(transport: FreedTransport, subscribeTimeoutMs: number): FreedSubscriptions {
  const entries = new Map<string, Entry>();
  const tails = new Map<string, Promise<void>>();

  /** Runs `step` after every earlier backend step on `name`. */
  const enqueue = (name: string, step: () => Promise<void>): Promise<void> => {
    const result = (tails.get(name) ?? Promise.resolve()).then(step);
    const tail = result.catch(() => undefined);
    tails.set(name, tail);
    void tail.then(() => {
      if (tails.get(name) === tail) tails.delete(name);
    });
    return result;
  };

  const close = (name: string): void => {
    enqueue(name, () => transport.unsubscribe(name)).catch(() => undefined);
  };

  const open = (name: string): Entry => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new StoreUnavailableError(`the notification connection did not confirm a subscription within ${subscribeTimeoutMs} ms`)),
        subscribeTimeoutMs,
      );
    });
    const subscribed = enqueue(name, () => transport.subscribe(name));
    const live = Promise.race([subscribed, timeout]).finally(() => clearTimeout(timer));
    const entry: Entry = { listeners: new Set(), live };
    live.catch(() => {
      // NOTE: a failed subscription is forgotten at once, so the next watch tries afresh; the unsubscribe
      // (queued behind a subscribe that may still succeed later) keeps the backend from keeping it.
      if (entries.get(name) === entry) {
        entries.delete(name);
        close(name);
      }
    });
    return entry;
  };

  return {
    async watch(name, onFreed) {
      let entry = entries.get(name);
      if (entry === undefined) {
        entry = open(name);
        entries.set(name, entry);
      }
      const owner = entry;
      // NOTE: a closure of its own, so the same `onFreed` watched twice is two watches.
      const listener = (): void => onFreed();
      owner.listeners.add(listener);
      let ended = false;
      const end = (): void => {
        if (ended) return;
        ended = true;
        owner.listeners.delete(listener);
        if (owner.listeners.size === 0 && entries.get(name) === owner) {
          entries.delete(name);
          close(name);
        }
      };
      try {
        await owner.live;
      } catch (error) {
        end();
        throw error;
      }
      return end;
    },

    deliver(name) {
      const entry = entries.get(name);
      if (entry === undefined) return;
      wake(entry.listeners);
    },

    deliverAll() {
      for (const entry of [...entries.values()]) wake(entry.listeners);
    },

    get size() {
      return entries.size;
    },
  };
}
