/**
 * The input checks of claim-next's three operations (`addItems`, `removeItems`, `claimNext`), made by the shell
 * before any I/O, and the refusal of a store without sets. A store checks its commands again; these give the
 * caller the library's own message whatever the store.
 */
import { InvalidArgumentError, UnsupportedOperationError } from './errors.js';
import type { OnExpired } from './fence/claim-next.js';
import type { Store } from './store.js';
import { assertKey, assertName, describe, MAX_TTL_MS } from './validate.js';

/** The most keys one `addItems` or `removeItems` takes (the stores' limit too). */
export const MAX_ITEMS_PER_CALL = 1000;

const ON_EXPIRED: readonly OnExpired[] = ['take-over', 'record-first'];

/** The store's item methods, or `UnsupportedOperationError` when it offers none of the three (or only some). */
export function itemMethodsOf(store: Store, operation: string): Required<Pick<Store, 'addItems' | 'removeItems' | 'claimNext'>> {
  let methods: { readonly [M in 'addItems' | 'removeItems' | 'claimNext']: Store[M] | undefined };
  try {
    methods = { addItems: store.addItems, removeItems: store.removeItems, claimNext: store.claimNext };
  } catch {
    throw new InvalidArgumentError(`${operation} needs a Store whose methods can be read (a getter or Proxy threw)`);
  }
  const { addItems, removeItems, claimNext } = methods;
  if (typeof addItems !== 'function' || typeof removeItems !== 'function' || typeof claimNext !== 'function')
    throw new UnsupportedOperationError(operation, store.id, 'the store offers no sets (addItems, removeItems and claimNext)');
  return { addItems: addItems.bind(store), removeItems: removeItems.bind(store), claimNext: claimNext.bind(store) };
}

/** A set name and 1 to `MAX_ITEMS_PER_CALL` distinct keys, copied (a caller's array cannot change after the check). */
export function checkedItems(set: unknown, keys: unknown): { readonly set: string; readonly keys: readonly string[] } {
  assertName('set', set);
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > MAX_ITEMS_PER_CALL)
    throw new InvalidArgumentError(`keys must be an array of 1 to ${MAX_ITEMS_PER_CALL} keys, got ${describe(keys)}`);
  const copy = Array.from(keys as unknown[]);
  for (const key of copy) assertKey(key);
  if (new Set(copy).size !== copy.length) throw new InvalidArgumentError('keys must not repeat a key');
  return { set, keys: copy as string[] };
}

/** `notBeforeMs`: an integer from 0 to `MAX_TTL_MS` (0 when absent). */
export function checkedNotBefore(notBeforeMs: unknown): number {
  const delay = notBeforeMs ?? 0;
  if (typeof delay !== 'number' || !Number.isInteger(delay) || delay < 0 || delay > MAX_TTL_MS)
    throw new InvalidArgumentError(`notBeforeMs must be an integer number of milliseconds from 0 to ${MAX_TTL_MS}, got ${describe(delay)}`);
  return delay;
}

/** `onExpired`: `'take-over'` (the default) or `'record-first'`. */
export function checkedOnExpired(onExpired: unknown): OnExpired {
  if (onExpired === undefined) return 'take-over';
  if (!ON_EXPIRED.includes(onExpired as OnExpired))
    throw new InvalidArgumentError(`onExpired must be 'take-over' or 'record-first', got ${describe(onExpired)}`);
  return onExpired as OnExpired;
}
