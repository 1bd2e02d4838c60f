/**
 * Issue 29 item 19: a checkpoint with its own non-enumerable `toJSON` (which `JSON.stringify` calls, and a
 * copy of the enumerable fields skips) is refused with INVALID_ARGUMENT before any I/O on every store, by
 * `checkpoint`, `fencedWrite`'s checkpoint and `release`'s final one, as other lossy values are.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { answerCall, lazy, type Call, type FuzzTarget } from './fuzz-property.js';
import { postgresFuzzTarget, redisFuzzTarget, sqliteFuzzTarget, type Closers } from './fuzz-targets.js';
import { memoryFuzzTarget } from './memory-fuzz-target.js';

const closers: Closers = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

/** `target` with its own non-enumerable `toJSON`. */
const hiddenToJson = <T extends object>(target: T): T =>
  Object.defineProperty(target, 'toJSON', { value: () => ({ step: 'from toJSON' }) });

const checkpoints: Record<string, () => unknown> = {
  'an object': () => hiddenToJson({ step: 1 }),
  'an array': () => hiddenToJson([1, 2]),
  'a nested object': () => ({ done: [1, hiddenToJson({ step: 1 })] }),
  'a null-prototype object': () => hiddenToJson(Object.assign(Object.create(null) as object, { step: 1 })),
};

// NOTE: a lazy recipe, made when the call runs: answerCall copies a plain object given as an argument.
const callsWith = (make: () => unknown): Call[] => [
  { method: 'checkpoint', args: ['real', lazy(make), undefined] },
  { method: 'fencedWrite', args: ['real', '$write', { checkpoint: lazy(make) }] },
  { method: 'release', args: ['real', { checkpoint: lazy(make) }] },
];

const targets: Record<string, () => Promise<FuzzTarget>> = {
  memory: () => memoryFuzzTarget(),
  sqlite: () => sqliteFuzzTarget(closers),
  postgres: () => postgresFuzzTarget(closers),
  redis: () => redisFuzzTarget(closers),
};

describe('a checkpoint with a non-enumerable toJSON is refused on every store', () => {
  it.each(Object.keys(targets))('%s: INVALID_ARGUMENT, no I/O, the lease unchanged', async (name) => {
    const target = await targets[name]!();
    for (const [shape, make] of Object.entries(checkpoints)) {
      for (const recipe of callsWith(make)) {
        // NOTE: answerCall checks that a refusal sent no I/O and left every lease as it was.
        expect(await answerCall(target, recipe), `${recipe.method} with ${shape}`).toEqual({ kind: 'invalid', answer: 'INVALID_ARGUMENT' });
      }
    }
  });
});
