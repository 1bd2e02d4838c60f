/**
 * Measures unforced failovers: workers claim a key, append their token to its ledger under the fence and
 * release it, round after round, while the key's master is killed (SIGKILL) mid-run; the topology promotes
 * a replica (nothing is held back: the replica loses only what had not reached it yet). Per failover:
 * grants and acknowledged writes the promoted replica never saw, time from the kill to the first grant
 * claimed after it, and violations (a ledger token not above the one before it, a grant after the kill not
 * above every grant acknowledged before it, a write acknowledged after the kill missing from the ledger).
 */
import { createLeases } from '../../src/leases.js';
import { createRedisStore, hashTagOf, type RedisClient } from '../../src/adapters/redis/index.js';
import { toConnection } from '../../src/adapters/redis/connection.js';

/** How to drive one topology through repeated failovers. */
export interface MeasureRig {
  openClient(): Promise<{ client: RedisClient; close: () => Promise<void> }>;
  /** Kills (SIGKILL) the master serving `key` (the record key); resolves once it has exited. */
  killMaster(key: string): Promise<void>;
  /** Restarts the killed server (it rejoins as a replica) and waits until the topology is healthy. */
  heal(): Promise<void>;
}

/** The figures of a series of failovers. */
export interface FailoverSeries {
  readonly failovers: number;
  readonly grants: number;
  readonly grantsLost: number;
  readonly writesAcknowledged: number;
  readonly writesLost: number;
  readonly violations: string[];
  /** Kill to first grant after it, per failover (ms). */
  readonly takeoverMs: number[];
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, done: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

interface Grant {
  readonly token: bigint;
  readonly sentAt: number;
  readonly ackAt: number;
  written: boolean;
}

/** Runs `rounds` failovers on `key` under `prefix` and returns their figures. */
export async function measureFailovers(rig: MeasureRig, prefix: string, key: string, rounds: number): Promise<FailoverSeries> {
  const ledgerKey = `${prefix}${hashTagOf(key)}:ledger`;
  const series = {
    failovers: 0,
    grants: 0,
    grantsLost: 0,
    writesAcknowledged: 0,
    writesLost: 0,
    violations: [] as string[],
    takeoverMs: [] as number[],
  };
  const opened = await Promise.all([1, 2, 3].map(() => rig.openClient()));
  const reader = toConnection(opened[0]!.client);
  try {
    for (let round = 0; round < rounds; round += 1) {
      const grants: Grant[] = [];
      let running = true;
      const workers = opened.map(async ({ client }, index) => {
        const leases = createLeases(createRedisStore({ client, prefix }), { holder: `w${index}`, ttlMs: 2_000 });
        while (running) {
          const sentAt = performance.now();
          const claimed = await leases.claim(key).catch(() => null);
          if (claimed === null || !claimed.ok) {
            await sleep(claimed === null ? 20 : 1);
            continue;
          }
          const grant: Grant = { token: claimed.lease.token, sentAt, ackAt: performance.now(), written: false };
          grants.push(grant);
          const written = await leases
            .fencedWrite(claimed.lease, (tx) => tx.call('RPUSH', ledgerKey, String(grant.token)))
            .catch(() => null);
          grant.written = written?.ok === true;
          await leases.release(claimed.lease).catch(() => null);
        }
      });
      try {
        await until('grants before the kill', () => grants.filter((grant) => grant.written).length >= 20);
        await rig.killMaster(key);
        // NOTE: taken once the master has exited, so a grant claimed later cannot come from it.
        const killedAt = performance.now();
        await until('grants after the promotion', () => grants.filter((grant) => grant.sentAt > killedAt && grant.written).length >= 10);
        running = false;
        await Promise.all(workers);
        const ledger = new Set(((await reader.send(['LRANGE', ledgerKey, '0', '-1'])) as string[]).map(BigInt));
        const tokens = [...ledger];
        for (const [at, token] of tokens.slice(1).entries())
          if (token <= tokens[at]!) series.violations.push(`round ${round}: ledger token ${token} after ${tokens[at]}`);
        const before = grants.filter((grant) => grant.ackAt <= killedAt);
        const after = grants.filter((grant) => grant.sentAt > killedAt);
        const highestBefore = before.reduce((a, grant) => (grant.token > a ? grant.token : a), 0n);
        for (const grant of after)
          if (grant.token <= highestBefore)
            series.violations.push(`round ${round}: token ${grant.token} after the kill, not above ${highestBefore}`);
        for (const grant of after)
          if (grant.written && !ledger.has(grant.token))
            series.violations.push(`round ${round}: write of ${grant.token}, acknowledged after the promotion, lost`);
        const surviving = before.filter((grant) => ledger.has(grant.token)).reduce((a, grant) => (grant.token > a ? grant.token : a), 0n);
        series.failovers += 1;
        series.grants += grants.length;
        series.grantsLost += before.filter((grant) => grant.token > surviving).length;
        series.writesAcknowledged += grants.filter((grant) => grant.written).length;
        series.writesLost += grants.filter((grant) => grant.written && !ledger.has(grant.token)).length;
        if (process.env['LEASEFENCE_TOPOLOGY_DIAG'])
          console.info(
            `[diag] round ${round} lost ${before.filter((grant) => grant.token > surviving).length} ledger ${ledger.size} before ${before.length} after ${after.length}`,
          );
        series.takeoverMs.push(Math.min(...after.map((grant) => grant.ackAt)) - killedAt);
      } finally {
        running = false;
        await Promise.allSettled(workers);
      }
      await rig.heal();
    }
  } finally {
    await Promise.all(opened.map(({ close }) => close()));
  }
  return series;
}

/** The p-th percentile (0-100) of `values`, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}
