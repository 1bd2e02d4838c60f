/**
 * The memory store's `list`: keyset paging over its keys in code-unit order. The store tells the index of every
 * key it creates and removes, which it keeps sorted at once (sorted-keys.ts: O(log n + chunk) per key), so a
 * call reads at most `limit` records after the cursor (O(log n + limit)) however many keys arrived since the
 * previous one.
 */
import type { Clock } from '../../clock.js';
import * as transitions from '../../fence/transitions.js';
import type { LeaseRecord } from '../../fence/types.js';
import { toListedInspection, type StoreListPage, type StoreListQuery } from '../../list.js';
import { SortedKeys } from './sorted-keys.js';

/** The sorted key index of a memory store and its `list`. */
export class MemoryKeyIndex {
  readonly #keys = new SortedKeys();

  constructor(
    private readonly records: ReadonlyMap<string, LeaseRecord>,
    private readonly clock: Clock,
  ) {}

  /** A key the store just created. */
  added(key: string): void {
    this.#keys.add(key);
  }

  /** A key the store just removed. */
  removed(key: string): void {
    this.#keys.delete(key);
  }

  /** `Store.list` over the records. */
  readonly list = (query: StoreListQuery): Promise<StoreListPage> => {
    const keys = this.#keys;
    const now = this.clock();
    const { prefix, limit, cursor } = query;
    // NOTE: in code-unit order the keys that start with `prefix` are contiguous, from its lower bound on; a
    // cursor below the prefix starts there too.
    let position = cursor === null || cursor < prefix ? keys.seek(prefix, false) : keys.seek(cursor, true);
    const leases = [];
    let last: string | null = null;
    for (let key = keys.at(position); key !== undefined && leases.length < limit; key = keys.at(position)) {
      if (!key.startsWith(prefix)) break;
      leases.push(toListedInspection(transitions.inspect(this.records.get(key) ?? null, key, now)));
      last = key;
      position = keys.next(position);
    }
    const next = keys.at(position);
    const more = leases.length === limit && next !== undefined && next.startsWith(prefix);
    return Promise.resolve({ leases, cursor: more ? last : null });
  };
}
