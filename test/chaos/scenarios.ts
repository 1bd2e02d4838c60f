/**
 * The chaos scenarios: which faults a run injects, against which stores, with which worker settings.
 * RELIABILITY.md describes each one.
 */
import type { StoreKind } from './backend.js';

/** A fault the nemesis can inject (see nemesis.ts). */
export type FaultName =
  | 'kleppmann'
  | 'kill'
  | 'pause'
  | 'kill-connections'
  | 'reset'
  | 'lost-reply'
  | 'latency'
  | 'partition'
  | 'restart'
  | 'force-expire'
  | 'revoke'
  | 'script-flush'
  | 'kill-in-write'
  | 'freeze'
  | 'failover'
  | 'quorum-loss';

/** A chaos scenario. */
export interface Scenario {
  readonly name: string;
  /** One line for the summary and RELIABILITY.md. */
  readonly summary: string;
  readonly stores: readonly StoreKind[];
  /** Faults drawn (uniformly, seeded) by the nemesis loop. */
  readonly faults: readonly FaultName[];
  /** Pause between faults, ms. */
  readonly faultGapMs: readonly [number, number];
  readonly workers: number;
  readonly keys: number;
  /** Workers reach the server through their own fault proxy. */
  readonly proxies: boolean;
  /** Workers get skewed, jumping monotonic clocks. */
  readonly skewedClocks: boolean;
  /** The scenario restarts the server or touches all of it: it needs a server of its own. */
  readonly ownServer: boolean;
  /** Redis persistence for an own server. */
  readonly redisPersistence: 'aof' | 'none';
  /** Liveness bound on takeover after a kill or pause (ms), or null to only report it. */
  readonly takeoverBoundMs: number | null;
  /** The fault injected first, before the seeded draws (so a short run always holds one). */
  readonly firstFault?: FaultName;
  /** Per scenario run in the short run of `npm test` (ms), when shorter than the suite's default. */
  readonly shortMs?: number;
}

/** Lease TTL of every worker, ms. */
export const TTL_MS = 500;

const base = {
  stores: ['postgres', 'redis'] as const,
  faultGapMs: [300, 900] as const,
  workers: 4,
  keys: 3,
  proxies: false,
  skewedClocks: false,
  ownServer: false,
  redisPersistence: 'aof' as const,
  takeoverBoundMs: null,
};

