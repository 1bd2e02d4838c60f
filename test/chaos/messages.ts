/**
 * The IPC vocabulary between the harness and its worker processes.
 */
import type { ClientKind, StoreKind } from './backend.js';
import type { MutantName } from './mutants.js';
import type { WorkloadConfig } from './workload.js';

/** What a worker process is started with (JSON in `CHAOS_WORKER`). */
export interface WorkerSetup {
  readonly store: StoreKind;
  /** The URL this worker connects to (its own fault proxy, or the server); SQLite: the database file. */
  readonly url: string;
  /** The driver this worker uses. */
  readonly client: ClientKind;
  /** A planted bug to run instead of the real adapter (`null`: the real adapter). */
  readonly variant: MutantName | null;
  readonly historyPath: string;
  readonly workload: WorkloadConfig;
}

/** Harness to worker. */
export type HarnessMessage =
  /** Hold the next fenced write after the validity check passes (announce it with `before-write`). */
  | { readonly type: 'arm' }
  | { readonly type: 'disarm' }
  /** Send the held write. */
  | { readonly type: 'go' }
  /** Claim `key` until granted (within `deadlineMs`), write once under it, release; answer `took-over`. */
  | { readonly type: 'takeover'; readonly id: number; readonly key: string; readonly deadlineMs: number }
  /** SIGKILL yourself inside your next fenced write, holding its transaction open (see `dieInNextWrite`). */
  | { readonly type: 'die-in-write' }
  | { readonly type: 'stop' };

/** Worker to harness. */
export type WorkerMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'before-write'; readonly key: string; readonly token: string }
  | { readonly type: 'held-write'; readonly key: string; readonly token: string; readonly accepted: boolean | null }
  | { readonly type: 'took-over'; readonly id: number; readonly token: string | null }
  | { readonly type: 'stopped' };
