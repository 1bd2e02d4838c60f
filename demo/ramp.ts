/**
 * Ramp runners (`withLease`): send `ramp:current` in waves, like the seeds' broadcast ramp. `withLease`
 * renews in the background and aborts its signal as soon as a renewal is refused. The operator revokes
 * the ramp mid-run and requires recovery: plain claims are refused until a runner claims with
 * `recovering: true` and resumes (or discards) the displaced run's checkpoint.
 */
import type { FenceRefusal, Lease, Leases } from '../src/index.js';
import type { MemoryStore } from '../src/adapters/memory/index.js';
import { refusalLine } from './summary.js';
import { adopt, granted, HORIZON, leasesFor, saveCheckpoint, writeLedger, type Fleet } from './workers.js';

export const RAMP_KEY = 'ramp:current';
export const RAMP_WAVES = 5;
const RAMP_TTL = 30_000;

interface RampCheckpoint {
  readonly wave: number;
  readonly phase: 'exported' | 'sent';
}

/** Ramp runner: `withLease` renews in the background and aborts the signal when the lease is lost. */
export async function rampRunner(fleet: Fleet, holder: string): Promise<void> {
  const { sim, tally, recording } = fleet;
  const leases = leasesFor(fleet, holder, RAMP_TTL);
  let recovering = false;
  while (fleet.jobs.sentWaves < RAMP_WAVES && sim.elapsed() < HORIZON) {
    const outcome = await leases.withLease(RAMP_KEY, (lease, signal) => sendWaves(fleet, leases, lease, signal), {
      runId: fleet.nextRunId(),
      recovering,
      timers: sim.timers,
    });
    if ((outcome.ok || outcome.reason === 'stopped') && outcome.released && outcome.lease !== null) recording.released(outcome.lease);
    if (outcome.ok || outcome.reason === 'stopped') {
      recovering = false;
    } else if (outcome.reason === 'lost') {
      recovering = false;
      tally.aborted(holder, outcome.lost);
      const refusal = 'refusal' in outcome.lost ? (outcome.lost.refusal as FenceRefusal) : null;
      if (refusal !== null) recording.refusedOperation(holder, 'withLease renew', refusal.reason, refusalLine(refusal));
    } else {
      tally.claimRefused(outcome, holder);
      // NOTE: a revoke with requireRecovery refuses plain claims until someone promises to look at the
      // displaced run's checkpoint. Here the on-call approves, and the runner claims with `recovering: true`.
      if (outcome.reason === 'recovery-required') recovering = true;
    }
    await sim.sleep(sim.random.int(3_000, 8_000));
  }
}

async function sendWaves(fleet: Fleet, leases: Leases<MemoryStore>, lease: Lease, signal: AbortSignal): Promise<void> {
  const { sim, tally } = fleet;
  granted(fleet, lease);
  let wave = 1;
  let exported = false;
  if (lease.inherited !== null) {
    const saved = lease.inherited.value as RampCheckpoint;
    const resumeAt = saved.phase === 'sent' ? saved.wave + 1 : saved.wave;
    const what = saved.phase === 'exported' ? `wave ${saved.wave} was exported but not sent: send it` : `continue at wave ${resumeAt}`;
    if (await adopt(fleet, leases, lease, 'resume', what)) [wave, exported] = [resumeAt, saved.phase === 'exported'];
  }
  for (; wave <= RAMP_WAVES; wave++, exported = false) {
    if (!exported) {
      await sim.sleep(sim.random.int(2_000, 4_000)); // assign the wave's segment and export it
      if (signal.aborted) return;
      // The seeds' `_recordPendingExport`: progress a recovering run can pick up.
      if (!(await saveCheckpoint(fleet, leases, lease, { wave, phase: 'exported' }))) return;
    }
    await sim.sleep(sim.random.int(4_000, 9_000)); // create the broadcast: a slow external call
    if (signal.aborted) return;
    // The seeds' `_recordWaveSent`, fenced: it lands only while this grant is current.
    // NOTE: with its checkpoint in the same step, so a crash cannot leave the wave recorded and unmarked.
    if (!(await writeLedger(fleet, leases, lease, `wave ${wave} sent`, { checkpoint: { wave, phase: 'sent' } }))) return;
    fleet.jobs.sentWaves = Math.max(fleet.jobs.sentWaves, wave);
  }
  tally.log(`${lease.holder} finished ${lease.key} (${RAMP_WAVES} waves) under token ${lease.token}`);
}

/** The operator: once the ramp is mid-run, revokes it and requires recovery of its checkpoint. */
export async function operator(fleet: Fleet, who: string): Promise<void> {
  const { sim, tally } = fleet;
  const leases = leasesFor(fleet, who, null);
  await sim.sleep(sim.random.int(20_000, 40_000));
  while (fleet.jobs.sentWaves < RAMP_WAVES) {
    const seen = await leases.inspect(RAMP_KEY);
    if (seen.grant?.live === true && seen.checkpoint !== null) {
      const reason = `ramp looks stuck at wave ${(seen.checkpoint.value as RampCheckpoint).wave}`;
      const outcome = await leases.revoke(RAMP_KEY, { reason, by: who, requireRecovery: true, expectedToken: seen.grant.token });
      if (outcome.ok) {
        fleet.recording.revoked(who, RAMP_KEY, outcome.revoked.token, reason);
        tally.log(
          `OPERATOR ${who} revoked ${RAMP_KEY} token ${outcome.revoked.token} (${outcome.revoked.holder}): "${reason}", recovery required`,
        );
        return;
      }
    }
    await sim.sleep(2_000);
  }
}
