// A broadcast ramp, an operator's abort, a recovery run, a tier moved underneath a run and a ramp deleted mid-run:
// `node examples/ramp-runner/main.mjs [--discard]` with LEASEFENCE_REDIS_URL set (or `npm run example --
// ramp-runner [--discard]` from a clone, which starts a throwaway redis-server).
//
// The ramp's owner approves tiers (key state `tier` on the ramp's lease key); each run claims expecting the
// approved tier and advances up to it. Run r1 sends w1 and w2 (tier 5). The owner approves 100; run r2 exports
// w3, then an operator revokes the lease with a reason and requires a recovery: r2's send is refused with that
// reason, and a cron run (r3) may not start. The recovery run (r4, a short grant) inherits w3's export and
// resumes it (default) or, with --discard, exports w3 again; its check before sending finds too little TTL and
// renews; r2's late retry is refused (a newer run holds the ramp). While r4 sends w4 the owner moves the tier
// back to 25: the commit says the tier moved. Run r5 resumes w4 after a new approval, and an operator deletes the
// ramp mid-run: r5 is told `missing`. Every wave is sent at most once.
import { Redis } from 'ioredis';
import { createLeases, createOperator, describeRefusal } from 'leasefence';
import { createRedisStore } from 'leasefence/redis';
import { advanceRamp, OUTBOX_KEY, PREFIX, RAMP_KEY, sendWave, TIER_KEY, WAVES } from './ramp.mjs';

const url = process.env.LEASEFENCE_REDIS_URL;
if (url === undefined || url === '') {
  console.error('Set LEASEFENCE_REDIS_URL to a Redis (5 or newer) this example may write keys to, e.g.');
  console.error('  docker run --rm -p 6379:6379 redis:7');
  console.error('  LEASEFENCE_REDIS_URL=redis://127.0.0.1:6379 node examples/ramp-runner/main.mjs');
  console.error('or, from a clone of leasefence, run `npm run example -- ramp-runner` (it starts a throwaway server).');
  process.exit(1);
}
const recovery = process.argv.includes('--discard') ? 'discard' : 'resume';

/** @typedef {import('./ramp.mjs').RampLeases} RampLeases */
/** @typedef {import('./ramp.mjs').RampCheckpoint} RampCheckpoint */

