/**
 * What the timeline picture needs that the tally's counters and text lines do not keep: every grant with
 * its handle (whose `expiresAt` follows its renewals), pauses and crashes as spans, checkpoints, refused
 * renews and checkpoints, and revokes, stamped on the store's clock. `timelineOf` turns it, with the
 * journal of writes, into the renderer's data. Recording prints nothing: the demo's output is unchanged.
 */
import type { Lease } from '../src/index.js';
import type { Journal } from './ledger.js';
import type {
  GrantEnding,
  Timeline,
  TimelineCheckpoint,
  TimelineGrant,
  TimelineRefusedOperation,
  TimelineRevoke,
  TimelineShade,
} from './timeline-svg.js';

/** A grant as it was handed out; how it ended is worked out once the run is over. */
interface GrantSeen {
  readonly lease: Lease;
  readonly fromMs: number;
}

/** The fleet's events for the picture, in ms since the run started. */
export class Recording {
  readonly grants: GrantSeen[] = [];
  /** When a holder released a grant, by its handle. */
  readonly releases = new Map<Lease, number>();
  readonly shades: TimelineShade[] = [];
  readonly checkpoints: TimelineCheckpoint[] = [];
  readonly refusedOperations: TimelineRefusedOperation[] = [];
  readonly revokes: TimelineRevoke[] = [];

  /** `startMs`: the run's start on the store's clock (epoch ms); `elapsed`: ms since then. */
  constructor(
    private readonly startMs: number,
    private readonly elapsed: () => number,
  ) {}

  granted(lease: Lease): void {
    this.grants.push({ lease, fromMs: (lease.acquiredAt ?? this.startMs + this.elapsed()) - this.startMs });
  }

  released(lease: Lease): void {
    this.releases.set(lease, this.elapsed());
  }

  /** A span from now on when `lane` does nothing: a pause it does not notice, or a crash and restart. */
  idle(lane: string, kind: 'pause' | 'crash', durationMs: number, note: string): void {
    const fromMs = this.elapsed();
    this.shades.push({ lane, kind, fromMs, toMs: fromMs + durationMs, note });
  }

  checkpoint(lease: Lease, progress: unknown): void {
    this.checkpoints.push({ lane: lease.holder, key: lease.key, token: lease.token, atMs: this.elapsed(), note: JSON.stringify(progress) });
  }

  refusedOperation(lane: string, operation: string, reason: string, detail: string): void {
    this.refusedOperations.push({ lane, operation, reason, atMs: this.elapsed(), detail });
  }

  revoked(lane: string, key: string, token: bigint, reason: string): void {
    this.revokes.push({ lane, key, token, atMs: this.elapsed(), reason });
  }

  /**
   * Each grant with its end: how the next grant of its key says it ended, else its release, else its
   * last expiry (a crashed holder's grant runs out), else still open at `endMs`.
   */
  grantsUntil(endMs: number): TimelineGrant[] {
    return this.grants.map(({ lease, fromMs }) => {
      const next = this.grants.find(({ lease: later }) => later.key === lease.key && later.previous?.token === lease.token);
      const released = this.releases.get(lease);
      let [toMs, ending]: [number, GrantEnding] = [endMs, 'open'];
      if (next?.lease.previous != null) [toMs, ending] = [next.lease.previous.at - this.startMs, next.lease.previous.kind];
      else if (released !== undefined) [toMs, ending] = [released, 'released'];
      else if (lease.expiresAt !== null) [toMs, ending] = [lease.expiresAt - this.startMs, 'expired'];
      return { lane: lease.holder, key: lease.key, token: lease.token, fromMs, toMs, ending };
    });
  }
}

/** The run's facts the picture names besides the recording. */
export interface TimelineRun {
  readonly seed: number;
  /** Top to bottom: the workers, then the operator. */
  readonly lanes: readonly string[];
  readonly durationMs: number;
}

/** The renderer's data for a finished run. */
export function timelineOf(recording: Recording, journal: Journal, run: TimelineRun): Timeline {
  const grants = recording.grantsUntil(run.durationMs);
  const attempts = journal.attempts;
  const refused = attempts.filter((attempt) => attempt.verdict !== 'accepted').length;
  return {
    title: `leasefence demo, seed ${run.seed}: ${attempts.length} writes attempted, ${attempts.length - refused} accepted, ${refused} stale writes refused`,
    subtitle:
      'A lane per worker; bars are grants, labelled with their fencing token. A write under a grant that has ended is refused (red). Open the SVG itself to hover a mark for details.',
    durationMs: Math.max(run.durationMs, ...grants.map((grant) => grant.toMs)),
    lanes: run.lanes,
    keys: [...new Set(grants.map((grant) => grant.key))].sort(),
    grants,
    shades: recording.shades,
    checkpoints: recording.checkpoints,
    writes: attempts.map((attempt) => ({
      lane: attempt.holder,
      target: attempt.target,
      via: attempt.via,
      token: attempt.token,
      atMs: attempt.atMs,
      what: attempt.what,
      refusal: attempt.verdict === 'accepted' ? null : { reason: attempt.verdict ?? 'unsettled', detail: attempt.detail ?? '' },
    })),
    refusedOperations: recording.refusedOperations,
    revokes: recording.revokes,
  };
}
