/**
 * `npm run bench`, PostgreSQL: the peers leasefence's claim + release races in the same slices, each as its
 * package does it, with what it does not guarantee:
 * - session advisory locks (`pg_try_advisory_lock` + `pg_advisory_unlock` of the key's `hashtext`, as the
 *   `advisory-lock` and `@databases/lock` packages take them): each worker keeps one connection of the pool,
 *   because the lock belongs to the session that took it. No token (nothing to fence a write with), no
 *   record (no holder, no expiry: held until unlock or the session ends), nothing written (so no WAL flush),
 *   and it breaks under pgbouncer's transaction pooling (lock and unlock may reach different sessions).
 * - pg-boss 10 (the last major that runs on Node 20; 11 needs Node 22) singleton jobs: a queue of policy
 *   `short` admits one queued job per `singletonKey` (a partial unique index), so `send` is the acquire
 *   (null: taken) and `deleteJob` the release; its statements are sent unprepared, as pg-boss sends them. No
 *   token, no fencing, no expiry of a queued job but its retention (14 days by default: a crashed holder's
 *   key stays taken until maintenance deletes the job).
 */
import PgBoss from 'pg-boss';
import type { Contender, Group } from './slices.js';
import { backendCpuUs, leasefenceCycle, nextApplication, pooled, rawCycle, type PostgresTarget } from './postgres-groups.js';

/** Advisory lock + unlock of the worker's key, on the worker's own connection of the contender's pool. */
export function advisoryLockCycle(target: PostgresTarget, name: string, baseline: string, workers: number): Contender {
  return pooled(target, name, baseline, workers, async (pool, worker) => {
    const connection = await pool.connect();
    // NOTE: released when the group's pools close: the pool's `end` waits for every connection checked out.
    target.closers.push(async () => connection.release());
    const key = `advisory:${workers}:${worker}`;
    return async () => {
      const { rows } = await connection.query<{ locked: boolean }>({
        name: 'advisory-lock',
        text: 'SELECT pg_catalog.pg_try_advisory_lock(pg_catalog.hashtext($1::text)) AS locked',
        values: [key],
      });
      if (rows[0]?.locked !== true) throw new Error('advisory: not locked');
      await connection.query({
        name: 'advisory-unlock',
        text: 'SELECT pg_catalog.pg_advisory_unlock(pg_catalog.hashtext($1::text))',
        values: [key],
      });
    };
  });
}

const BOSS_QUEUE = 'bench-lease';

/** pg-boss `send` of a singleton job (the acquire) and `deleteJob` (the release), on pg-boss's own pool. */
export function pgBossCycle(target: PostgresTarget, name: string, baseline: string, workers: number): Contender {
  const application = nextApplication();
  let boss: Promise<PgBoss> | undefined;
  const start = async (): Promise<PgBoss> => {
    const started = new PgBoss({
      connectionString: target.url,
      max: workers,
      application_name: application,
      // NOTE: no maintenance or cron timers in a benchmark slice: only the two statements a cycle sends.
      supervise: false,
      schedule: false,
    });
    started.on('error', () => undefined);
    await started.start();
    if ((await started.getQueue(BOSS_QUEUE)) === null) await started.createQueue(BOSS_QUEUE, { name: BOSS_QUEUE, policy: 'short' });
    target.closers.push(() => started.stop({ graceful: false, wait: true, close: true }));
    return started;
  };
  return {
    name,
    baseline,
    prepare: async (worker) => {
      boss ??= start();
      const own = await boss;
      const key = `boss:${workers}:${worker}`;
      return async () => {
        const id = await own.send(BOSS_QUEUE, {}, { singletonKey: key });
        if (id === null) throw new Error('pg-boss: key taken');
        await own.deleteJob(BOSS_QUEUE, id);
      };
    },
    serverCpuUs: () => backendCpuUs(target.admin, application),
  };
}

/**
 * The peers' group at `workers` clients (this file's peers): the raw baseline, leasefence durable and with
 * `leaseCommit: 'fast'`, raw with synchronous_commit off (what fast commits give SQL that does no more),
 * session advisory locks and pg-boss singleton jobs.
 */
export function postgresPeersGroup(target: PostgresTarget, workers: number, title: string): Group {
  const raw = 'raw single-statement claim/release (pg Pool)';
  return {
    title,
    workers,
    contenders: [
      rawCycle(target, raw, workers),
      leasefenceCycle(target, 'leasefence claim + release (pg Pool)', raw, workers, true),
      leasefenceCycle(target, "leasefence, leaseCommit: 'fast' (pg Pool)", raw, workers, true, 'fast'),
      rawCycle(target, 'raw, synchronous_commit off (pg Pool)', workers, raw, false, '-c synchronous_commit=off'),
      advisoryLockCycle(target, 'advisory lock + unlock, session (pg Pool)', raw, workers),
      pgBossCycle(target, "pg-boss 10 singleton job: send + deleteJob (policy 'short')", raw, workers),
    ],
  };
}