/** Every scenario, in the order a run goes through them. */
export const SCENARIOS: readonly Scenario[] = [
  {
    ...base,
    name: 'kleppmann',
    stores: ['postgres', 'redis', 'sqlite', 'etcd'],
    summary:
      'deterministic pause: a worker passes its validity check, is SIGSTOPped past its TTL, another takes over and writes, SIGCONT; its write must be refused',
    faults: ['kleppmann'],
    faultGapMs: [100, 300],
    keys: 2,
  },
  {
    ...base,
    name: 'crash',
    summary: 'SIGKILL of workers mid-operation with respawn, and SIGSTOP/SIGCONT pauses of 1.5-3 TTL',
    stores: ['postgres', 'redis', 'sqlite', 'etcd'],
    faults: ['kill', 'pause', 'kill-in-write'],
    // NOTE: generous (10 TTL): liveness under CPU starvation on 2 cores is noise, not a safety signal.
    takeoverBoundMs: 10 * TTL_MS,
  },
  {
    ...base,
    name: 'connections',
    summary: 'killed connections (pg_terminate_backend / CLIENT KILL TYPE normal), connection resets, and lost replies followed by a reset',
    stores: ['postgres', 'redis', 'etcd'],
    faults: ['kill-connections', 'reset', 'lost-reply'],
    proxies: true,
  },
  {
    ...base,
    name: 'network',
    summary: 'per-worker latency (50-400 ms), partitions of 1-3 TTL then heal (held bytes delivered late), lost replies',
    stores: ['postgres', 'redis', 'etcd'],
    faults: ['latency', 'partition', 'lost-reply'],
    proxies: true,
  },
  {
    ...base,
    name: 'restart',
    summary:
      'server restarts: Postgres immediate (crash) restart; redis-server kill -9 and restart with AOF (appendfsync always); etcd kill -9 and restart on its data dir',
    stores: ['postgres', 'redis', 'etcd'],
    faults: ['restart'],
    faultGapMs: [1500, 3000],
    ownServer: true,
  },
  {
    ...base,
    name: 'amnesia',
    summary: 'redis-server WITHOUT persistence, kill -9 and restart: every record is lost; tokens must still grow (clock floor)',
    stores: ['redis'],
    faults: ['restart'],
    faultGapMs: [1500, 3000],
    ownServer: true,
    redisPersistence: 'none',
  },
  {
    ...base,
    name: 'expiry-skew',
    summary:
      "forced early expiry (etcd: the live key's etcd lease revoked), operator revokes, SCRIPT FLUSH (Redis), worker pauses, and every worker clock skewed (rate 0.25-3x, jumps of up to 8 s)",
    stores: ['postgres', 'redis', 'sqlite', 'etcd'],
    faults: ['force-expire', 'revoke', 'script-flush', 'pause'],
    skewedClocks: true,
    // NOTE: SCRIPT FLUSH empties the whole server's script cache: keep it away from tests sharing a server.
    ownServer: true,
  },
  {
    ...base,
    name: 'lock-kill',
    summary:
      'a worker SIGKILLs itself inside a fenced write, its row written and uncommitted (SQLite: holding the write lock of BEGIN IMMEDIATE; Postgres: the lease row lock), and is respawned',
    stores: ['postgres', 'sqlite'],
    faults: ['kill-in-write'],
    takeoverBoundMs: 10 * TTL_MS,
  },
  {
    ...base,
    name: 'freeze',
    summary:
      'the whole server frozen: SIGSTOP of redis-server / the postmaster and every backend / etcd for 2-4 TTL, then SIGCONT; worker kills and pauses in between',
    stores: ['postgres', 'redis', 'etcd'],
    faults: ['freeze', 'freeze', 'kill', 'pause'],
    faultGapMs: [500, 1500],
    ownServer: true,
    shortMs: 5000,
  },
  {
    ...base,
    name: 'failover',
    stores: ['redis-cluster', 'redis-sentinel'],
    summary:
      'SIGKILL of the master serving a key, its replica promoted (asynchronous replication: acknowledged grants and writes may be lost, counted apart), the killed node restarted as a replica; Kleppmann pauses, worker kills and pauses in between',
    faults: ['failover', 'failover', 'kleppmann', 'kill', 'pause'],
    firstFault: 'failover',
    faultGapMs: [500, 1500],
    // NOTE: a failover alone takes 5-10 s (detection, election, the node restarted and resynced); the run lasts
    // at least until the first one has healed.
    shortMs: 6_000,
  },
  {
    ...base,
    name: 'promotion',
    stores: ['postgres-promotion'],
    summary:
      'the Postgres primary crashed (immediate stop) while workers run, its asynchronous streaming standby promoted and the workers sent to it (commits it never received are lost, counted apart); Kleppmann pauses, worker kills and pauses before and after',
    faults: ['kleppmann', 'kill', 'pause'],
    firstFault: 'failover',
    faultGapMs: [1000, 3000],
    ownServer: true,
    shortMs: 6_000,
  },
  {
    ...base,
    name: 'pooler-restart',
    stores: ['postgres-pgbouncer'],
    summary:
      'PostgreSQL through PgBouncer 1.18 in transaction mode (store and gate with prepare: false): the pooler killed and restarted mid-run (every client and server connection cut, transactions in flight rolled back); worker kills, pauses and Kleppmann pauses in between',
    faults: ['restart', 'restart', 'kleppmann', 'kill', 'pause'],
    firstFault: 'restart',
    faultGapMs: [800, 2000],
    ownServer: true,
    takeoverBoundMs: 10 * TTL_MS,
  },
  {
    ...base,
    name: 'consensus',
    stores: ['etcd-cluster'],
    summary:
      '3 etcd members: the leader SIGKILLed (a new one elected, the killed member restarted on its data), the leader SIGSTOPped for 2-4 TTL, a member killed and restarted, quorum lost (two members killed for 2-6 TTL) and regained; Kleppmann pauses, worker kills and pauses in between. Raft: acknowledged grants and writes are never lost',
    faults: ['failover', 'freeze', 'restart', 'quorum-loss', 'kleppmann', 'kill', 'pause'],
    firstFault: 'failover',
    faultGapMs: [500, 1500],
    ownServer: true,
    shortMs: 8_000,
  },
];

/** The scenarios that apply to `store`. */
export function scenariosFor(store: StoreKind): Scenario[] {
  return SCENARIOS.filter((scenario) => scenario.stores.includes(store));
}
