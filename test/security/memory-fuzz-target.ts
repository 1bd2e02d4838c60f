/** The fuzz target on the memory store: I/O is counted by a spy around the store the fuzzed `Leases` use. */
import { createMemoryStore, createMemoryTokenGate, type MemoryStoreOptions } from '../../src/adapters/memory/index.js';
import { createLeases } from '../../src/leases.js';
import { spyOn } from '../leases/spy-store.js';
import type { FuzzTarget } from './fuzz-property.js';

export async function memoryFuzzTarget(options?: MemoryStoreOptions): Promise<FuzzTarget> {
  const memory = createMemoryStore(options);
  const spy = spyOn(memory);
  let keys = 0;
  return {
    leases: createLeases(spy.store, { holder: 'fuzz' }),
    setup: createLeases(memory, { holder: 'setup' }),
    foreign: await createLeases(createMemoryStore(), { holder: 'elsewhere' }).claimOrThrow('job:foreign'),
    gate: createMemoryTokenGate({ store: spy.store }),
    ioDuring: async (run) => {
      const before = spy.calls.length;
      await run();
      return spy.calls.length - before;
    },
    freshKey: () => `fuzz:${++keys}`,
    checkpointWithWrite: true,
  };
}
