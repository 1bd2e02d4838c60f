/**
 * What every worker of the demo fleet shares: the fleet it lives in, and small wrappers around the lease
 * API that record what happened (accepted or refused, and why) for the summary and the final check.
 * The workers themselves: exporter.ts (plain API), ramp.ts (`withLease`, and the operator who revokes),
 * classifier.ts (plain API with bound attributes).
 */
import { createLeases, type FenceRefusal, type Lease, type LeaseAttributes, type Leases, type TokenGate } from '../src/index.js';
import type { MemoryGateContext, MemoryStore } from '../src/adapters/memory/index.js';
import type { Journal, ProtectedData, WriteAttempt } from './ledger.js';
import type { Recording } from './recording.js';
import type { Simulation } from './sim.js';
import { refusalLine, type Tally } from './summary.js';

/** Everything a worker can reach. */
export interface Fleet {
  readonly sim: Simulation;
  readonly store: MemoryStore;
  readonly gate: TokenGate<MemoryGateContext>;
  readonly data: ProtectedData;
  readonly journal: Journal;
  readonly tally: Tally;
  /** The events the timeline picture draws. */
  readonly recording: Recording;
  /** The straw man: writes land even when refused, as with a lock that has no fence (shows the check has teeth). */
  readonly unfenced: boolean;
  /** Application state the workers coordinate on (not lease state). */
  readonly jobs: { exportedBatches: number; sentWaves: number; readonly decided: Set<string> };
  nextRunId(): string;
}

/** Stop polling after an hour of simulated time, whatever happened. */
export const HORIZON = 60 * 60_000;

/** The lease API for one worker of the fleet. */
export const leasesFor = (fleet: Fleet, holder: string, ttlMs: number | null): Leases<MemoryStore> =>
  // NOTE: the monotonic clock is the simulation's too, so withLease schedules renewals in simulated time.
  createLeases(fleet.store, { holder, ttlMs, monotonicClock: fleet.sim.clock });

/** What a ledger write may carry: bound attributes to match, and the progress saved in the same step. */
export interface LedgerWriteOptions {
  readonly attributes?: LeaseAttributes;
  /** The holder's progress after this write: saved atomically with it (the exactly-once pattern). */
  readonly checkpoint?: unknown;
}

/** Counts and records a new grant. */
export function granted(fleet: Fleet, lease: Lease): void {
  fleet.tally.granted(lease);
  fleet.recording.granted(lease);
}

/** Appends one row to the lease key's ledger, under the lease's fence (with its checkpoint, in one step). */
export async function writeLedger(
  fleet: Fleet,
  leases: Leases<MemoryStore>,
  lease: Lease,
  what: string,
  options: LedgerWriteOptions = {},
): Promise<boolean> {
  const attempt = fleet.journal.propose({
    target: lease.key,
    via: 'fenced write',
    token: lease.token,
    holder: lease.holder,
    runId: lease.runId,
    what,
    atMs: fleet.sim.elapsed(),
  });
  const outcome = await leases.fencedWrite(lease, () => fleet.data.append(attempt), options);
  attempt.verdict = outcome.ok ? 'accepted' : outcome.reason;
  if (outcome.ok) {
    if (options.checkpoint !== undefined) fleet.recording.checkpoint(lease, options.checkpoint);
    return true;
  }
  // NOTE: the demo's writes carry no submission and never refuse themselves: only the fence refuses them.
  const refusal = outcome as FenceRefusal;
  attempt.detail = refusalLine(refusal);
  fleet.tally.refused('fenced write', refusal, lease.holder);
  return writeAnyway(fleet, attempt);
}

/** The straw man (`--unfenced`): a lock without a fence lets the write land anyway. Returns whether it did. */
function writeAnyway(fleet: Fleet, attempt: WriteAttempt): boolean {
  if (fleet.unfenced) fleet.data.append(attempt);
  return fleet.unfenced;
}

