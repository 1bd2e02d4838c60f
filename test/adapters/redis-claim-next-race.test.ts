/**
 * Claim-next on real redis-server under concurrency (issue 24's race test): 8 clients (4 ioredis, 4 node-redis,
 * each its own connection and store) claim-next over 100 items at once, each doing something with what it got:
 * release, release with a hold, a fenced write (with a checkpoint) then release, or crash (let the grant expire,
 * to be taken over). Checked on the server's clock, from the outcomes: each item has at most one live holder at
 * a time (a grant starts no earlier than the previous one of its key was released or expired) with tokens rising;
 * fenced writes land in token order; none starved (the first 100 grants are the 100 items, each once: never-claimed
 * items were available longest); none lost (once every grant ended, a sweeper claims each item once, then idle).
 */
import { describe, expect, it } from 'vitest';
import { createRedisStore, hashTagOf, type RedisStore } from '../../src/adapters/redis/index.js';
import type { ClaimNextCommand } from '../../src/fence/claim-next.js';
import type { Fence } from '../../src/fence/types.js';
import { toConnection } from '../../src/adapters/redis/connection.js';
import {
  expectEveryItemClaimable,
  expectNoneStarved,
  expectOneHolderAtATime,
  raceCommand,
  raceKeys,
  type GrantSeen,
} from '../claim-next/race-checks.js';
import { freshPrefix, openClient, sharedRedisUrl, type RedisClientKind } from './redis-harness.js';

type ItemStore = RedisStore & Required<Pick<RedisStore, 'addItems' | 'removeItems' | 'claimNext'>>;

const SET = 'race';
const ITEMS = 100;
const CLAIMERS = 8;
const ROUNDS = 40;
const TTL_MS = 150;
const HOLD_MS = 30;
const keys = raceKeys(SET, ITEMS);
const commandFor = (holder: string): ClaimNextCommand => raceCommand(SET, holder, TTL_MS);

type Fate = 'release' | 'release-hold' | 'write-then-release' | 'crash';
const FATES: Fate[] = ['release', 'release', 'release-hold', 'write-then-release', 'write-then-release', 'crash'];

describe('claim-next on redis: 8 concurrent clients over 100 items', () => {
  it('one live holder per item at a time, fenced writes in token order, none starved, none lost', async () => {
    const url = await sharedRedisUrl();
    const prefix = freshPrefix('lf-next-race');
    const kinds = Array.from({ length: CLAIMERS }, (_, index): RedisClientKind => (index % 2 === 0 ? 'ioredis' : 'node-redis'));
    const clients = await Promise.all(kinds.map((kind) => openClient(kind, url)));
    const stores = clients.map(({ client }) => createRedisStore({ client, prefix }) as ItemStore);
    const raw = toConnection((clients[0] as { client: Parameters<typeof toConnection>[0] }).client);
    const ledgerKey = (key: string): string => `${prefix}ledger:${hashTagOf(key)}:${key}`;
    try {
      const [first] = stores as [ItemStore];
      expect(await first.addItems({ set: SET, keys })).toMatchObject({ ok: true, added: keys });
      const grants: GrantSeen[] = [];
      let draw = 0;
      const claimer = async (index: number): Promise<void> => {
        const store = stores[index] as ItemStore;
        const holder = `w${index}`;
        for (let round = 0; round < ROUNDS; round += 1) {
          const command = commandFor(holder);
          const outcome = await store.claimNext(command);
          if (!outcome.ok) {
            await new Promise((resolve) => setTimeout(resolve, 2));
            continue;
          }
          const held: GrantSeen = {
            key: outcome.key,
            token: outcome.token,
            acquiredAt: outcome.acquiredAt,
            end: outcome.expiresAt as number,
          };
          grants.push(held);
          const fence: Fence = { key: outcome.key, token: outcome.token, secret: command.secret, holder, runId: command.runId };
          const fate = FATES[(index * 7 + draw++) % FATES.length] as Fate;
          if (fate === 'crash') continue;
          if (fate === 'write-then-release') {
            await store.fencedWrite(fence, (tx) => tx.call('RPUSH', ledgerKey(fence.key), String(fence.token)), {
              checkpointJson: `{"by":"${holder}"}`,
            });
          }
          const released = await store.release({ fence, ...(fate === 'release-hold' ? { holdMs: HOLD_MS } : {}) });
          if (released.ok) held.end = released.now;
        }
      };
      await Promise.all(stores.map((_, index) => claimer(index)));

      expectOneHolderAtATime(grants);
      for (const key of keys) {
        const ledger = ((await raw.send(['LRANGE', ledgerKey(key), '0', '-1'])) as string[]).map(BigInt);
        expect(ledger, key).toEqual([...ledger].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      }
      expectNoneStarved(grants, ITEMS);
      expect(grants.length).toBeGreaterThan(ITEMS);
      // NOTE: none lost: once every grant and hold has ended, each item is claimable exactly once more.
      await new Promise((resolve) => setTimeout(resolve, TTL_MS + HOLD_MS + 20));
      await expectEveryItemClaimable(first, SET, ITEMS, 60_000);
    } finally {
      await Promise.all(clients.map(({ close }) => close()));
    }
  }, 120_000);
});
