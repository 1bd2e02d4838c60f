/**
 * The declarations a `no-run` fragment of the docs may use without importing them: the `store`, `leases` and
 * `lease` of the surrounding text, the package's functions, and the application's own functions the
 * examples call (`saveDecision`, `fetchBatch`, ...). Written as `context.d.ts` into the temp project of the
 * docs tests only, so these globals never leak into the repository's own type-check.
 */
export const BLOCK_CONTEXT = `
import type * as leasefence from 'leasefence';
import type { Lease, Leases, Store } from 'leasefence';
import type { MemoryWriteContext } from 'leasefence/memory';

declare global {
  const store: Store<MemoryWriteContext>;
  const leases: Leases<Store<MemoryWriteContext>>;
  const lease: Lease;
  const createLeases: typeof leasefence.createLeases;
  const describeRefusal: typeof leasefence.describeRefusal;
  const isLeaseError: typeof leasefence.isLeaseError;
  const isLeaseLostError: typeof leasefence.isLeaseLostError;
  const isStoreFailure: typeof leasefence.isStoreFailure;
  /** A fenced write's callback. */
  function write(context: MemoryWriteContext): void;
  function saveDecision(context: MemoryWriteContext): void;
  function saveRows(context: MemoryWriteContext, rows: readonly string[]): void;
  function fetchBatch(batch: number, options: { signal: AbortSignal }): Promise<string[]>;
}
export {};
`;
