/** Spec helpers under their old path; they live in `leasefence/testing` (src/testing/context.ts). */
export { mustClaim, SPEC_TTL_MS, textOf } from '../../src/testing/context.js';
