/** The harness types under their old path; they live in `leasefence/testing` (src/testing/harness.ts). */
export type { MakeStoreHarness, StoreHarness, SuiteOptions } from '../../src/testing/index.js';
