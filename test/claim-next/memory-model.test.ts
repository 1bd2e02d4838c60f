/**
 * Claim-next on the memory store against the model kept from outcomes (outcome-model.ts), on a manual clock.
 */
import { describe, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createManualClock } from '../../src/clock.js';
import { scaled } from '../support/scale.js';
import { runClaimNextModel } from './outcome-model.js';

const SET = 'model';

describe('claim-next on memory, against a model kept from outcomes', () => {
  it('grants the claimable item available longest (then by key), idle exactly when none is, with the right nextAt', async () => {
    await runClaimNextModel({
      keyCount: 5,
      timing: { claimNextTtlMs: 300, ttlMs: 300, holdMs: 300, delaysMs: [0, 0, 50, 400], advanceMs: 400 },
      maxLength: 80,
      runs: scaled(200),
      target: async (keyCount) => {
        const clock = createManualClock(1_000_000);
        return {
          store: createMemoryStore({ clock }),
          set: SET,
          keys: Array.from({ length: keyCount }, (_, index) => `{${SET}}:${String.fromCharCode(97 + index)}`),
          advance: async (ms) => clock.advance(ms),
        };
      },
    });
  });
});
