/**
 * What the chaos harness needs from a store, on both sides: a worker uses a `WorkerBackend` exactly as a
 * user would (a store, a token gate, and a ledger written inside the fenced write); the harness uses a
 * `StoreAdmin` to prepare the ledger, force expiries, cut connections and read the final state.
 */
import type { FencedWriteOutcome, GateOutcome, StoreInspection } from '../../src/fence/operations.js';
import type { TokenGate } from '../../src/gate.js';
import type { Lease } from '../../src/lease.js';
import type { Leases } from '../../src/leases-types.js';
import type { Store } from '../../src/store.js';
import { decodeEntry, type FinalKeyState } from './history.js';

/**
 * Which store a run targets (`redis-cluster`: 3 masters + 3 replicas; `redis-sentinel`: a master, a replica and
 * three Sentinels; the nemesis kills their masters; `postgres-promotion`: a primary and its asynchronous
 * streaming standby, promoted once the primary is crashed; `postgres-pgbouncer`: PostgreSQL reached through a
 * PgBouncer in transaction mode, the store with `prepare: false`, the nemesis restarting the pooler; `etcd`: a
 * single etcd member; `etcd-cluster`: 3 etcd members on loopback, the nemesis killing, freezing and restarting
 * members and taking quorum away).
 */
export type StoreKind =
  | 'postgres'
  | 'redis'
  | 'sqlite'
  | 'redis-cluster'
  | 'redis-sentinel'
  | 'postgres-promotion'
  | 'postgres-pgbouncer'
  | 'etcd'
  | 'etcd-cluster';

/** Which driver a worker process talks to its store with (a run can mix them on one store). */
export type ClientKind =
  | 'pg'
  | 'postgres-js'
  | 'ioredis'
  | 'node-redis'
  | 'better-sqlite3'
  | 'ioredis-cluster'
  | 'ioredis-sentinel'
  | 'etcd3';

/**
 * The drivers of each store, the first one the default (and the one planted bugs use). On a cluster only
 * ioredis' `Cluster`: node-redis' cluster client does not recover from a dead master (docs/topologies.md); behind
 * Sentinel, ioredis asking the Sentinels for the master.
 */
export const CLIENTS: Readonly<Record<StoreKind, readonly ClientKind[]>> = {
  postgres: ['pg', 'postgres-js'],
  redis: ['ioredis', 'node-redis'],
  sqlite: ['better-sqlite3'],
  'redis-cluster': ['ioredis-cluster'],
  'redis-sentinel': ['ioredis-sentinel'],
  'postgres-promotion': ['pg', 'postgres-js'],
  'postgres-pgbouncer': ['pg', 'postgres-js'],
  etcd: ['etcd3'],
  'etcd-cluster': ['etcd3'],
};

/** A worker's view of the store. */
export interface WorkerBackend {
  readonly store: Store;
  readonly gate: TokenGate;
  /** Appends `entry` to the key's ledger inside `leases.fencedWrite` (applied only under a current grant). */
  appendUnderFence(leases: Leases, lease: Lease, entry: string): Promise<FencedWriteOutcome<unknown>>;
  /** Appends `entry` to `resource`'s ledger through the token gate with the lease's token. */
  appendThroughGate(leases: Leases, lease: Lease, resource: string, entry: string): Promise<GateOutcome<unknown>>;
  /**
   * Makes the process SIGKILL itself inside its next fenced write, after the ledger row is written and
   * before the commit (Postgres, SQLite: the transaction holds the lease row's lock or the file's write
   * lock). Absent where a fenced write holds nothing open in the client (Redis).
   */
  dieInNextWrite?(onDying: (entry: string) => void): void;
  close(): Promise<void>;
}

/** The harness's view of the store. */
export interface StoreAdmin {
  /** Makes the current grant of `key` expire now on the store's clock. */
  forceExpire(key: string): Promise<void>;
  /** Cuts every worker connection (pg_terminate_backend / CLIENT KILL TYPE normal); returns how many. */
  killConnections(): Promise<number>;
  /** An operator's force-release of `key` (moves the token on); `true` when something was revoked. */
  revoke(key: string): Promise<boolean>;
  /** Redis only: SCRIPT FLUSH, so every worker's next EVALSHA meets NOSCRIPT. */
  scriptFlush?(): Promise<void>;
  /** Reads token, ledgers and checkpoint of each key. */
  readFinal(keys: readonly string[]): Promise<FinalKeyState[]>;
  close(): Promise<void>;
}

/** A key's final state from the store's inspection and its two ledgers (as stored, in apply order). */
export function finalKeyState(
  key: string,
  inspection: StoreInspection,
  ledger: readonly string[],
  gateLedger: readonly string[],
): FinalKeyState {
  const checkpoint = inspection.checkpoint;
  return {
    key,
    token: inspection.token.toString(),
    ledger: ledger.map(decodeEntry),
    gateLedger: gateLedger.map(decodeEntry),
    checkpoint: checkpoint === null ? null : { id: (JSON.parse(checkpoint.json) as { id: string }).id, token: checkpoint.token.toString() },
  };
}

/**
 * The gated resource of a key. NOTE: it carries the key as its hash tag, so on a Redis Cluster the
 * full-fence gate's script (which reads the lease record) has all its keys in the lease's slot.
 */
export function resourceOf(key: string): string {
  return `res:{${key}}`;
}
