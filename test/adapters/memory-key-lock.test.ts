/**
 * Race property of the memory store's per-key lock, whose fast path runs a task inside `run` when nothing is
 * pending on its key: whatever the interleaving (`fc.scheduler`), tasks on one key never overlap and start
 * in the order `run` was called, `isIdle` is never true while a task on the key is queued or running, tasks on other keys are not held up, and each caller gets its own task's
 * value or error.
 */
import { fc, test } from '@fast-check/vitest';
import { expect } from 'vitest';
import { KeyLock } from '../../src/adapters/memory/key-lock.js';

type Kind = 'sync' | 'async' | 'throws' | 'rejects';

const callArbitrary = fc.record({
  key: fc.constantFrom('a', 'b'),
  kind: fc.constantFrom<Kind>('sync', 'async', 'throws', 'rejects'),
  steps: fc.integer({ min: 0, max: 3 }),
});

test.prop([fc.scheduler(), fc.array(callArbitrary, { minLength: 1, maxLength: 12 })], { numRuns: 300 })(
  'tasks on one key never overlap and start in call order; idle means none queued or running; each caller gets its own outcome',
  async (scheduler, calls) => {
    const lock = new KeyLock();
    const active = new Map<string, number>();
    /** Calls on each key whose task has not finished yet (queued or running). */
    const unfinished = new Map<string, number>();
    const finish = (key: string): void => {
      unfinished.set(key, (unfinished.get(key) ?? 0) - 1);
    };
    const called: Record<string, number[]> = { a: [], b: [] };
    const started: Record<string, number[]> = { a: [], b: [] };
    const settled: Promise<void>[] = [];

    const task = (index: number, key: string, kind: Kind, steps: number) => (): number | Promise<number> => {
      expect(active.get(key) ?? 0).toBe(0);
      started[key]?.push(index);
      if (kind === 'sync' || kind === 'throws') finish(key);
      if (kind === 'sync') return index;
      if (kind === 'throws') throw new Error(`task ${index}`);
      active.set(key, 1);
      return (async () => {
        for (let step = 0; step < steps; step += 1) await scheduler.schedule(Promise.resolve(`${index}:step`));
        active.set(key, 0);
        finish(key);
        if (kind === 'rejects') throw new Error(`task ${index}`);
        return index;
      })();
    };

    calls.forEach(({ key, kind, steps }, index) => {
      settled.push(
        scheduler.schedule(Promise.resolve(`call ${index}`)).then(async () => {
          called[key]?.push(index);
          // NOTE: the memory store runs a step without the lock when the key is idle: never while a task is queued or running.
          if (lock.isIdle(key)) expect(unfinished.get(key) ?? 0).toBe(0);
          unfinished.set(key, (unfinished.get(key) ?? 0) + 1);
          const result = lock.run(key, task(index, key, kind, steps));
          if (kind === 'sync' || kind === 'async') expect(await result).toBe(index);
          else await expect(result).rejects.toThrow(`task ${index}`);
        }),
      );
    });
    // NOTE: waitFor, not waitAll: a task queued behind another schedules its steps several ticks later.
    await scheduler.waitFor(Promise.all(settled));
    expect(started).toEqual(called);
  },
);
