/**
 * Semaphores on PostgreSQL answer what the memory store (the reference, fence/permits.ts) answers, field by field:
 * random sequences of acquires (limits 1 to 4, short, long and no TTLs, re-deliveries, recovering acquires) and of
 * the ordinary operations on permit keys (release with or without a hold and a checkpoint decision, checkpoint,
 * renew, revoke with or without recovery, a direct claim, setKeyState with a hold, remove) run on both stores in
 * lockstep. Each operation runs on PostgreSQL first; the memory store then runs it at the same now (its clock is set
 * to the now PostgreSQL answered) with the same token floor (now in microseconds, token-floor.ts), so both decide on
 * the same records at the same time.
 */
import { expect } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import type { PostgresStore } from '../../src/adapters/postgres/index.js';
import { permitKey, type AcquirePermitCommand, type PermitGranted } from '../../src/fence/permits.js';
import type { Fence } from '../../src/fence/types.js';
import { newSecret } from '../../src/secret.js';
import type { Store } from '../../src/store.js';
import type { StoreHarness } from '../../src/testing/index.js';
import { permitCommand } from '../permits/race-checks.js';

const SHORT_MS = 30;

/** A small seeded generator (mulberry32), so that a failing sequence is replayed by its seed. */
function generator(seed: number): { int(below: number): number; pick<T>(items: readonly T[]): T } {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    int: (below) => Math.floor(next() * below),
    pick: (items) => items[Math.floor(next() * items.length)] as (typeof items)[number],
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One operation: its name and how to run it on a store. */
interface Step {
  readonly name: string;
  readonly run: (store: Store) => Promise<unknown>;
}

/** Runs `runs` random sequences of `length` steps on `harness`'s store and a memory store, comparing every outcome. */
export async function runPermitAgreement(harness: StoreHarness<PostgresStore>, runs: number, length: number, seed = 2_500): Promise<void> {
  for (let run = 0; run < runs; run += 1) {
    const random = generator(seed + run);
    const semaphore = harness.freshKey(`agree${run}`).replace(/[{}]/g, '_');
    let now = 0;
    const memory = createMemoryStore({ clock: () => now, tokenFloor: () => BigInt(now) * 1000n });
    const acquires: AcquirePermitCommand[] = [];
    const grants: Array<{ fence: Fence }> = [];
    const key = () => permitKey(semaphore, 1 + random.int(5));
    const fence = (): Fence | null => (grants.length === 0 ? null : random.pick(grants).fence);
    const history: string[] = [];
    const stepOf = (): Step | null => {
      const choice = random.int(100);
      if (choice < 40) {
        const ttl = random.pick([SHORT_MS, 60_000, null]);
        const command = { ...permitCommand(semaphore, `h${random.int(4)}`, 1 + random.int(4), ttl), recovering: random.int(8) === 0 };
        acquires.push(command);
        return {
          name: `acquire limit ${command.limit} ttl ${ttl}${command.recovering ? ' recovering' : ''}`,
          run: (s) => acquire(s, command),
        };
      }
      if (choice < 45 && acquires.length > 0) {
        const command = random.pick(acquires);
        return { name: `acquire again ${command.runId}`, run: (s) => acquire(s, command) };
      }
      const target = fence();
      if (choice < 60 && target !== null) {
        const holdMs = random.pick([undefined, 0, SHORT_MS]);
        const checkpointJson = random.pick([undefined, null, '{"n":1}']);
        const release = {
          fence: target,
          ...(holdMs === undefined ? {} : { holdMs }),
          ...(checkpointJson === undefined ? {} : { checkpointJson }),
        };
        return {
          name: `release ${target.key} ${target.token} hold ${holdMs} checkpoint ${checkpointJson}`,
          run: (s) => s.release(release),
        };
      }
      if (choice < 66 && target !== null) {
        const json = `{"at":${random.int(9)}}`;
        return { name: `checkpoint ${target.key}`, run: (s) => s.checkpoint({ fence: target, json }) };
      }
      if (choice < 70 && target !== null) return { name: `renew ${target.key}`, run: (s) => s.renew({ fence: target, ttlMs: SHORT_MS }) };
      if (choice < 76) {
        const revoked = { key: key(), reason: 'op', by: 'op', requireRecovery: random.int(2) === 0, expectedToken: null };
        return { name: `revoke ${revoked.key} recovery ${revoked.requireRecovery}`, run: (s) => s.revoke(revoked) };
      }
      if (choice < 80) {
        const claim = {
          key: key(),
          holder: 'direct',
          runId: null,
          secret: newSecret(),
          ttlMs: SHORT_MS,
          attributes: {},
          recovering: false,
        };
        return { name: `claim ${claim.key}`, run: (s) => s.claim(claim) };
      }
      if (choice < 84) {
        const state = { key: key(), values: { mode: random.pick(['a', 'b', null]) }, by: 'op', holdMs: random.pick([null, SHORT_MS]) };
        return { name: `setKeyState ${state.key} hold ${state.holdMs}`, run: (s) => s.setKeyState(state) };
      }
      if (choice < 87) {
        const removed = { key: key(), force: random.int(2) === 0, expectedToken: null };
        return { name: `remove ${removed.key} force ${removed.force}`, run: (s) => s.remove(removed) };
      }
      return { name: 'sleep', run: async () => sleep(SHORT_MS + 5) };
    };
    const acquire = async (s: Store, command: AcquirePermitCommand) => {
      const outcome = await (s.acquirePermit as NonNullable<Store['acquirePermit']>)(command);
      if (outcome.ok && s !== memory) grants.push({ fence: fenceOf(outcome, command) });
      return outcome;
    };
    for (let step = 0; step < length; step += 1) {
      const next = stepOf();
      if (next === null) continue;
      history.push(next.name);
      const answered = (await next.run(harness.store)) as { now?: number } | undefined;
      if (answered === undefined) continue;
      if (typeof answered.now !== 'number') throw new Error(`${next.name} answered no now`);
      now = answered.now;
      const reference = await next.run(memory);
      expect(answered, `seed ${seed + run}, step ${step}: ${history.join(' | ')}`).toEqual(reference);
    }
  }
}

const fenceOf = (grant: PermitGranted, command: AcquirePermitCommand): Fence => ({
  key: grant.key,
  token: grant.token,
  secret: command.secret,
  holder: command.holder,
  runId: command.runId,
});
