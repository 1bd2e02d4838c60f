/**
 * The memory store as a chaos backend, for in-process runs that test the harness itself (workload,
 * recorder, checker) without servers: every "worker" shares one store in one process.
 */
import { createMemoryStore, createMemoryTokenGate, type MemoryStore } from '../../src/adapters/memory/index.js';
import type { Store } from '../../src/store.js';
import { createLeases } from '../../src/leases.js';
import type { StoreAdmin, WorkerBackend } from './backend.js';
import { finalKeyState, resourceOf } from './backend.js';

/** A shared in-process store with its ledgers; `backend()` hands each in-process worker its view. */
export interface MemoryChaos {
  readonly store: MemoryStore;
  backend(wrap?: (store: Store) => Store): WorkerBackend;
  readonly admin: StoreAdmin;
}

/** Creates the in-process store, ledgers and admin. */
export function createMemoryChaos(): MemoryChaos {
  const store = createMemoryStore();
  const gate = createMemoryTokenGate();
  const ledgers = new Map<string, string[]>();
  const append = (name: string, entry: string): void => {
    const list = ledgers.get(name) ?? [];
    list.push(entry);
    ledgers.set(name, list);
  };
  const backend = (wrap: (store: Store) => Store = (s) => s): WorkerBackend => ({
    store: wrap(store),
    gate,
    appendUnderFence: (leases, lease, entry) => leases.fencedWrite(lease, () => append(`ledger:${lease.key}`, entry)),
    appendThroughGate: (leases, lease, resource, entry) => leases.gateWrite(gate, resource, lease, () => append(`gate:${resource}`, entry)),
    close: async () => undefined,
  });
  const operator = createLeases(store, { holder: 'chaos-operator' });
  const admin: StoreAdmin = {
    // NOTE: the memory store's clock is the system clock here; there is no record to rewrite from outside.
    forceExpire: async () => undefined,
    killConnections: async () => 0,
    revoke: async (key) => (await operator.revoke(key, { reason: 'chaos: operator revoke', by: 'chaos-operator' })).ok,
    readFinal: async (keys) =>
      Promise.all(
        keys.map(async (key) =>
          finalKeyState(key, await store.inspect(key), ledgers.get(`ledger:${key}`) ?? [], ledgers.get(`gate:${resourceOf(key)}`) ?? []),
        ),
      ),
    close: async () => undefined,
  };
  return { store, backend, admin };
}
