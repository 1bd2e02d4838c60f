/**
 * `Store.watchFreed` on etcd: one etcd watch per waited lease record (on the client's own gRPC channel,
 * shared by every waiter of that key in this process, cancelled when the last one leaves). A put of the
 * record without a grant is a release, a revoke or a key-state change that ended the grant committing, and
 * a removal mark is a `remove`: its waiters are woken, as they are by a dequeue that left the key to the next
 * waiter (its put says so, `wake`; a put that only queued a waiting claim says it frees nothing). A deleted record
 * (an operator's hand, or a removal mark's etcd lease running out) wakes them too. No polling: etcd streams the
 * record's changes.
 */
import { createFreedSubscriptions, type FreedTransport } from '../freed-subscriptions.js';

/** The etcd3 client's watcher, as far as the store uses it. */
export interface EtcdWatcher {
  /** A put of the watched key, with its new value. */
  on(event: 'put', listener: (kv: { readonly value: Buffer }) => void): unknown;
  /** The key was deleted, the watch (re)connected, or it failed. */
  on(event: 'delete' | 'connected' | 'error', listener: () => void): unknown;
  /** Ends the watch. */
  cancel(): Promise<void>;
}

/** The etcd3 client's watch builder (`client.watch().key(k).create()`), as far as the store uses it. */
export interface EtcdWatchBuilder {
  /** Watches one key. */
  key(key: Buffer): {
    /** Starts the watch. */
    create(): Promise<EtcdWatcher>;
  };
}

/**
 * Whether a put of the record means the key was freed: a leasefence record with no grant (a release, a revoke,
 * a key-state change that ended the grant; also a hold or state set while nothing held the key, which costs a
 * waiter one claim), or the removal mark a `remove` leaves (see record.ts). A put that says `wake` is taken at its
 * word: `false` for one that only changed the key's queue, `true` for a dequeue that left the key to the next waiter.
 */
function freedBy(value: Buffer): boolean {
  try {
    const record = JSON.parse(value.toString('utf8')) as { grant?: unknown; removed?: unknown; wake?: unknown } | null;
    if (typeof record !== 'object' || record === null) return false;
    if (record.removed === true) return true;
    return typeof record.wake === 'boolean' ? record.wake : record.grant === null;
  } catch {
    return false;
  }
}

/** `watchFreed` for record keys named by `recordKey`, over `watch` (the client's `watch`, bound). */
export function createEtcdFreed(
  watch: () => EtcdWatchBuilder,
  recordKey: (key: string) => Buffer,
  subscribeTimeoutMs: number,
): (key: string, onFreed: () => void) => Promise<() => void> {
  const watchers = new Map<string, EtcdWatcher>();
  const transport: FreedTransport = {
    async subscribe(name) {
      const watcher = await watch().key(recordKey(name)).create();
      // NOTE: an EventEmitter without an 'error' listener throws; a watch error only delays waiters to their schedule.
      watcher.on('error', () => undefined);
      watcher.on('put', (kv) => {
        if (freedBy(kv.value)) subscriptions.deliver(name);
      });
      watcher.on('delete', () => subscriptions.deliver(name));
      // NOTE: after a reconnect the client resumes the watch where it stopped; a wake-up then costs a waiter one claim at most.
      watcher.on('connected', () => subscriptions.deliver(name));
      watchers.set(name, watcher);
    },
    async unsubscribe(name) {
      const watcher = watchers.get(name);
      watchers.delete(name);
      await watcher?.cancel();
    },
  };
  const subscriptions = createFreedSubscriptions(transport, subscribeTimeoutMs);
  return (key, onFreed) => subscriptions.watch(key, onFreed);
}