/** Writes a resource that lives outside the lease store, through the token gate. */
export async function writeThroughGate(
  fleet: Fleet,
  leases: Leases<MemoryStore>,
  lease: Lease,
  resource: string,
  what: string,
): Promise<boolean> {
  const attempt = fleet.journal.propose({
    target: resource,
    via: 'token gate',
    token: lease.token,
    holder: lease.holder,
    runId: lease.runId,
    what,
    atMs: fleet.sim.elapsed(),
  });
  const outcome = await leases.gateWrite(fleet.gate, resource, lease, () => fleet.data.append(attempt));
  attempt.verdict = outcome.ok ? 'accepted' : outcome.reason;
  if (outcome.ok) return true;
  attempt.detail = refusalLine(outcome);
  fleet.tally.refused('token gate', outcome, lease.holder);
  return writeAnyway(fleet, attempt);
}

/** Saves the holder's progress under the fence. */
export async function saveCheckpoint(fleet: Fleet, leases: Leases<MemoryStore>, lease: Lease, progress: unknown): Promise<boolean> {
  const outcome = await leases.checkpoint(lease, progress);
  if (outcome.ok) fleet.recording.checkpoint(lease, progress);
  else refusedOperation(fleet, 'checkpoint', outcome, lease.holder);
  return outcome.ok;
}

/** Extends the grant by its TTL, from the store's now. */
export async function renew(fleet: Fleet, leases: Leases<MemoryStore>, lease: Lease): Promise<boolean> {
  const outcome = await leases.renew(lease);
  if (!outcome.ok) refusedOperation(fleet, 'renew', outcome, lease.holder);
  return outcome.ok;
}

/** Releases at the end of a run; after a loss this is refused, and that is fine: a stale grant ends nothing. */
export async function release(fleet: Fleet, leases: Leases<MemoryStore>, lease: Lease): Promise<void> {
  const outcome = await leases.release(lease);
  // NOTE: a refused release is counted but not drawn: it follows the refused write that ended the run.
  if (outcome.ok) fleet.recording.released(lease);
  else fleet.tally.refused('release', outcome, lease.holder);
}

/** Resolves an inherited checkpoint: resume it under the new grant, or discard it. Returns whether it resumed. */
export async function adopt(
  fleet: Fleet,
  leases: Leases<MemoryStore>,
  lease: Lease,
  action: 'resume' | 'discard',
  what: string,
): Promise<boolean> {
  const outcome = await leases.recover(lease, action);
  if (!outcome.ok) {
    refusedOperation(fleet, 'recover', outcome, lease.holder);
    return false;
  }
  fleet.tally.recovered(lease, action, what);
  return action === 'resume';
}

/** Counts and records a refused operation other than a write or a release. */
export function refusedOperation(fleet: Fleet, operation: string, refusal: FenceRefusal, holder: string): void {
  fleet.tally.refused(operation, refusal, holder);
  fleet.recording.refusedOperation(holder, operation, refusal.reason, refusalLine(refusal));
}

/** After a crash: the process is down for a while, then restarts (its lease is left to expire). */
export async function restartAfterCrash(fleet: Fleet, holder: string): Promise<void> {
  const downMs = fleet.sim.random.int(20_000, 40_000);
  fleet.recording.idle(holder, 'crash', downMs, `down ${(downMs / 1000).toFixed(1)} s, then the process restarts`);
  await fleet.sim.sleep(downMs);
}

/** A pause the worker does not notice (GC, swap, a slow call): Kleppmann's pause, past the lease's expiry. */
export async function pausePastExpiry(fleet: Fleet, lease: Lease, during: string): Promise<void> {
  const overshoot = fleet.sim.random.int(200, 10_000);
  const pause = (lease.expiresAt ?? fleet.sim.clock()) - fleet.sim.clock() + overshoot;
  const line = `${lease.holder} (token ${lease.token} on ${lease.key}) paused ${(pause / 1000).toFixed(1)} s during ${during}, waking ${(overshoot / 1000).toFixed(1)} s after its lease expired`;
  fleet.tally.fault('pause', line);
  fleet.recording.idle(lease.holder, 'pause', pause, line);
  await fleet.sim.sleep(pause);
}
