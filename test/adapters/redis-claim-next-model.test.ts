/**
 * Claim-next on real redis-server against the model kept from outcomes (test/claim-next/outcome-model.ts): no
 * manual clock on Redis, so time passes for real, TTLs, holds and delays are tens of ms, and the model judges each
 * step at the `now` its outcome reports (the server's clock of that script). Redis's own check, after every step:
 * the set's sorted set holds exactly each item's availability as the model computes it.
 */
import { describe, expect, it } from 'vitest';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { toConnection } from '../../src/adapters/redis/connection.js';
import { runClaimNextModel, type ItemStore } from '../claim-next/outcome-model.js';
import { scaled } from '../support/scale.js';
import { freshPrefix, openClient, readyIndex, sharedRedisUrl, type RedisClientKind } from './redis-harness.js';

const SET = 'model';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe.each<RedisClientKind>(['ioredis', 'node-redis'])('claim-next on redis (%s), against a model kept from outcomes', (kind) => {
  it('grants the claimable item available longest (then by key), idle exactly when none is, with the right nextAt; the index equals the model', async () => {
    const { client, close } = await openClient(kind, await sharedRedisUrl());
    const raw = toConnection(client);
    try {
      await runClaimNextModel({
        keyCount: 5,
        timing: { claimNextTtlMs: 40, ttlMs: 40, holdMs: 40, delaysMs: [0, 0, 5, 40], advanceMs: 40 },
        maxLength: 40,
        runs: scaled(40),
        target: async (keyCount) => {
          const prefix = freshPrefix('lf-next-model');
          return {
            store: createRedisStore({ client, prefix }) as ItemStore,
            set: SET,
            keys: Array.from({ length: keyCount }, (_, index) => `{${SET}}:${String.fromCharCode(97 + index)}`),
            advance: sleep,
            // NOTE: the index itself: each item scored by its availability, nothing else in it.
            check: async (expected) => {
              expect(await readyIndex(raw, prefix, SET)).toEqual(expected);
            },
          };
        },
      });
    } finally {
      await close();
    }
  }, 180_000);
});
