/**
 * The memory store as a chaos backend, for in-process runs that test the harness itself (workload,
 * recorder, checker) without servers: every "worker" shares one store in one process.
 */
import { createMemoryStore, createMemoryTokenGate, type MemoryStore } from '../../src/adapters/memory/index.js';
import type { Store } from '../../src/store.js';
import type { StoreAdmin, WorkerBackend } from './backend.js';
import { resourceOf } from './backend.js';
import { decodeEntry, type FinalKeyState } from './history.js';

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
  const admin: StoreAdmin = {
    // NOTE: the memory store's clock is the system clock here; there is no record to rewrite from outside.
    forceExpire: async () => undefined,
    killConnections: async () => 0,
    revoke: async () => false,
    readFinal: async (keys) =>
      Promise.all(
        keys.map(async (key): Promise<FinalKeyState> => {
          const inspection = await store.inspect(key);
          const checkpoint = inspection.checkpoint;
          return {
            key,
            token: inspection.token.toString(),
            ledger: (ledgers.get(`ledger:${key}`) ?? []).map(decodeEntry),
            gateLedger: (ledgers.get(`gate:${resourceOf(key)}`) ?? []).map(decodeEntry),
            checkpoint: checkpoint === null ? null : { id: (JSON.parse(checkpoint.json) as { id: string }).id, token: checkpoint.token.toString() },
          };
        }),
      ),
    close: async () => undefined,
  };
  return { store, backend, admin };
}
