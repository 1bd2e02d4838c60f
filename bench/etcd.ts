/**
 * `npm run bench`, etcd: leasefence on a throwaway single-member etcd (test/support/etcd-server.ts, fsync on
 * as etcd does by default) against a raw etcd transaction baseline and the etcd3 client's own `Lock`, in the
 * same run, one etcd3 client shared by every contender, each worker on its own key (no contention).
 * - claim + release: the raw baseline is the least the same work needs on etcd: a create-if-absent
 *   transaction (compare the key's create revision with 0, put) and a delete, two round trips, no expiry and
 *   no token; the etcd3 `Lock` (`lock(key).ttl(30).acquire()` + `release()`: an etcd lease, a transaction, a
 *   revoke) expires but gives no token; leasefence's claim is a read, a compare-and-swap transaction and the
 *   grant's etcd lease (three round trips), its release a read and a transaction (two).
 * - fenced write (one put under a lease held throughout): the raw baseline is one transaction comparing the
 *   lock key's mod revision, remembered from when it was taken, and putting the data (one round trip, the
 *   cheapest fence etcd allows); leasefence's `fencedWrite` is a read and one transaction (the record's
 *   compare and the put, two round trips); the etcd3 `Lock` held while a plain put runs is NOT fenced (a
 *   holder whose lease ran out still writes: Jepsen's etcd 3.4.3 finding), shown for its cost only.
 * Server CPU per cycle: the etcd process's user + system time (/proc/<pid>/stat, 10 ms ticks).
 */
import { readFileSync } from 'node:fs';
import type { Etcd3 } from 'etcd3';
import { thisLibrary, type Library } from './library.js';
import type { Contender, Group } from './slices.js';

const TTL_MS = 30_000;
let preparation = 0;

/** The etcd process's CPU time so far in µs (utime + stime of /proc/<pid>/stat, at 100 ticks a second). */
export function processCpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  // NOTE: after the command's ')': state is field 3, utime 14, stime 15 (1-based), so indexes 11 and 12.
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

function rawClaimRelease(client: Etcd3, name: string): Contender {
  return {
    name,
    prepare: async (worker) => {
      const key = bytes(`bench/raw/${++preparation}/${worker}`);
      const held = bytes('held');
      return async () => {
        const { succeeded } = await client.kv.txn({
          compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
          success: [{ request_put: { key, value: held } }],
        });
        if (!succeeded) throw new Error('raw: not acquired');
        await client.kv.deleteRange({ key });
      };
    },
  };
}

function etcdLock(client: Etcd3, name: string): Contender {
  return {
    name,
    prepare: async (worker) => {
      const key = `bench/lock/${++preparation}/${worker}`;
      return async () => {
        const lock = client.lock(key).ttl(TTL_MS / 1000);
        await lock.acquire();
        await lock.release();
      };
    },
  };
}

function leasefenceClaimRelease(library: Library, client: Etcd3, name: string): Contender {
  const leases = library.root.createLeases(library.etcd.createEtcdStore({ client, prefix: `bench/lf/${++preparation}/` }), {
    holder: 'bench',
    ttlMs: TTL_MS,
  });
  return { name, prepare: async (worker) => library.cycles.claimRelease(leases, `cycle:${worker}`, name) };
}

function rawFencedWrite(client: Etcd3, name: string): Contender {
  return {
    name,
    prepare: async (worker) => {
      const lock = bytes(`bench/raw-fence/${++preparation}/${worker}`);
      const data = bytes(`bench/raw-data/${preparation}/${worker}`);
      const taken = await client.kv.txn({
        compare: [{ key: lock, target: 'Create', result: 'Equal', create_revision: 0 }],
        success: [{ request_put: { key: lock, value: bytes('held') } }],
      });
      const revision = taken.header.revision;
      let n = 0;
      return async () => {
        const { succeeded } = await client.kv.txn({
          compare: [{ key: lock, target: 'Mod', result: 'Equal', mod_revision: revision }],
          success: [{ request_put: { key: data, value: bytes(String(++n)) } }],
        });
        if (!succeeded) throw new Error('raw: fence lost');
      };
    },
  };
}

/**
 * The raw fenced write that records its run once (issue 24's submissions): one txn comparing the lock key's revision
 * and that the run's key does not exist, then the run's key and the put.
 */
