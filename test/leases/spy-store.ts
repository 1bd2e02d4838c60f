/**
 * A store wrapper that counts every call, to prove that bad input is refused before any store access.
 */
import type { Store } from '../../src/store.js';

export interface SpiedStore<S extends Store> {
  readonly store: S;
  /** Every store method called so far, in order. */
  readonly calls: string[];
}

const STORE_METHODS = new Set<PropertyKey>([
  'claim',
  'renew',
  'checkpoint',
  'fencedWrite',
  'release',
  'revoke',
  'recover',
  'setKeyState',
  'remove',
  'inspect',
  'addItems',
  'removeItems',
  'claimNext',
  'acquirePermit',
  'watchFreed',
]);

/** Wraps `inner`, recording the name of every store method called through the wrapper. */
export function spyOn<S extends Store>(inner: S): SpiedStore<S> {
  const calls: string[] = [];
  const store = new Proxy(inner, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (!STORE_METHODS.has(property) || typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(String(property));
        return (value as (...params: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, calls };
}
