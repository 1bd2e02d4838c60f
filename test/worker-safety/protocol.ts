/**
 * What the exactly-once harness and its exporter processes say to each other. The worker stops at every
 * kill point, announces it, and goes on only when the harness answers `go`; the harness SIGKILLs it there
 * instead when that point is the one chosen, so every kill lands exactly where the plan says.
 */

/** Where an exporter can be killed, in the order one batch passes them. */
export type KillPoint =
  /** Granted, nothing written yet under this grant. */
  | 'claimed'
  /** About to send the fenced write of the next batch. */
  | 'before-write'
  /** Postgres: the batch's INSERT ran inside the fenced transaction; COMMIT not sent. */
  | 'in-write'
  /** The request that commits the write (Postgres COMMIT, Redis fenced-write script) was sent; no reply read. */
  | 'request-sent'
  /** The fenced write returned ok (with the checkpoint, or, in the two-step pattern, before it). */
  | 'after-write'
  /** Two-step pattern only: the separate checkpoint returned. */
  | 'after-checkpoint'
  /** The grant was released. */
  | 'after-release';

/** How the exporter records progress. */
export type ExportMode =
  /** `fencedWrite(lease, write, { checkpoint })`: the batch and the checkpoint in one atomic step. */
  | 'atomic'
  /** The old quick start: `fencedWrite(lease, write)`, then `checkpoint(lease, progress)`. */
  | 'two-step';

/** The exporter's configuration (JSON in `EXACTLY_ONCE_WORKER`). */
export interface ExporterSetup {
  readonly store: 'postgres' | 'redis';
  readonly url: string;
  readonly proc: string;
  readonly key: string;
  /** Postgres: the lease table and the table batches land in; Redis: the hash batches are counted in. */
  readonly leaseTable: string;
  readonly target: string;
  readonly batches: number;
  /** Batches exported per grant before releasing and claiming again (so releases happen mid-run). */
  readonly perGrant: number;
  readonly ttlMs: number;
  readonly mode: ExportMode;
}

/** The checkpoint: the next batch to export. */
export interface ExportProgress {
  readonly next: number;
}

export type ExporterMessage =
  | { readonly type: 'point'; readonly point: KillPoint; readonly batch: number; readonly token: string }
  | { readonly type: 'done'; readonly token: string };

export type HarnessReply = { readonly type: 'go' };
