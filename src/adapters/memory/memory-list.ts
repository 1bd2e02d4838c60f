/**
 * The memory store's `list`: keyset paging over its keys in code-unit order. Records are never deleted,
 * so the sorted key index only grows: a call merges in the keys claimed since the previous call (O(new
 * keys)), then reads at most `limit` records after the cursor (O(log n + limit)).
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

/** Builds `list` over a memory store's records (a `Map` that is only ever added to). */
export function createMemoryList(
  records: ReadonlyMap<string, LeaseRecord>,
  clock: Clock,
): (query: StoreListQuery) => Promise<StoreListPage> {
  let sorted: string[] = [];
  return (query) => {
    if (records.size > sorted.length) {
      // NOTE: a Map iterates in insertion order and records are never deleted: the new keys are the tail.
      const fresh = Array.from(records.keys()).slice(sorted.length).sort();
      sorted = sorted.concat(fresh).sort();
    }
    const now = clock();
    const { prefix, limit, cursor } = query;
    // NOTE: in code-unit order the keys that start with `prefix` are contiguous, from its lower bound on.
    const from = cursor === null ? lowerBound(sorted, prefix) : Math.max(lowerBound(sorted, prefix), firstAfter(sorted, cursor));
    const leases = [];
    let index = from;
    for (; index < sorted.length && index < from + limit; index += 1) {
      const key = sorted[index] as string;
      if (!key.startsWith(prefix)) break;
      leases.push(toListedInspection(transitions.inspect(records.get(key) ?? null, key, now)));
    }
    const next = sorted[index];
    const more = index === from + limit && next !== undefined && next.startsWith(prefix);
    return Promise.resolve({ leases, cursor: more ? (sorted[index - 1] as string) : null });
  };
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
