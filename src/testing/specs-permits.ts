/**
 * Conformance specs of semaphores (issue 25, part 2: `acquirePermit`), run only on stores that offer it. They call
 * the Store directly: a permit is an ordinary key (`permitKey(semaphore, index)`), so every other operation on it is
 * the store's ordinary one, and the specs check that too. Each outcome is the one `fence/permits.ts#acquirePermit`
 * gives for the records as they were: never more than `limit` live, tokens rising across every permit.
 */
import type { AcquirePermitCommand, PermitGranted } from '../fence/permits.js';
import { permitKey } from '../fence/permits.js';
import type { Fence } from '../fence/types.js';
import { isLeaseError } from '../errors.js';
import { newSecret } from '../secret.js';
import type { Store } from '../store.js';
import { expectEqual, expectMatch, expectSame, expectTrue } from './assertions.js';
import { SPEC_TTL_MS, type SuiteContext } from './context.js';
import { skipTest } from './runner.js';

/** A store that offers semaphores. */
type PermitStore = Store & Required<Pick<Store, 'acquirePermit'>>;

/** An acquire of `semaphore` with `limit` for `holder`, with a fresh secret and the suite TTL. */
function acquireCommand(semaphore: string, limit: number, holder: string, extra: Partial<AcquirePermitCommand> = {}): AcquirePermitCommand {
  return {
    semaphore,
    limit,
    holder,
    runId: null,
    secret: newSecret(),
    ttlMs: SPEC_TTL_MS,
    attributes: {},
    recovering: false,
    ...extra,
  };
}

/** A granted permit and the fence its holder presents. */
interface Held {
  readonly granted: PermitGranted;
  readonly fence: Fence;
}

/** Acquires a permit and fails the spec when the semaphore answers full. */
async function mustAcquire(store: PermitStore, command: AcquirePermitCommand): Promise<Held> {
  const outcome = await store.acquirePermit(command);
  if (!outcome.ok)
    throw new Error(
      `expected ${command.holder} to acquire a permit of ${command.semaphore} (limit ${command.limit}), got full (${outcome.live.length} live, unavailable [${outcome.unavailable}])`,
    );
  return {
    granted: outcome,
    fence: { key: outcome.key, token: outcome.token, secret: command.secret, holder: command.holder, runId: command.runId },
  };
}

