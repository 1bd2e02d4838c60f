// The ramp runner: advances a broadcast ramp wave by wave under the lease `ramp:current`, up to the tier the
// ramp's owner approved (the key state `tier`, which the run's claim expects). Each wave is two fenced steps, as
// in the app the seeds come from: record the exported segment (a checkpoint, the app's `_recordPendingExport`),
// then, after checking that enough of the lease is left to send, enqueue the wave's broadcast and advance the
// reached tier in one fenced write that also clears the checkpoint (the app's `_recordWaveSent`). A refusal
// stops the run, with its reason.
import { describeRefusal } from 'leasefence';
import { hashTagOf } from 'leasefence/redis';

/** The lease that guards the ramp: one run advances it at a time. */
export const RAMP_KEY = 'ramp:current';
/** The example's key prefix (lease keys and its data), so it can start from nothing each run. */
export const PREFIX = 'ramp-runner-example:';
/** The ramp's data, named with the lease's hash tag so that a fenced write may touch it on Redis Cluster. */
export const TIER_KEY = `${PREFIX}${hashTagOf(RAMP_KEY)}:tier`;
export const OUTBOX_KEY = `${PREFIX}${hashTagOf(RAMP_KEY)}:outbox`;
/** Sending a wave takes a while: it starts only with at least this much of the lease left. */
export const MIN_SEND_TTL_MS = 10_000;
/** The ramp: each wave sends to a larger share of the audience. */
export const WAVES = [
  { label: 'w1', percent: 1 },
  { label: 'w2', percent: 5 },
  { label: 'w3', percent: 25 },
  { label: 'w4', percent: 100 },
];

/**
 * @typedef {{ wave: string, segmentId: string, assigned: number }} PendingExport
 * @typedef {{ pending: PendingExport | null }} RampCheckpoint
 * @typedef {import('leasefence').Leases<import('leasefence').Store<import('leasefence/redis').RedisWriteContext>>} RampLeases
 */

/**
 * Exports the segment of `wave` (here: made up) and records it under the fence.
 * @param {RampLeases} leases
 * @param {import('leasefence').Lease} lease
 * @param {{ label: string, percent: number }} wave
 * @returns {Promise<PendingExport | null>} the export, or null when the lease was lost
 */
export async function exportWave(leases, lease, wave) {
  const pending = { wave: wave.label, segmentId: `seg-${wave.label}-${lease.runId}`, assigned: wave.percent * 100 };
  const recorded = await leases.checkpoint(lease, /** @type {RampCheckpoint} */ ({ pending }));
  if (!recorded.ok) {
    console.log(`${lease.holder}: [recordPendingExport] refused, ${describeRefusal(recorded)}`);
    return null;
  }
  console.log(`${lease.holder}: ${wave.label} exported segment ${pending.segmentId} (${pending.assigned} users); checkpoint saved`);
  return pending;
}

/**
 * Enqueues the wave's broadcast and advances the tier, clearing the checkpoint, all in one fenced write.
 * @param {RampLeases} leases
 * @param {import('leasefence').Lease} lease
 * @param {PendingExport} pending
 * @param {() => Promise<void>} [beforeCommit] what happens elsewhere between the send and its commit
 * @returns {Promise<boolean>} whether the wave was sent (false: the lease was lost, nothing was written)
 */
export async function sendWave(leases, lease, pending, beforeCommit) {
  const wave = WAVES.find((candidate) => candidate.label === pending.wave);
  if (wave === undefined) throw new Error(`unknown wave ${pending.wave}`);
  if (!(await checkBeforeSend(leases, lease, wave.label))) return false;
  await beforeCommit?.();
  const sent = await leases.fencedWrite(
    lease,
    (tx) => {
      tx.call('RPUSH', OUTBOX_KEY, `${wave.label} to ${pending.segmentId} (run ${lease.runId})`);
      tx.call('SET', TIER_KEY, String(wave.percent));
    },
    { checkpoint: /** @type {RampCheckpoint} */ ({ pending: null }) },
  );
  if (!sent.ok) {
    console.log(`${lease.holder}: [recordWaveSent] refused, ${describeRefusal(sent)}`);
    return false;
  }
  console.log(`${lease.holder}: ${wave.label} sent to ${pending.segmentId}; tier is now ${wave.percent}%`);
  return true;
}

/**
 * Checks, right before the send, that the grant is current with at least `MIN_SEND_TTL_MS` left (one read on
 * the store's clock); with too little left, renews first.
 * @param {RampLeases} leases
 * @param {import('leasefence').Lease} lease
 * @param {string} label
 * @returns {Promise<boolean>} whether the send may go ahead
 */
async function checkBeforeSend(leases, lease, label) {
  const checked = await leases.check(lease, { minTtlMs: MIN_SEND_TTL_MS });
  if (checked.ok) return true;
  if (checked.reason === 'ttl-insufficient') {
    const renewed = await leases.renew(lease, { ttlMs: 30_000 });
    console.log(
      `${lease.holder}: check before sending ${label}: ttl-insufficient (at least ${MIN_SEND_TTL_MS} ms required); renewed: ${renewed.ok}`,
    );
    return renewed.ok;
  }
  console.log(`${lease.holder}: [checkBeforeSend] refused, ${describeRefusal(checked)}`);
  return false;
}

/**
 * Runs the ramp from the tier stored in Redis, starting with `pending` (an inherited export) if given.
 * @param {RampLeases} leases
 * @param {import('leasefence').Lease} lease
 * @param {import('ioredis').Redis} redis
 * @param {{
 *   approved: number,
 *   pending?: PendingExport | null,
 *   afterExport?: (pending: PendingExport) => Promise<void>,
 *   beforeCommit?: (pending: PendingExport) => Promise<void>,
 * }} options
 * @returns {Promise<boolean>} whether the ramp reached the approved tier under this lease
 */
export async function advanceRamp(leases, lease, redis, options) {
  let pending = options.pending ?? null;
  for (;;) {
    const tier = Number((await redis.get(TIER_KEY)) ?? 0);
    const wave = WAVES.find((candidate) => candidate.percent > tier);
    if (wave === undefined || wave.percent > options.approved) return true;
    if (pending === null || pending.wave !== wave.label) pending = await exportWave(leases, lease, wave);
    if (pending === null) return false;
    await options.afterExport?.(pending);
    const exported = pending;
    if (!(await sendWave(leases, lease, exported, options.beforeCommit && (() => options.beforeCommit?.(exported) ?? Promise.resolve()))))
      return false;
    pending = null;
  }
}
