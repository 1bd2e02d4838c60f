/**
 * The declarations a `no-run` fragment of the docs may use without importing them: the `store`, `leases` and
 * `lease` of the surrounding text, the package's functions, the application's own functions the examples
 * call (`saveDecision`, `fetchBatch`, ...) and the connections the guides' fragments are given (`client`,
 * `pool`, `url`, ...). Written as `context.d.ts` into the temp project of the
 * docs tests only, so these globals never leak into the repository's own type-check.
 */
export const BLOCK_CONTEXT = `
import type * as leasefence from 'leasefence';
import type { Lease, Leases, Store } from 'leasefence';
import type { MemoryWriteContext } from 'leasefence/memory';
import type { Redis } from 'ioredis';
import type pg from 'pg';

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
  /** withLease's work and the process's shutdown switch (docs/waiting.md). */
  function work(lease: Lease, signal: AbortSignal): Promise<void>;
  const shutdown: AbortController;
  /** The connections a guide's fragment is given: a Redis URL and client, a pg pool and a direct Postgres URL. */
  const url: string;
  const client: Redis;
  const pool: pg.Pool;
  const directUrl: string;
}
export {};
`;