/** Registers the semaphore specs; each is skipped on a store without `acquirePermit`. */
export function describePermitSpecs<S extends Store>(context: SuiteContext<S>): void {
  const { runner } = context;
  /** A fresh semaphore name (no braces) on a store that offers semaphores (else the spec is skipped). */
  const fresh = (runnerArguments: readonly unknown[]) => {
    const { store } = context.harness;
    if (typeof store.acquirePermit !== 'function') {
      skipTest(runnerArguments, 'the store does not offer semaphores');
      return null;
    }
    return { store: store as PermitStore, semaphore: context.harness.freshKey('sem').replace(/[{}]/g, '_') };
  };
  /** Lets the store's clock move on (store times are in ms: two releases a few ms apart are ordered). */
  const pause = async (): Promise<void> => {
    const { advanceClock } = context.harness;
    if (advanceClock !== null) advanceClock(5);
    else await new Promise((resolve) => setTimeout(resolve, 5));
  };

  runner.describe('semaphores', () => {
    runner.it(
      'grants up to the limit, never-used permits lowest index first, then answers full with the live holders and the first expiry',
      async (...args) => {
        const given = fresh(args);
        if (given === null) return;
        const { store, semaphore } = given;
        const held: Held[] = [];
        for (const holder of ['w1', 'w2', 'w3'])
          held.push(await mustAcquire(store, acquireCommand(semaphore, 3, holder, { runId: `${holder}-run` })));
        expectEqual(
          held.map(({ granted }) => [granted.index, granted.key, granted.live, granted.limit, granted.semaphore]),
          [1, 2, 3].map((index) => [index, permitKey(semaphore, index), index, 3, semaphore]),
          'the three grants (index, key, live, limit, semaphore)',
        );
        expectTrue(
          held.every(({ granted }, i) => i === 0 || granted.token > (held[i - 1] as Held).granted.token),
          'tokens rise in grant order across the permits',
        );
        const full = await store.acquirePermit(acquireCommand(semaphore, 3, 'w4'));
        expectMatch(full, {
          ok: false,
          reason: 'full',
          semaphore,
          limit: 3,
          unavailable: [],
          live: held.map(({ granted, fence }) => ({
            key: granted.key,
            index: granted.index,
            token: granted.token,
            holder: fence.holder,
            runId: fence.runId,
            expiresAt: granted.expiresAt,
          })),
        });
        // NOTE: one of the three must end for a fourth: the first of them to expire is when that can be.
        if (!full.ok) expectSame(full.nextAt, Math.min(...held.map(({ granted }) => granted.expiresAt as number)), 'full.nextAt');
      },
    );

    runner.it('a release frees its permit: the next acquire is granted that one, with the release as previous', async (...args) => {
      const given = fresh(args);
      if (given === null) return;
      const { store, semaphore } = given;
      const held: Held[] = [];
      for (const holder of ['w1', 'w2', 'w3']) held.push(await mustAcquire(store, acquireCommand(semaphore, 3, holder)));
      const second = held[1] as Held;
      expectMatch(await store.release({ fence: second.fence }), { ok: true, token: second.granted.token });
      const next = await mustAcquire(store, acquireCommand(semaphore, 3, 'w4'));
      expectMatch(next.granted, { index: 2, live: 3, previous: { kind: 'released', token: second.granted.token } });
      expectTrue(next.granted.token > (held[2] as Held).granted.token, 'the new token is above every permit token');
      expectMatch(await store.acquirePermit(acquireCommand(semaphore, 3, 'w5')), { ok: false, reason: 'full' });
    });

    runner.it('takes an expired permit over at once, with its checkpoint, and names the expired grant', async (...args) => {
      const given = fresh(args);
      if (given === null) return;
      const { store, semaphore } = given;
      const first = await mustAcquire(store, acquireCommand(semaphore, 1, 'w1', { runId: 'r7' }));
      expectMatch(await store.checkpoint({ fence: first.fence, json: '{"page":3}' }), { ok: true });
      expectMatch(await store.acquirePermit(acquireCommand(semaphore, 1, 'w2')), { ok: false, reason: 'full' });
      await context.harness.expireNow(first.granted.key);
      const next = await mustAcquire(store, acquireCommand(semaphore, 1, 'w2', { runId: 'r8' }));
      expectMatch(next.granted, {
        index: 1,
        key: first.granted.key,
        live: 1,
        previous: { kind: 'expired', token: first.granted.token, holder: 'w1', runId: 'r7' },
        checkpoint: { json: '{"page":3}', token: first.granted.token },
      });
      expectTrue(next.granted.token > first.granted.token, 'the new token is larger');
      expectMatch(await store.renew({ fence: first.fence, ttlMs: SPEC_TTL_MS }), { ok: false, reason: 'superseded' });
    });

    runner.it('tokens rise across all permits and on each permit key, over releases and revokes', async (...args) => {
      const given = fresh(args);
      if (given === null) return;
      const { store, semaphore } = given;
      const a = await mustAcquire(store, acquireCommand(semaphore, 2, 'w1'));
      const b = await mustAcquire(store, acquireCommand(semaphore, 2, 'w2'));
      const revoked = await store.revoke({ key: a.granted.key, reason: 'stuck', by: 'ops', requireRecovery: false, expectedToken: null });
      expectMatch(revoked, { ok: true, revoked: { kind: 'revoked', token: a.granted.token } });
      await pause();
      expectMatch(await store.release({ fence: b.fence }), { ok: true });
      // NOTE: permit 1 was freed (revoked) before permit 2 (released): it is granted first.
      const c = await mustAcquire(store, acquireCommand(semaphore, 2, 'w3'));
      const d = await mustAcquire(store, acquireCommand(semaphore, 2, 'w4'));
      expectEqual([c.granted.index, d.granted.index], [1, 2], 'the permits granted again');
      const tokens = [a, b, c, d].map(({ granted }) => granted.token);
      expectTrue(
        tokens.every((token, i) => i === 0 || token > (tokens[i - 1] as bigint)),
        `tokens rise in grant order: ${tokens.join(', ')}`,
      );
      if (revoked.ok)
        expectTrue(
          c.granted.token > revoked.token,
          `the token after the revoke (${c.granted.token}) is above the one it burned (${revoked.token})`,
        );
      expectMatch(await store.inspect(c.granted.key), { token: c.granted.token, grant: { token: c.granted.token, live: true } });
      expectMatch(await store.inspect(d.granted.key), { token: d.granted.token, grant: { token: d.granted.token, live: true } });
    });

    runner.it(
      'an acquire delivered twice with the same secret answers the same grant, also when the semaphore is full',
      async (...args) => {
        const given = fresh(args);
        if (given === null) return;
        const { store, semaphore } = given;
        const command = acquireCommand(semaphore, 2, 'w1');
        const first = await mustAcquire(store, command);
        const again = await store.acquirePermit(command);
        const { key, index, token, acquiredAt, expiresAt } = first.granted;
        expectMatch(again, { ok: true, key, index, token, acquiredAt, expiresAt });
        const other = await mustAcquire(store, acquireCommand(semaphore, 2, 'w2'));
        expectSame(other.granted.index, 2, 'the other acquire is granted the other permit');
        expectMatch(await store.acquirePermit(command), { ok: true, key, index, token, expiresAt });
        expectMatch(await store.acquirePermit(acquireCommand(semaphore, 2, 'w3')), { ok: false, reason: 'full' });
      },
    );

    runner.it('an acquire with a lower limit is full until fewer than its limit are live; the permits above it run on', async (...args) => {
      const given = fresh(args);
      if (given === null) return;
      const { store, semaphore } = given;
      const held: Held[] = [];
      // NOTE: TTLs a second apart, so the live grants expire in a known order.
      for (const [i, holder] of ['w1', 'w2', 'w3'].entries())
        held.push(await mustAcquire(store, acquireCommand(semaphore, 3, holder, { ttlMs: SPEC_TTL_MS + (3 - i) * 1_000 })));
      const [one, two, three] = held as [Held, Held, Held];
      const lowered = await store.acquirePermit(acquireCommand(semaphore, 2, 'w4'));
      expectMatch(lowered, { ok: false, reason: 'full', limit: 2, unavailable: [], live: [{ index: 1 }, { index: 2 }, { index: 3 }] });
      // NOTE: two of the three must end for a grant under limit 2: the second expiry of the three.
      const expiries = held.map(({ granted }) => granted.expiresAt as number).sort((x, y) => x - y);
      if (!lowered.ok) expectSame(lowered.nextAt, expiries[1], 'nextAt: the second expiry of the three live');
      expectMatch(await store.release({ fence: three.fence }), { ok: true });
      expectMatch(await store.acquirePermit(acquireCommand(semaphore, 2, 'w4')), {
        ok: false,
        reason: 'full',
        live: [{ index: 1 }, { index: 2 }],
      });
      expectMatch(await store.renew({ fence: two.fence, ttlMs: SPEC_TTL_MS }), { ok: true });
      expectMatch(await store.release({ fence: one.fence }), { ok: true });
      const granted = await mustAcquire(store, acquireCommand(semaphore, 2, 'w4'));
      expectMatch(granted.granted, { index: 1, live: 2, limit: 2 });
      expectMatch(await store.acquirePermit(acquireCommand(semaphore, 2, 'w5')), { ok: false, reason: 'full' });
      // NOTE: raising the limit again takes effect at once: permit 3 (released) is free.
      expectMatch(await store.acquirePermit(acquireCommand(semaphore, 3, 'w5')), { ok: true, index: 3, live: 3 });
    });

    runner.it(
      'a permit revoked with requireRecovery is skipped by plain acquires and granted to a recovering one, with its checkpoint',
      async (...args) => {
        const given = fresh(args);
        if (given === null) return;
        const { store, semaphore } = given;
        const first = await mustAcquire(store, acquireCommand(semaphore, 1, 'w1'));
        expectMatch(await store.checkpoint({ fence: first.fence, json: '{"page":7}' }), { ok: true });
        expectMatch(
          await store.revoke({ key: first.granted.key, reason: 'stuck', by: 'ops', requireRecovery: true, expectedToken: null }),
          {
            ok: true,
            recoveryRequired: true,
          },
        );
        expectMatch(await store.acquirePermit(acquireCommand(semaphore, 1, 'w2')), {
          ok: false,
          reason: 'full',
          live: [],
          unavailable: [1],
          nextAt: null,
        });
        // NOTE: with limit 2 a plain acquire passes the blocked permit by; a recovering one takes only a blocked permit.
        expectMatch(await store.acquirePermit(acquireCommand(semaphore, 2, 'w2')), { ok: true, index: 2 });
        const recovering = await mustAcquire(store, acquireCommand(semaphore, 2, 'w3', { recovering: true }));
        expectMatch(recovering.granted, {
          index: 1,
          previous: { kind: 'revoked', token: first.granted.token },
          checkpoint: { json: '{"page":7}', token: first.granted.token },
        });
        expectSame((await store.inspect(first.granted.key)).recoveryRequired, true, 'recoveryRequired until the recovering holder records');
        expectMatch(await store.checkpoint({ fence: recovering.fence, json: '{"resumed":7}' }), { ok: true });
        expectSame((await store.inspect(first.granted.key)).recoveryRequired, false, 'recoveryRequired once recorded');
      },
    );

    runner.it('a permit released with a hold is skipped until the hold is over; full says when', async (...args) => {
      const given = fresh(args);
      if (given === null) return;
      const { store, semaphore } = given;
      const a = await mustAcquire(store, acquireCommand(semaphore, 2, 'w1'));
      const b = await mustAcquire(store, acquireCommand(semaphore, 2, 'w2'));
      expectMatch(await store.release({ fence: a.fence, holdMs: 30_000 }), { ok: true });
      const { heldUntil } = await store.inspect(a.granted.key);
      expectTrue(heldUntil !== null, 'the released permit is held back');
      const full = await store.acquirePermit(acquireCommand(semaphore, 2, 'w3'));
      expectMatch(full, { ok: false, reason: 'full', live: [{ index: 2 }], unavailable: [1] });
      if (!full.ok)
        expectSame(full.nextAt, Math.min(heldUntil as number, b.granted.expiresAt as number), 'full.nextAt: the hold ends first');
      expectMatch(await store.acquirePermit(acquireCommand(semaphore, 3, 'w3')), { ok: true, index: 3 });
    });

    runner.it(
      'a permit is an ordinary key: renew, fenced write with a checkpoint, claim and release on it; claim-next never grants it',
      async (...args) => {
        const given = fresh(args);
        if (given === null) return;
        const { store, semaphore } = given;
        const { granted, fence } = await mustAcquire(store, acquireCommand(semaphore, 2, 'w1'));
        expectMatch(await store.renew({ fence, ttlMs: SPEC_TTL_MS }), { ok: true, token: granted.token });
        expectMatch(await context.harness.fencedAppend(fence, 'by w1', { checkpointJson: '{"n":1}' }), { ok: true, token: granted.token });
        expectEqual(await context.harness.readLedger(granted.key), ['by w1'], 'the permit key ledger');
        expectMatch(await store.inspect(granted.key), { checkpoint: { json: '{"n":1}', token: granted.token }, grant: { holder: 'w1' } });
        expectMatch(
          await store.claim({
            key: granted.key,
            holder: 'w2',
            runId: null,
            secret: newSecret(),
            ttlMs: SPEC_TTL_MS,
            attributes: {},
            recovering: false,
          }),
          { ok: false, reason: 'held', token: granted.token, holder: 'w1' },
        );
        const { addItems, claimNext } = store;
        if (typeof addItems === 'function' && typeof claimNext === 'function') {
          // NOTE: a set of the semaphore's name (its keys share the permits' hash tag) offers its items, never a permit.
          const item = `{${semaphore}}:job`;
          await addItems.call(store, { set: semaphore, keys: [item] });
          const claimNextCommand = (holder: string) => ({
            set: semaphore,
            holder,
            runId: null,
            secret: newSecret(),
            ttlMs: SPEC_TTL_MS,
            attributes: {},
            onExpired: 'take-over' as const,
          });
          expectMatch(await claimNext.call(store, claimNextCommand('w3')), { ok: true, key: item });
          expectMatch(await claimNext.call(store, claimNextCommand('w4')), { ok: false, reason: 'idle' });
        }
        expectMatch(await store.release({ fence, checkpointJson: null }), { ok: true, alreadyReleased: false });
        expectMatch(await store.acquirePermit(acquireCommand(semaphore, 1, 'w5')), {
          ok: true,
          index: 1,
          previous: { kind: 'released', token: granted.token },
          checkpoint: null,
        });
      },
    );

    runner.it('refuses a bad limit or semaphore name with InvalidArgumentError and creates no record', async (...args) => {
      const given = fresh(args);
      if (given === null) return;
      const { store, semaphore } = given;
      const bad: AcquirePermitCommand[] = [
        acquireCommand(semaphore, 0, 'w1'),
        acquireCommand(semaphore, 1.5, 'w1'),
        acquireCommand(semaphore, 1001, 'w1'),
        acquireCommand(semaphore, Number.NaN, 'w1'),
        acquireCommand(semaphore, -1, 'w1'),
        acquireCommand(`${semaphore}{x}`, 1, 'w1'),
        acquireCommand(`${semaphore}}`, 1, 'w1'),
        acquireCommand('', 1, 'w1'),
      ];
      for (const command of bad) {
        let error: unknown = null;
        try {
          await store.acquirePermit(command);
        } catch (caught) {
          error = caught;
        }
        expectTrue(
          isLeaseError(error, 'INVALID_ARGUMENT'),
          `InvalidArgumentError for ${command.semaphore} limit ${command.limit}, got ${String(error)}`,
        );
      }
      for (const key of [permitKey(semaphore, 1), permitKey(`${semaphore}{x}`, 1), permitKey(`${semaphore}}`, 1)])
        expectMatch(await store.inspect(key), { exists: false }, `inspect(${key}) after the refusals`);
      expectMatch(
        await store.acquirePermit(acquireCommand(semaphore, 1, 'w1')),
        { ok: true, index: 1 },
        'a good acquire after the refusals',
      );
    });
  });
}
