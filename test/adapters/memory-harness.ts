/** The memory store's harness now lives in the `leasefence/testing` entry; this keeps the old import path. */
export { createMemoryHarness, type MemoryLikeStore } from '../../src/testing/index.js';
export { MEMORY_EPOCH } from '../../src/testing/memory-harness.js';
