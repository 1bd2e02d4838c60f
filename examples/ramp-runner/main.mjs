// A broadcast ramp, an operator's abort and a recovery run: `node examples/ramp-runner/main.mjs [--discard]`
// with LEASEFENCE_REDIS_URL set (or `npm run example -- ramp-runner [--discard]` from a clone, which starts a
// throwaway redis-server).
//
// runner-1 (run r1) sends waves w1 and w2 and exports w3's segment; then an operator revokes the lease with
// a reason, and runner-1's next write is refused with that reason. A cron run (r2) is refused too: the
// revoke requires a recovery. The recovery run (r3) inherits the checkpoint (w3's exported segment) and
// resumes it (default) or, with --discard, discards it and exports w3 again; then it finishes the ramp.
// runner-1, retrying late, is refused again: a newer run holds the ramp. Every wave is sent exactly once.
import { Redis } from 'ioredis';
import { createLeases, createOperator } from 'leasefence';
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

const redis = new Redis(url);
try {
  // NOTE: the example starts from nothing on every run: it deletes its own keys (and no others).
  for await (const keys of redis.scanStream({ match: `${PREFIX}*`, count: 100 })) if (keys.length > 0) await redis.del(...keys);

  const store = createRedisStore({ client: redis, prefix: PREFIX });
  const runner = (/** @type {string} */ holder) => createLeases(store, { holder, ttlMs: 30_000 });
  const operator = createOperator(store, { by: 'ops:alice' });

  // 1. runner-1 starts the ramp; the operator aborts it after w3's export.
  const runner1 = runner('runner-1');
  const first = await runner1.claimOrThrow(RAMP_KEY, { runId: 'r1' });
  console.log(`runner-1: claimed ${RAMP_KEY} for run r1`);
  await advanceRamp(runner1, first, redis, {
    afterExport: async (pending) => {
      if (pending.wave !== 'w3') return;
      const revoked = await operator.revoke(RAMP_KEY, { reason: 'abort ramp: complaint rate 3x baseline after w2', requireRecovery: true });
      console.log(`ops:alice: revoked ${RAMP_KEY} (${revoked.ok ? 'done' : revoked.reason}); a recovery run must decide on the checkpoint`);
    },
  });
  console.log('runner-1: run r1 stopped');

  // 2. The next scheduled run may not start: the operator asked for a recovery.
  const cron = await runner('runner-2').claim(RAMP_KEY, { runId: 'r2' });
  if (!cron.ok && cron.reason === 'recovery-required')
    console.log(
      `runner-2: run r2 not started: recovery-required (the grant was ${cron.previous?.kind} by ${cron.previous?.by}; only a recovering claim may take it)`,
    );
  else if (!cron.ok) console.log(`runner-2: run r2 not started: ${cron.reason}`);

  // 3. The recovery run inherits the checkpoint, resumes or discards it, and finishes the ramp.
  const runner3 = runner('runner-3');
  const claimed = await runner3.claim(RAMP_KEY, { runId: 'r3', recovering: true });
  if (!claimed.ok) throw new Error(`the recovery run could not claim ${RAMP_KEY}: ${claimed.reason}`);
  const { lease, previous, checkpoint } = claimed;
  const inherited = /** @type {import('./ramp.mjs').RampCheckpoint | undefined} */ (checkpoint?.value)?.pending ?? null;
  console.log(
    `runner-3: claimed ${RAMP_KEY} for run r3; the previous grant (run ${previous?.runId}) was ${previous?.kind} by ${previous?.by}: ${previous?.reason}`,
  );
  console.log(
    `runner-3: inherited checkpoint: ${inherited === null ? 'none' : `${inherited.wave} exported to ${inherited.segmentId}`}; decision: ${recovery}`,
  );
  const recovered = await runner3.recover(lease, recovery);
  if (!recovered.ok) throw new Error(`recover refused: ${recovered.reason}`);
  let retried = false;
  const done = await advanceRamp(runner3, lease, redis, {
    pending: recovery === 'resume' ? inherited : null,
    afterExport: async (pending) => {
      // 4. Meanwhile runner-1 retries its send of w3 with its old lease (a runtime retry): refused again.
      if (retried) return;
      retried = true;
      console.log('runner-1: retrying its send of w3 (run r1)');
      await sendWave(runner1, first, { ...pending, segmentId: 'seg-w3-r1' });
    },
  });
  if (done) await runner3.release(lease, { checkpoint: null });
  console.log(`runner-3: ramp ${done ? 'complete; released' : 'stopped'}`);

  const outbox = await redis.lrange(OUTBOX_KEY, 0, -1);
  for (const line of outbox) console.log(`outbox: ${line}`);
  const once = WAVES.every((wave) => outbox.filter((line) => line.startsWith(`${wave.label} `)).length === 1);
  console.log(`tier ${await redis.get(TIER_KEY)}%; every wave sent exactly once: ${once ? 'yes' : 'NO'}`);
  if (!once || !done) process.exitCode = 1;
} finally {
  redis.disconnect();
}
