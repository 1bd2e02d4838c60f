/**
 * Resharding under load: the slot of a busy key moves to another master (`CLUSTER SETSLOT ... IMPORTING /
 * MIGRATING`, `MIGRATE`, `SETSLOT ... NODE`) while workers claim it, append to its ledger under the fence
 * and release it. Each phase of the move waits until the workers made progress in it, so the clients
 * must follow `ASK` (record moved, slot still migrating) and then `MOVED` (slot reassigned).
 */
import { expect, it } from 'vitest';
import { createLeases } from '../../src/leases.js';
import { isLeaseError } from '../../src/errors.js';
import { createRedisStore, hashTagOf } from '../../src/adapters/redis/index.js';
import { clusterSlot } from '../../src/adapters/redis/cross-slot.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { freshPrefix } from '../adapters/redis-harness.js';
import type { RedisCluster } from '../support/redis-cluster.js';
import { openClusterClient, type ClusterClientKind } from './redis-cluster-harness.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** What the workers saw: every fenced write's entry by outcome, and the grants in acknowledgement order. */
interface Ledger {
  readonly acknowledged: string[];
  /** Refused by the fence, or refused by the server / client before running (nothing applied). */
  readonly notApplied: string[];
  /** Sent, reply lost or redirections exhausted: applied at most once. */
  readonly unknown: string[];
  readonly grants: bigint[];
  readonly unexpected: unknown[];
  claims: number;
}

/** Waits until `done()` holds, failing after `timeoutMs` with `what`. */
async function until(what: string, done: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** A worker's outcome for a call that may fail: not applied, unknown, or a failure of the test. */
function classify(ledger: Ledger, entry: string | null, error: unknown): void {
  if (isLeaseError(error, 'OUTCOME_UNKNOWN')) {
    if (entry !== null) ledger.unknown.push(entry);
  } else if (isLeaseError(error, 'STORE_UNAVAILABLE')) {
    if (entry !== null) ledger.notApplied.push(entry);
  } else {
    ledger.unexpected.push(error);
  }
}

export function describeClusterResharding(kind: ClusterClientKind, cluster: () => Promise<RedisCluster>): void {
  it('moving the slot of a busy key: ASK and MOVED are followed, every acknowledged fenced write is applied exactly once, none refused is, tokens strictly increase', async () => {
    const topology = await cluster();
    const prefix = freshPrefix(`lf-reshard-${kind}`);
    const key = `busy:${kind}`;
    const record = keyNames(prefix).record(key, 'lease');
    const ledgerKey = `${prefix}${hashTagOf(key)}:ledger`;
    const slot = clusterSlot(record);
    const source = await topology.masterOf(slot);
    const target = (await topology.topology()).find((node) => node.role === 'master' && !node.failing && node.port !== source.port);
    if (target === undefined) throw new Error('no other master');
    const fillers = Array.from({ length: 20 }, (_, index) => `${prefix}${hashTagOf(key)}:filler:${index}`);
    for (const filler of fillers) await topology.admin(source.port).call('SET', filler, 'x');

    const ledger: Ledger = { acknowledged: [], notApplied: [], unknown: [], grants: [], unexpected: [], claims: 0 };
    let running = true;
    const opened = await Promise.all(['w1', 'w2', 'w3'].map(() => openClusterClient(kind, topology.seeds)));
    const workers = opened.map(async ({ client }, index) => {
      const leases = createLeases(createRedisStore({ client, prefix }), { holder: `w${index + 1}`, ttlMs: 3_000 });
      for (let round = 0; running; round += 1) {
        const claimed = await leases.claim(key).catch((error: unknown) => void classify(ledger, null, error));
        if (claimed === undefined || !claimed.ok) {
          await sleep(1);
          continue;
        }
        ledger.grants.push(claimed.lease.token);
        ledger.claims += 1;
        const entry = `${claimed.lease.token}:${leases.holder}:${round}`;
        try {
          const outcome = await leases.fencedWrite(claimed.lease, (tx) => tx.call('RPUSH', ledgerKey, entry));
          (outcome.ok ? ledger.acknowledged : ledger.notApplied).push(entry);
        } catch (error) {
          classify(ledger, entry, error);
        }
        await leases.release(claimed.lease).catch((error: unknown) => void classify(ledger, null, error));
      }
    });
    const writesAfter = (count: number): (() => boolean) => {
      const from = ledger.acknowledged.length;
      return () => ledger.acknowledged.length >= from + count;
    };
    const claimsAfter = (count: number): (() => boolean) => {
      const from = ledger.claims;
      return () => ledger.claims >= from + count;
    };
    try {
      await until('writes before the move', writesAfter(5));
      const move = await topology.moveSlot(slot, target.port);
      await until('writes while the slot is migrating', writesAfter(5));
      await move.migrate([record]);
      // NOTE: the record is on the target now, the slot still migrating: claims and releases reach it by ASK.
      await until('claims after the record moved (ASK)', claimsAfter(3));
      // NOTE: at least the fillers and the ledger; keys of other tests may share the slot.
      expect(await move.migrateRest()).toBeGreaterThanOrEqual(fillers.length + 1);
      await until('writes after every key moved (ASK)', writesAfter(5));
      await move.finish();
      await until('writes after the slot was reassigned (MOVED)', writesAfter(5));
    } finally {
      running = false;
      await Promise.allSettled(workers);
      await Promise.all(opened.map(({ close }) => close()));
    }

    expect(ledger.unexpected).toEqual([]);
    expect((await topology.masterOf(slot)).port).toBe(target.port);
    const applied = (await topology.admin(target.port).call('LRANGE', ledgerKey, '0', '-1')) as string[];
    const times = (entry: string): number => applied.filter((found) => found === entry).length;
    for (const entry of ledger.acknowledged) expect({ entry, times: times(entry) }).toEqual({ entry, times: 1 });
    for (const entry of ledger.notApplied) expect({ entry, times: times(entry) }).toEqual({ entry, times: 0 });
    for (const entry of ledger.unknown) expect(times(entry)).toBeLessThanOrEqual(1);
    expect(applied.length).toBe(ledger.acknowledged.length + ledger.unknown.filter((entry) => times(entry) === 1).length);
    const appliedTokens = applied.map((entry) => BigInt(entry.split(':')[0] ?? ''));
    for (const [index, token] of appliedTokens.slice(1).entries()) expect(token).toBeGreaterThan(appliedTokens[index]!);
    for (const [index, token] of ledger.grants.slice(1).entries()) expect(token).toBeGreaterThan(ledger.grants[index]!);
  });
}
