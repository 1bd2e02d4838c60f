/**
 * A stored checkpoint that is not valid JSON (written around leasefence, or damaged in the store) never
 * bricks a key: whatever store reports it, claim and inspect read it as the unreadable marker.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import type { CheckpointRecord } from '../../src/fence/types.js';
import { createLeases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';

/** The memory store, except that every checkpoint it reports has damaged JSON text (as a store could). */
function storeWithDamagedCheckpoints(): Store {
  const store = createMemoryStore();
  const damage = (checkpoint: CheckpointRecord | null) => (checkpoint === null ? null : { ...checkpoint, json: '{"batch": 4' });
  return {
    ...store,
    claim: async (command) => {
      const outcome = await store.claim(command);
      return outcome.ok || outcome.reason === 'recovery-required' ? { ...outcome, checkpoint: damage(outcome.checkpoint) } : outcome;
    },
    inspect: async (key) => {
      const inspection = await store.inspect(key);
      return { ...inspection, checkpoint: damage(inspection.checkpoint) };
    },
  };
}

describe('a stored checkpoint that is not valid JSON', () => {
  it('reads as the unreadable marker in claim and inspect, and the next grant can replace it', async () => {
    const leases = createLeases(storeWithDamagedCheckpoints(), { holder: 'w' });
    const first = await leases.claimOrThrow('job:1');
    await leases.checkpointOrThrow(first, { batch: 4 });
    await leases.release(first);
    const marker = { 'leasefence:unreadable-checkpoint': true, reason: 'the stored checkpoint is not valid JSON', length: 11 };
    expect((await leases.inspect('job:1')).checkpoint?.value).toEqual(marker);
    const second = await leases.claim('job:1');
    expect(second.ok && second.checkpoint?.value).toEqual(marker);
    if (!second.ok) return;
    expect(await leases.fencedWrite(second.lease, () => 'rewritten', { checkpoint: { batch: 0 } })).toMatchObject({ ok: true });
  });
});
