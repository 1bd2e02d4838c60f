export { createMemoryStore, type MemoryStore, type MemoryStoreOptions, type MemoryWriteContext } from './memory-store.js';
export { createMemoryTokenGate, type MemoryGateContext, type MemoryTokenGate, type MemoryTokenGateOptions } from './memory-gate.js';
export { createManualClock, type ManualClock } from '../../clock.js';
