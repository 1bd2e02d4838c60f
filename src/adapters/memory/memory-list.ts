/**
 * The memory store's `list`: keyset paging over its keys in code-unit order. A call merges in the keys created
 * since the previous call (sorting only those), then reads at most `limit` records after the cursor
 * (O(log n + limit)). Removed keys leave the index when they are removed.
 */
import type { Clock } from '../../clock.js';
import * as transitions from '../../fence/transitions.js';
import type { LeaseRecord } from '../../fence/types.js';
import { toListedInspection, type StoreListPage, type StoreListQuery } from '../../list.js';

/** The first index in sorted `keys` whose key is greater than `after`. */
function firstAfter(keys: readonly string[], after: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((keys[middle] as string) <= after) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * The sorted key index of a memory store and its `list`. The store tells it of every key it creates (`added`)
 * and removes (`removed`); a call merges the keys created since the previous call (sorting only those, then
 * one linear merge), so listing never re-sorts every key.
 */
export class MemoryKeyIndex {
  #sorted: string[] = [];
  #fresh: string[] = [];

  constructor(
    private readonly records: ReadonlyMap<string, LeaseRecord>,
    private readonly clock: Clock,
  ) {}

  /** A key the store just created. */
  added(key: string): void {
    this.#fresh.push(key);
  }

  /** A key the store just removed (a remove is rare: an operator's, so a splice is fine). */
  removed(key: string): void {
    const at = this.#fresh.indexOf(key);
    if (at !== -1) {
      this.#fresh.splice(at, 1);
      return;
    }
    const index = lowerBound(this.#sorted, key);
    if (this.#sorted[index] === key) this.#sorted.splice(index, 1);
  }

  /** `Store.list` over the records. */
  readonly list = (query: StoreListQuery): Promise<StoreListPage> => {
    this.#mergeFresh();
    const sorted = this.#sorted;
    const now = this.clock();
    const { prefix, limit, cursor } = query;
    // NOTE: in code-unit order the keys that start with `prefix` are contiguous, from its lower bound on.
    const from = cursor === null ? lowerBound(sorted, prefix) : Math.max(lowerBound(sorted, prefix), firstAfter(sorted, cursor));
    const leases = [];
    let index = from;
    for (; index < sorted.length && index < from + limit; index += 1) {
      const key = sorted[index] as string;
      if (!key.startsWith(prefix)) break;
      leases.push(toListedInspection(transitions.inspect(this.records.get(key) ?? null, key, now)));
    }
    const next = sorted[index];
    const more = index === from + limit && next !== undefined && next.startsWith(prefix);
    return Promise.resolve({ leases, cursor: more ? (sorted[index - 1] as string) : null });
  };

  #mergeFresh(): void {
    if (this.#fresh.length === 0) return;
    // NOTE: the default sort compares UTF-16 code units, the order `list` promises.
    const fresh = this.#fresh.sort();
    this.#fresh = [];
    const sorted = this.#sorted;
    const merged: string[] = new Array(sorted.length + fresh.length);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < sorted.length && j < fresh.length)
      merged[k++] = (sorted[i] as string) < (fresh[j] as string) ? (sorted[i++] as string) : (fresh[j++] as string);
    while (i < sorted.length) merged[k++] = sorted[i++] as string;
    while (j < fresh.length) merged[k++] = fresh[j++] as string;
    this.#sorted = merged;
  }
}

/** The first index in sorted `keys` whose key is at least `text`. */
function lowerBound(keys: readonly string[], text: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((keys[middle] as string) < text) low = middle + 1;
    else high = middle;
  }
  return low;
}