function rawSubmission(client: Etcd3, name: string): Contender {
  return {
    name,
    prepare: async (worker) => {
      const lock = bytes(`bench/raw-sub-fence/${++preparation}/${worker}`);
      const data = bytes(`bench/raw-sub-data/${preparation}/${worker}`);
      const runs = `bench/raw-sub-runs/${preparation}/${worker}/`;
      const taken = await client.kv.txn({
        compare: [{ key: lock, target: 'Create', result: 'Equal', create_revision: 0 }],
        success: [{ request_put: { key: lock, value: bytes('held') } }],
      });
      const revision = taken.header.revision;
      let n = 0;
      return async () => {
        const run = bytes(`${runs}r${++n}`);
        const { succeeded } = await client.kv.txn({
          compare: [
            { key: lock, target: 'Mod', result: 'Equal', mod_revision: revision },
            { key: run, target: 'Create', result: 'Equal', create_revision: 0 },
          ],
          success: [{ request_put: { key: run, value: bytes('a'.repeat(64)) } }, { request_put: { key: data, value: bytes(String(n)) } }],
        });
        if (!succeeded) throw new Error('raw: fence lost or run recorded');
      };
    },
  };
}

function leasefenceFencedWrite(library: Library, client: Etcd3, name: string, submission: 'none' | 'new' | 'replay' = 'none'): Contender {
  const leases = library.root.createLeases(library.etcd.createEtcdStore({ client, prefix: `bench/lf-write/${++preparation}/` }), {
    holder: 'bench',
    ttlMs: TTL_MS,
  });
  return {
    name,
    prepare: async (worker) => {
      const lease = await leases.claimOrThrow(`write:${worker}`);
      const data = `bench/lf-data/${preparation}/${worker}`;
      let n = 0;
      const payload = { verdict: 'ok', score: 0.93, labels: ['a', 'b'] };
      if (submission === 'replay') await leases.fencedWrite(lease, (tx) => tx.put(data, '0'), { submission: { payload, runId: 'r0' } });
      return async () => {
        const options = submission === 'none' ? undefined : { submission: { payload, runId: submission === 'new' ? `r${n + 1}` : 'r0' } };
        const written = await leases.fencedWrite(lease, (tx) => tx.put(data, String(++n)), options);
        if (written.ok === (submission === 'replay')) throw new Error(`${name}: ${written.ok ? 'applied' : written.reason}`);
      };
    },
  };
}

function lockedPut(client: Etcd3, name: string): Contender {
  return {
    name,
    prepare: async (worker) => {
      const key = `bench/locked/${++preparation}/${worker}`;
      await client
        .lock(key)
        .ttl(TTL_MS / 1000)
        .acquire();
      const data = `bench/locked-data/${preparation}/${worker}`;
      let n = 0;
      return async () => {
        await client.put(data).value(String(++n));
      };
    },
  };
}

/** The etcd groups at each concurrency in `workers`, on `client`, with etcd's CPU read from `pid`. */
export async function etcdGroups(client: Etcd3, pid: number, workers: readonly number[]): Promise<Group[]> {
  const library = await thisLibrary();
  const serverCpuUs = async (): Promise<number> => processCpuUs(pid);
  const withCpu = (contender: Contender): Contender => ({ ...contender, serverCpuUs });
  const groups: Group[] = [];
  // NOTE: BENCH_QUEUE=only: the submission groups alone (run.ts).
  const queueOnly = process.env['BENCH_QUEUE'] === 'only';
  for (const count of workers) {
    if (!queueOnly)
      groups.push({
        title: `etcd claim + release, ${count} worker${count === 1 ? '' : 's'}`,
        workers: count,
        contenders: [
          rawClaimRelease(client, 'raw etcd: create-if-absent txn + delete (no expiry, no token)'),
          leasefenceClaimRelease(library, client, 'leasefence claim + release'),
          etcdLock(client, 'etcd3 Lock acquire + release (no token)'),
          rawClaimRelease(client, 'raw etcd (control)'),
        ].map(withCpu),
      });
    if (!queueOnly)
      groups.push({
        title: `etcd fenced write (one put), ${count} worker${count === 1 ? '' : 's'}`,
        workers: count,
        contenders: [
          rawFencedWrite(client, 'raw etcd: compare-revision-and-put txn'),
          leasefenceFencedWrite(library, client, 'leasefence fenced write'),
          lockedPut(client, 'etcd3 Lock held + put (NOT fenced)'),
          rawFencedWrite(client, 'raw etcd (control)'),
        ].map(withCpu),
      });
    // NOTE: issue 24's submissions: the same write recording a run once (BENCH_QUEUE=0 leaves it out).
    if (process.env['BENCH_QUEUE'] !== '0')
      groups.push({
        title: `etcd fenced write (one put) with a submission, ${count} worker${count === 1 ? '' : 's'}`,
        workers: count,
        contenders: [
          rawSubmission(client, 'raw etcd: compare-revision + run-absent txn, run put + put'),
          rawSubmission(client, 'raw etcd (control)'),
          leasefenceFencedWrite(library, client, 'leasefence fenced write, no submission'),
          leasefenceFencedWrite(library, client, 'leasefence fenced write + submission (a new run each time)', 'new'),
          leasefenceFencedWrite(library, client, 'leasefence fenced write + submission replayed', 'replay'),
        ].map(withCpu),
      });
  }
  return groups;
}
