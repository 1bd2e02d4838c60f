/**
 * The failover scenario both Redis topologies run (Cluster and Sentinel): grants replicated, then grants
 * the replica never receives (replication held back), then the master killed (SIGKILL) and the replica
 * promoted. It asserts the clock floor (the first token after the promotion is above every token issued
 * before, the forgotten ones included), that the stale holder's fenced write is refused and that token
 * gates refuse it, and returns what it measured.
 */
import { expect } from 'vitest';
import { createLeases } from '../../src/leases.js';
import type { Lease } from '../../src/lease.js';
import { createRedisTokenGate, hashTagOf, type RedisClient } from '../../src/adapters/redis/index.js';
import type { Redis } from 'ioredis';
import type { RedisStore } from '../adapters/redis-harness.js';
import type { RedisServer } from '../support/redis-server.js';

/** How to drive one topology through the failover. */
export interface FailoverRig {
  readonly client: RedisClient;
  readonly store: RedisStore;
  readonly prefix: string;
  /** Resolves once the replica has every write so far (`WAIT`). */
  synced(): Promise<void>;
  /** Cuts replication to the replica that will be promoted: it misses every later write. */
  holdBack(): Promise<void>;
  /** Kills the master (SIGKILL) and lets the replica run again, for the topology to promote it. */
  killMaster(): Promise<void>;
}

/**
 * The rig of a master and the replica the topology will promote: replication is held back by freezing the
 * replica (SIGSTOP) and cutting its link on the master (`CLIENT KILL TYPE replica`, so nothing already
 * buffered reaches it), the master is killed with SIGKILL and the replica let go (SIGCONT). `thaw()` lets the
 * replica go if a failed test left it frozen.
 */
export function heldBackReplicaRig(
  base: Pick<FailoverRig, 'client' | 'store' | 'prefix'>,
  master: { readonly admin: Redis; readonly server: RedisServer },
  replica: RedisServer,
): FailoverRig & { thaw(): void } {
  let frozen = false;
  const thaw = (): void => {
    if (frozen) process.kill(replica.pid!, 'SIGCONT');
    frozen = false;
  };
  return {
    ...base,
    synced: async () => expect(await master.admin.call('WAIT', '1', '5000')).toBe(1),
    async holdBack() {
      process.kill(replica.pid!, 'SIGSTOP');
      frozen = true;
      expect(await master.admin.call('CLIENT', 'KILL', 'TYPE', 'replica')).toBe(1);
    },
    async killMaster() {
      await master.server.kill();
      thaw();
    },
    thaw,
  };
}

/** What one failover cost. */
export interface FailoverFigures {
  /** Grants acknowledged while replication was held back: the promoted replica never saw them. */
  readonly grantsLost: number;
  /** From the SIGKILL to the first grant the promoted replica acknowledged. */
  readonly firstGrantMs: number;
  /** Writes of the stale holder refused after the promotion (fenced write, full-fence gate, token gate). */
  readonly staleWritesRefused: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs the scenario on `key` (see the module comment). */
export async function failOver(rig: FailoverRig, key: string, heldBackGrants = 5): Promise<FailoverFigures> {
  const leases = (holder: string) => createLeases(rig.store, { holder, ttlMs: 60_000 });
  const worker = leases('worker');
  const out = `${rig.prefix}${hashTagOf(key)}:out`;
  const resource = `${hashTagOf(key)}:report`;
  const fullFence = createRedisTokenGate({ client: rig.client, prefix: rig.prefix });
  const tokensOnly = createRedisTokenGate({ client: rig.client, prefix: `${rig.prefix}tokens:`, leasePrefix: null });
  const issued: bigint[] = [];
  const grant = async (holder = worker): Promise<Lease> => {
    const lease = await holder.claimOrThrow(key);
    issued.push(lease.token);
    await holder.fencedWriteOrThrow(lease, (tx) => tx.call('SET', out, String(lease.token)));
    return lease;
  };

  for (let round = 0; round < 3; round += 1) await worker.release(await grant());
  await rig.synced();
  const replicatedToken = issued.at(-1);

  await rig.holdBack();
  for (let round = 0; round < heldBackGrants - 1; round += 1) await worker.release(await grant());
  const staleHolder = leases('stale');
  const stale = await grant(staleHolder);
  expect(await tokensOnly.write(resource, stale.fence(), () => 'stale first')).toMatchObject({ ok: true });

  const killedAt = performance.now();
  await rig.killMaster();
  const next = leases('next');
  let seen: bigint | null = null;
  let fresh: Lease | null = null;
  while (fresh === null) {
    try {
      // NOTE: what the promoted replica knows of the key, read before its first grant there.
      seen ??= (await next.inspect(key)).token;
      const claimed = await next.claim(key);
      if (claimed.ok) fresh = claimed.lease;
      else throw new Error(`the promoted replica refused the claim: ${claimed.reason}`);
    } catch (error) {
      if (error instanceof Error && error.message.startsWith('the promoted replica')) throw error;
      if (performance.now() - killedAt > 60_000) throw error;
      await sleep(20);
    }
  }
  const firstGrantMs = performance.now() - killedAt;

  // The replica missed every held-back grant: the stale holder's grant is forgotten...
  expect(seen).toBe(replicatedToken);
  // ...yet the clock floor puts the next token above every token issued before.
  const highest = issued.reduce((a, b) => (a > b ? a : b));
  expect(fresh.token).toBeGreaterThan(highest);

  // Two holders believe they hold the key; their writes stay ordered by token.
  expect(await next.fencedWrite(fresh, (tx) => tx.call('SET', out, String(fresh.token)))).toMatchObject({ ok: true });
  expect(await tokensOnly.write(resource, fresh.fence(), () => 'next')).toMatchObject({ ok: true });
  let refused = 0;
  const staleWrite = await staleHolder.fencedWrite(stale, (tx) => tx.call('SET', out, 'stale'));
  expect(staleWrite).toMatchObject({ ok: false });
  refused += 1;
  expect(await fullFence.write(resource, stale.fence(), (tx) => tx.call('SET', out, 'stale'))).toMatchObject({ ok: false });
  refused += 1;
  expect(await tokensOnly.write(resource, stale.fence(), () => 'stale again')).toMatchObject({ ok: false, reason: 'stale-token' });
  refused += 1;
  expect(await staleHolder.release(stale)).toMatchObject({ ok: false });
  expect(await next.inspect(key)).toMatchObject({ token: fresh.token, grant: { holder: 'next' } });
  return { grantsLost: issued.filter((token) => token > (replicatedToken ?? 0n)).length, firstGrantMs, staleWritesRefused: refused };
}
