/**
 * Semaphores on PostgreSQL (issue 25), one scenario per rule of `fence/permits.ts#acquirePermit`, run on every
 * client the store supports. Each acquire is also checked inside the adapter: the permit SQL chose must be the one
 * the pure core chooses on the same pre-images (it throws otherwise), so these scenarios drive every branch of the
 * SQL decision; the expectations here pin the outcomes themselves.
 */
import { expect } from 'vitest';
import type { PostgresStore } from '../../src/adapters/postgres/index.js';
import {
  permitKey,
  type AcquirePermitCommand,
  type AcquirePermitOutcome,
  type PermitGranted,
  type SemaphoreFull,
} from '../../src/fence/permits.js';
import type { Fence } from '../../src/fence/types.js';
import { newSecret } from '../../src/secret.js';
import type { StoreHarness } from '../../src/testing/index.js';
import { permitCommand } from '../permits/race-checks.js';

const HELD_MS = 60_000;

function granted(outcome: AcquirePermitOutcome): PermitGranted {
  if (!outcome.ok) throw new Error(`expected a grant, got ${JSON.stringify(outcome, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))}`);
  return outcome;
}

function full(outcome: AcquirePermitOutcome): SemaphoreFull {
  if (outcome.ok) throw new Error(`expected full, got a grant of ${outcome.key}`);
  return outcome;
}

const fenceOf = (grant: PermitGranted, command: AcquirePermitCommand): Fence => ({
  key: grant.key,
  token: grant.token,
  secret: command.secret,
  holder: command.holder,
  runId: command.runId,
});

/** A semaphore name no other scenario uses. */
const fresh = (harness: StoreHarness<PostgresStore>, label: string): string => harness.freshKey(label).replace(/[{}]/g, '_');

