/**
 * The semaphore race on Redis, shared by the standalone race test and the Cluster one: clients (each its own
 * connection and store) acquire permits of one semaphore at once, each doing something with its grant: release,
 * a fenced write (RPUSH of its token on the permit's ledger, in the semaphore's slot) then release, or abandon it
 * (a short TTL, never released: the next acquire takes it over). A `full` waits a little (never past its nextAt)
 * and tries again. Checked from the outcomes on the server's clock (`test/permits/race-checks.ts`) and from the
 * ledgers: each permit's fenced writes landed in token order, every one of them let through.
 */
import { expect } from 'vitest';
import { hashTagOf, type RedisStore } from '../../src/adapters/redis/index.js';
import type { RedisConnection } from '../../src/adapters/redis/connection.js';
import { permitKey } from '../../src/fence/permits.js';
import type { Fence } from '../../src/fence/types.js';
import { expectAtMostLive, expectTokensRise, permitCommand, type PermitGrantSeen } from '../permits/race-checks.js';

export type PermitStore = RedisStore & Required<Pick<RedisStore, 'acquirePermit'>>;

type Fate = 'release' | 'write-then-release' | 'abandon';
const FATES: readonly Fate[] = ['release', 'write-then-release', 'write-then-release', 'release', 'abandon'];

/** What a race ran: how many grants, fulls and abandoned grants, for the test to report and bound. */
export interface PermitRaceRun {
  readonly grants: readonly PermitGrantSeen[];
  readonly fulls: number;
  readonly abandoned: number;
  readonly writes: number;
}

/** The ledger of a permit: a list in the semaphore's slot. */
export const ledgerOf = (prefix: string, key: string): string => `${prefix}${hashTagOf(key)}:ledger:${key}`;

/**
 * Runs `stores.length` acquirers over `semaphore` (limit `limit`) until `total` grants were made, then checks at
 * most `limit` live at once, tokens rising across the semaphore, and each permit's ledger in token order.
 */
export async function racePermits(
  stores: readonly PermitStore[],
  raw: RedisConnection,
  options: { readonly prefix: string; readonly semaphore: string; readonly limit: number; readonly total: number },
): Promise<PermitRaceRun> {
  const { prefix, semaphore, limit, total } = options;
  const grants: PermitGrantSeen[] = [];
  let fulls = 0;
  let abandoned = 0;
  let writes = 0;
  let draw = 0;
  const acquirer = async (index: number): Promise<void> => {
    const store = stores[index] as PermitStore;
    const holder = `w${index}`;
    while (grants.length < total) {
      const fate = FATES[(index * 3 + draw++) % FATES.length] as Fate;
      const command = permitCommand(semaphore, holder, limit, fate === 'abandon' ? 25 : 10_000);
      const outcome = await store.acquirePermit(command);
      if (!outcome.ok) {
        fulls += 1;
        const wait = outcome.nextAt === null ? 2 : Math.min(5, Math.max(1, outcome.nextAt - outcome.now));
        await new Promise((resolve) => setTimeout(resolve, wait));
        continue;
      }
      expect(outcome.live).toBeLessThanOrEqual(limit);
      const held: PermitGrantSeen = {
        key: outcome.key,
        token: outcome.token,
        acquiredAt: outcome.acquiredAt,
        end: outcome.expiresAt as number,
      };
      grants.push(held);
      if (fate === 'abandon') {
        abandoned += 1;
        continue;
      }
      const fence: Fence = { key: outcome.key, token: outcome.token, secret: command.secret, holder, runId: command.runId };
      if (fate === 'write-then-release') {
        const written = await store.fencedWrite(fence, (tx) => tx.call('RPUSH', ledgerOf(prefix, fence.key), String(fence.token)), {
          checkpointJson: `{"by":"${holder}"}`,
        });
        expect(written, `${holder}'s fenced write under ${fence.key} ${fence.token}`).toMatchObject({ ok: true });
        writes += 1;
      }
      const released = await store.release({ fence });
      expect(released, `${holder}'s release of ${fence.key} ${fence.token}`).toMatchObject({ ok: true });
      if (released.ok) held.end = released.now;
    }
  };
  await Promise.all(stores.map((_, index) => acquirer(index)));

  expectAtMostLive(grants, limit);
  expectTokensRise(grants);
  let ledgered = 0;
  for (let index = 1; index <= limit; index += 1) {
    const ledger = ((await raw.send(['LRANGE', ledgerOf(prefix, permitKey(semaphore, index)), '0', '-1'])) as string[]).map(BigInt);
    expect(ledger).toEqual([...ledger].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    ledgered += ledger.length;
  }
  expect(ledgered).toBe(writes);
  expect(new Set(grants.map((grant) => grant.key)).size).toBeLessThanOrEqual(limit);
  return { grants, fulls, abandoned, writes };
}
