/**
 * Picks the backend of a store kind and client, with or without a planted bug.
 */
import type { ClientKind, StoreAdmin, StoreKind, WorkerBackend } from './backend.js';
import { createEtcdAdmin, createEtcdBackend } from './backend-etcd.js';
import { createPostgresAdmin, createPostgresBackend } from './backend-postgres.js';
import { createRedisAdmin, createRedisBackend } from './backend-redis.js';
import { createSqliteAdmin, createSqliteBackend } from './backend-sqlite.js';
import { postgresMutant, redisMutant, sqliteMutant, type MutantName } from './mutants.js';

/** A worker's backend for `store` at `url` (a file path for SQLite) over `client`; `variant` plants a bug. */
export async function createBackend(
  store: StoreKind,
  url: string,
  client: ClientKind,
  variant: MutantName | null,
  proc: string,
): Promise<WorkerBackend> {
  if (store === 'postgres' || store === 'postgres-promotion' || store === 'postgres-pgbouncer') {
    return createPostgresBackend(
      url,
      proc,
      client,
      variant === null ? undefined : (real, pool) => postgresMutant(variant, real, pool),
      store === 'postgres-pgbouncer',
    );
  }
  if (store === 'etcd' || store === 'etcd-cluster') {
    if (variant !== null) throw new Error('planted bugs run on PostgreSQL, Redis and SQLite');
    return createEtcdBackend(url);
  }
  if (store === 'sqlite')
    return createSqliteBackend(url, variant === null ? undefined : (real, database) => sqliteMutant(variant, real, database));
  // NOTE: 'redis' and 'redis-cluster': the URL says which (clusterUrl).
  return createRedisBackend(url, proc, client, variant === null ? undefined : (real, redis) => redisMutant(variant, real, redis));
}

/** The harness's admin connection to `store` at `url` (prepares tables on Postgres and SQLite). */
export async function createAdmin(store: StoreKind, url: string): Promise<StoreAdmin> {
  if (store === 'postgres' || store === 'postgres-promotion' || store === 'postgres-pgbouncer') return createPostgresAdmin(url);
  if (store === 'sqlite') return createSqliteAdmin(url);
  if (store === 'etcd' || store === 'etcd-cluster') return createEtcdAdmin(url);
  return createRedisAdmin(url);
}
