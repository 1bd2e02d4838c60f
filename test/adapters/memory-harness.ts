/** The memory store's harness now lives in the `leasefence/testing` entry; this keeps the old import path. */
export { createMemoryHarness, MEMORY_EPOCH, type MemoryLikeStore } from '../../src/testing/index.js';