/** Every scenario, in turn, on `harness`'s store. */
export async function runPermitScenarios(harness: StoreHarness<PostgresStore>): Promise<void> {
  const { store } = harness;

  // Grants up to the limit, lowest index first, tokens rising across permits; then full with the live holders.
  {
    const semaphore = fresh(harness, 'basic');
    const first = permitCommand(semaphore, 'a', 2, HELD_MS);
    const one = granted(await store.acquirePermit(first));
    expect(one).toMatchObject({ key: permitKey(semaphore, 1), index: 1, limit: 2, live: 1, previous: null, checkpoint: null });
    const two = granted(await store.acquirePermit(permitCommand(semaphore, 'b', 2, HELD_MS)));
    expect(two).toMatchObject({ key: permitKey(semaphore, 2), index: 2, live: 2 });
    expect(two.token > one.token).toBe(true);
    const refused = full(await store.acquirePermit(permitCommand(semaphore, 'c', 2, HELD_MS)));
    expect(refused).toMatchObject({ reason: 'full', semaphore, limit: 2, unavailable: [], nextAt: one.expiresAt });
    expect(refused.live.map(({ index, holder, token }) => ({ index, holder, token }))).toEqual([
      { index: 1, holder: 'a', token: one.token },
      { index: 2, holder: 'b', token: two.token },
    ]);
    // Re-delivery answers the grant it made, unchanged.
    const again = granted(await store.acquirePermit(first));
    expect({ ...again, now: 0 }).toEqual({ ...one, live: 2, now: 0 });
    // Raising the limit takes effect at once; lowering it revokes nothing but grants nothing either.
    const three = granted(await store.acquirePermit(permitCommand(semaphore, 'd', 3, HELD_MS)));
    expect(three).toMatchObject({ index: 3, live: 3 });
    expect(full(await store.acquirePermit(permitCommand(semaphore, 'e', 1, HELD_MS))).live).toHaveLength(3);
    // A released permit is granted again above every token of the semaphore.
    expect((await store.release({ fence: fenceOf(one, first) })).ok).toBe(true);
    const four = granted(await store.acquirePermit(permitCommand(semaphore, 'f', 3, HELD_MS)));
    expect(four).toMatchObject({ index: 1, previous: { kind: 'released', token: one.token } });
    expect(four.token > three.token).toBe(true);
  }

  // The free permit available longest: never used first, then by release time, then the lowest index.
  {
    const semaphore = fresh(harness, 'order');
    const commands = [1, 2, 3].map((n) => permitCommand(semaphore, `h${n}`, 4, HELD_MS));
    const grants = [];
    for (const command of commands) grants.push(granted(await store.acquirePermit(command)));
    // Release 3 then 1: permit 4 was never used, so it goes first, then 3 (released earlier), then 1.
    expect((await store.release({ fence: fenceOf(grants[2] as PermitGranted, commands[2] as AcquirePermitCommand) })).ok).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await store.release({ fence: fenceOf(grants[0] as PermitGranted, commands[0] as AcquirePermitCommand) })).ok).toBe(true);
    const order = [];
    for (let n = 0; n < 3; n += 1) order.push(granted(await store.acquirePermit(permitCommand(semaphore, `n${n}`, 4, HELD_MS))).index);
    expect(order).toEqual([4, 3, 1]);
  }

  // An expired permit is taken over with its checkpoint; `previous` names the expired run.
  {
    const semaphore = fresh(harness, 'expired');
    const command = permitCommand(semaphore, 'lost', 1, HELD_MS);
    const lost = granted(await store.acquirePermit(command));
    expect((await store.checkpoint({ fence: fenceOf(lost, command), json: '{"step":3}' })).ok).toBe(true);
    await harness.expireNow(lost.key);
    const taken = granted(await store.acquirePermit(permitCommand(semaphore, 'next', 1, HELD_MS)));
    expect(taken).toMatchObject({
      index: 1,
      previous: { kind: 'expired', token: lost.token, holder: 'lost', runId: command.runId },
      checkpoint: { json: '{"step":3}', token: lost.token },
    });
  }

  // A held-back permit is unavailable until its hold ends (nextAt); a blocked one waits for a recovering acquire.
  {
    const semaphore = fresh(harness, 'held');
    const command = permitCommand(semaphore, 'h', 1, HELD_MS);
    const grant = granted(await store.acquirePermit(command));
    const released = await store.release({ fence: fenceOf(grant, command), holdMs: 60_000 });
    expect(released.ok).toBe(true);
    const refused = full(await store.acquirePermit(permitCommand(semaphore, 'x', 1, HELD_MS)));
    expect(refused).toMatchObject({ live: [], unavailable: [1] });
    expect(refused.nextAt).toBe((released as { now: number }).now + 60_000);
    // With limit 2, permit 2 (never used) is granted instead.
    expect(granted(await store.acquirePermit(permitCommand(semaphore, 'y', 2, HELD_MS))).index).toBe(2);
  }
  {
    const semaphore = fresh(harness, 'recovery');
    const command = permitCommand(semaphore, 'r', 1, HELD_MS);
    const grant = granted(await store.acquirePermit(command));
    expect((await store.checkpoint({ fence: fenceOf(grant, command), json: '{"at":1}' })).ok).toBe(true);
    const revoked = await store.revoke({ key: grant.key, reason: 'stuck', by: 'op', requireRecovery: true, expectedToken: null });
    expect(revoked).toMatchObject({ ok: true, recoveryRequired: true });
    const plain = full(await store.acquirePermit(permitCommand(semaphore, 'p', 1, HELD_MS)));
    expect(plain).toMatchObject({ live: [], unavailable: [1], nextAt: null });
    // A recovering acquire takes only a blocked permit: with limit 2 it still takes 1, not the never-used 2.
    const recovering = { ...permitCommand(semaphore, 'q', 2, HELD_MS), recovering: true };
    const resolved = granted(await store.acquirePermit(recovering));
    expect(resolved).toMatchObject({ index: 1, checkpoint: { json: '{"at":1}' }, previous: { kind: 'revoked' } });
    const nothingBlocked = full(await store.acquirePermit({ ...permitCommand(semaphore, 's', 3, HELD_MS), recovering: true }));
    // NOTE: permit 1 is live (up to the limit): its expiry is when an index frees.
    expect(nothingBlocked).toMatchObject({ unavailable: [2, 3], nextAt: resolved.expiresAt });
  }

  // Permits live above the limit count, and permit keys claimed directly are permits; other keys are not.
  {
    const semaphore = fresh(harness, 'shapes');
    const claimed = await store.claim({
      key: permitKey(semaphore, 7),
      holder: 'direct',
      runId: null,
      secret: newSecret(),
      ttlMs: null,
      attributes: {},
      recovering: false,
    });
    expect(claimed.ok).toBe(true);
    for (const key of [`{${semaphore}}:permit-01`, `{${semaphore}}:permit-1001`, `{${semaphore}}:permit-x`, `{${semaphore}x}:permit-1`]) {
      const other = await store.claim({
        key,
        holder: 'other',
        runId: null,
        secret: newSecret(),
        ttlMs: null,
        attributes: {},
        recovering: false,
      });
      expect(other.ok).toBe(true);
    }
    const refused = full(await store.acquirePermit(permitCommand(semaphore, 'z', 1, HELD_MS)));
    expect(refused.live.map(({ index, key }) => ({ index, key }))).toEqual([{ index: 7, key: permitKey(semaphore, 7) }]);
    expect(refused.nextAt).toBeNull();
    const grant = granted(await store.acquirePermit(permitCommand(semaphore, 'z', 2, HELD_MS)));
    expect(grant).toMatchObject({ index: 1, live: 2 });
    expect(grant.token > (claimed as { token: bigint }).token).toBe(true);
  }

  // A permit whose row another transaction holds (a fenced write whose grant expired meanwhile) is busy: never
  // granted, never waited for; full with nextAt = now, or the next free permit.
  {
    const semaphore = fresh(harness, 'busy');
    const command = permitCommand(semaphore, 'w', 1, 500);
    const grant = granted(await store.acquirePermit(command));
    const other = await harness.connect();
    // NOTE: PGlite has one connection: a fenced write holds it, nothing else runs meanwhile.
    if (other !== store) {
      let finish: () => void = () => undefined;
      const holding = new Promise<void>((resolve) => {
        finish = resolve;
      });
      let entered: () => void = () => undefined;
      const inside = new Promise<void>((resolve) => {
        entered = resolve;
      });
      const writing = store
        .fencedWrite(fenceOf(grant, command), async () => {
          entered();
          await holding;
        })
        .catch(() => undefined);
      // NOTE: a fenced write refused before its callback (the grant expired first on a slow machine) fails here, not by timeout.
      await Promise.race([
        inside,
        writing.then(() => {
          throw new Error('the fenced write ended before its callback held the permit row');
        }),
      ]);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, (grant.expiresAt as number) - grant.now) + 30));
      const refused = full(await other.acquirePermit(permitCommand(semaphore, 'v', 1, HELD_MS)));
      expect(refused).toMatchObject({ live: [], unavailable: [1] });
      expect(refused.nextAt).toBe(refused.now);
      const next = granted(await other.acquirePermit(permitCommand(semaphore, 'v', 2, HELD_MS)));
      expect(next.index).toBe(2);
      finish();
      await writing;
    }
  }

  // Permits are no items: claim-next never grants one.
  {
    const semaphore = fresh(harness, 'items');
    granted(await store.acquirePermit(permitCommand(semaphore, 'i', 1, 1)));
    const idle = await store.claimNext({
      set: semaphore,
      holder: 'c',
      runId: null,
      secret: newSecret(),
      ttlMs: HELD_MS,
      attributes: {},
      onExpired: 'take-over',
    });
    expect(idle).toMatchObject({ ok: false, reason: 'idle', nextAt: null });
  }
}
