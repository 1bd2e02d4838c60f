/**
 * Issue 29 item 15: what a store cannot do is a capability its harness declares, not a guess from the store's
 * id. A memory store behind a wrapper with an id of its own (as a store author's instrumented or namespaced
 * store would have) passes the conformance specs, because the memory harness declares `rollsBackWrites: false`.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createMemoryStore, type MemoryStore } from '../../src/adapters/memory/index.js';
import { createMemoryHarness, describeStoreConformance } from '../../src/testing/index.js';

/** The memory store under another id: every operation passes through unchanged. */
function renamed(store: MemoryStore): MemoryStore {
  return Object.assign(Object.create(store) as MemoryStore, { id: `instrumented:${store.id}` });
}

describeStoreConformance({ describe, it, beforeAll, afterAll }, 'memory store wrapped under another id', async () =>
  createMemoryHarness((clock) => renamed(createMemoryStore({ clock }))),
);
