/**
 * The input checks of claim-next's three operations (`addItems`, `removeItems`, `claimNext`), made by the shell
 * before any I/O, and the refusal of a store without sets. A store checks its commands again; these give the
 * caller the library's own message whatever the store.
 */
import { InvalidArgumentError, UnsupportedOperationError } from './errors.js';
import type { OnExpired } from './fence/claim-next.js';
import type { Store } from './store.js';
import { checkedItemKeys, describe } from './validate.js';

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

/** A set name and 1 to `MAX_ITEMS_PER_CALL` distinct keys, copied (`checkedItemKeys`, the stores' check too). */
export function checkedItems(set: unknown, keys: unknown): { readonly set: string; readonly keys: readonly string[] } {
  const checked = checkedItemKeys(set, keys);
  // NOTE: checkedItemKeys has asserted the set name.
  return { set: set as string, keys: checked };
}

/** `onExpired`: `'take-over'` (the default) or `'record-first'`. */
export function checkedOnExpired(onExpired: unknown): OnExpired {
  if (onExpired === undefined) return 'take-over';
  if (!ON_EXPIRED.includes(onExpired as OnExpired))
    throw new InvalidArgumentError(`onExpired must be 'take-over' or 'record-first', got ${describe(onExpired)}`);
  return onExpired as OnExpired;
}