const redis = new Redis(url);
try {
  // NOTE: the example starts from nothing on every run: it deletes its own keys (and no others).
  for await (const keys of redis.scanStream({ match: `${PREFIX}*`, count: 100 })) if (keys.length > 0) await redis.del(...keys);

  const store = createRedisStore({ client: redis, prefix: PREFIX });
  const runner = (/** @type {string} */ holder, ttlMs = 30_000) => createLeases(store, { holder, ttlMs });
  const operator = createOperator(store, { by: 'ops:alice' });
  const owner = createOperator(store, { by: 'owner:bob' });

  /**
   * Approves the ramp up to `tier` percent: key state, set by the ramp's owner, who holds no lease.
   * @param {string} tier
   * @param {string} why
   */
  const approve = async (tier, why) => {
    const set = await owner.setKeyState(RAMP_KEY, { tier });
    const fenced = set.ended === null ? '' : `; ${set.ended.holder}'s grant ended (${set.ended.kind})`;
    console.log(`owner:bob: tier ${tier} approved (${why})${fenced}`);
  };

  /**
   * Claims the ramp for a run, expecting the tier approved now: a run is bound to the tier it was planned for.
   * @param {RampLeases} leases
   * @param {string} runId
   * @param {boolean} [recovering]
   */
  const claimRun = async (leases, runId, recovering = false) => {
    const tier = (await operator.inspect(RAMP_KEY)).state['tier'] ?? null;
    const claimed = await leases.claim(RAMP_KEY, { runId, expect: { tier }, recovering });
    if (!claimed.ok) {
      console.log(`${leases.holder}: run ${runId} not started: ${describeRefusal(claimed)}`);
      return null;
    }
    console.log(`${leases.holder}: claimed ${RAMP_KEY} for run ${runId} at approved tier ${tier}`);
    return { ...claimed, approved: Number(tier) };
  };

  // 1. Run r1 takes the ramp to the approved 5%.
  await approve('5', 'first waves');
  const runner1 = runner('runner-1');
  const r1 = await claimRun(runner1, 'r1');
  if (r1 !== null && (await advanceRamp(runner1, r1.lease, redis, { approved: r1.approved }))) await runner1.release(r1.lease);

  // 2. Run r2, at 100%: the operator aborts it after w3's export and requires a recovery.
  await approve('100', 'complaint rate normal');
  const r2 = await claimRun(runner1, 'r2');
  if (r2 === null) throw new Error('run r2 could not claim the ramp');
  await advanceRamp(runner1, r2.lease, redis, {
    approved: r2.approved,
    afterExport: async (pending) => {
      if (pending.wave !== 'w3') return;
      const revoked = await operator.revoke(RAMP_KEY, { reason: 'abort ramp: complaint rate 3x baseline after w2', requireRecovery: true });
      console.log(`ops:alice: revoked ${RAMP_KEY} (${revoked.ok ? 'done' : revoked.reason}); a recovery run must decide on the checkpoint`);
    },
  });
  console.log('runner-1: run r2 stopped');

  // 3. The next scheduled run may not start: the operator asked for a recovery.
  await claimRun(runner('runner-2'), 'r3');

  // 4. The recovery run (a short grant) inherits the checkpoint, resumes or discards it and goes on; the owner
  // moves the tier back while it sends w4.
  const runner3 = runner('runner-3', 8_000);
  const r4 = await claimRun(runner3, 'r4', true);
  if (r4 === null) throw new Error('the recovery run could not claim the ramp');
  const { previous, checkpoint } = r4;
  const inherited = /** @type {RampCheckpoint | undefined} */ (checkpoint?.value)?.pending ?? null;
  console.log(`runner-3: the previous grant (run ${previous?.runId}) was ${previous?.kind} by ${previous?.by}: ${previous?.reason}`);
  console.log(
    `runner-3: inherited checkpoint: ${inherited === null ? 'none' : `${inherited.wave} exported to ${inherited.segmentId}`}; decision: ${recovery}`,
  );
  const recovered = await runner3.recover(r4.lease, recovery);
  if (!recovered.ok) throw new Error(`recover refused: ${recovered.reason}`);
  let retried = false;
  await advanceRamp(runner3, r4.lease, redis, {
    approved: r4.approved,
    pending: recovery === 'resume' ? inherited : null,
    afterExport: async (pending) => {
      // Meanwhile runner-1 retries its send of w3 with run r2's lease (a runtime retry): refused again.
      if (retried) return;
      retried = true;
      console.log('runner-1: retrying its send of w3 (run r2)');
      await sendWave(runner1, r2.lease, { ...pending, segmentId: 'seg-w3-r2' });
    },
    beforeCommit: async (pending) => {
      if (pending.wave === 'w4') await approve('25', 'complaints from the 25% cohort');
    },
  });
  console.log('runner-3: run r4 stopped');

  // 5. A new approval; run r5 resumes w4's export, and an operator deletes the ramp mid-run.
  await approve('100', 'complaints explained');
  const r5 = await claimRun(runner1, 'r5');
  if (r5 === null) throw new Error('run r5 could not claim the ramp');
  await advanceRamp(runner1, r5.lease, redis, {
    approved: r5.approved,
    pending: /** @type {RampCheckpoint | undefined} */ (r5.checkpoint?.value)?.pending ?? null,
    afterExport: async () => {
      const removed = await operator.remove(RAMP_KEY, { force: true });
      console.log(`ops:alice: deleted the ramp ${RAMP_KEY} (${removed.ok ? 'removed' : removed.reason})`);
    },
  });
  console.log('runner-1: run r5 stopped');

  const outbox = await redis.lrange(OUTBOX_KEY, 0, -1);
  for (const line of outbox) console.log(`outbox: ${line}`);
  const once = WAVES.every((wave) => outbox.filter((line) => line.startsWith(`${wave.label} `)).length <= 1);
  const left = await operator.inspect(RAMP_KEY);
  console.log(
    `tier reached ${await redis.get(TIER_KEY)}%; ramp record exists: ${left.exists}; every wave sent at most once: ${once ? 'yes' : 'NO'}`,
  );
  if (!once) process.exitCode = 1;
} finally {
  redis.disconnect();
}
