/**
 * Picks the backend of a store kind, with or without a planted bug.
 */
import type { StoreAdmin, StoreKind, WorkerBackend } from './backend.js';
import { createPostgresAdmin, createPostgresBackend } from './backend-postgres.js';
import { createRedisAdmin, createRedisBackend } from './backend-redis.js';
import { postgresMutant, redisMutant, type MutantName } from './mutants.js';

/** A worker's backend for `store` at `url`; `variant` plants a bug. */
export async function createBackend(store: StoreKind, url: string, variant: MutantName | null, proc: string): Promise<WorkerBackend> {
  if (store === 'postgres') return createPostgresBackend(url, proc, variant === null ? undefined : (real, pool) => postgresMutant(variant, real, pool));
  return createRedisBackend(url, proc, variant === null ? undefined : (real, client) => redisMutant(variant, real, client));
}

/** The harness's admin connection to `store` at `url` (prepares tables on Postgres). */
export async function createAdmin(store: StoreKind, url: string): Promise<StoreAdmin> {
  return store === 'postgres' ? createPostgresAdmin(url) : createRedisAdmin(url);
}
