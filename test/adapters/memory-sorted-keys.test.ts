/**
 * The memory store's sorted key index (sorted-keys.ts) against a plain sorted array: whatever keys are added and
 * removed, in whatever order (chunks split and emptied), walking from any `seek` yields exactly the model's keys
 * from that bound on, in code-unit order.
 */
import { fc, test } from '@fast-check/vitest';
import { expect } from 'vitest';
import { SortedKeys, type KeyPosition } from '../../src/adapters/memory/sorted-keys.js';

/** Short keys over a small alphabet (with a surrogate pair and a high BMP character): many collide and share prefixes. */
const keyArbitrary = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'é', '😀', '\uffff'), maxLength: 4 });
const opArbitrary = fc.record({ remove: fc.boolean(), key: keyArbitrary });

/** Every key from `position` on. */
function walk(keys: SortedKeys, position: KeyPosition): string[] {
  const seen: string[] = [];
  for (let at = position, key = keys.at(at); key !== undefined; at = keys.next(at), key = keys.at(at)) seen.push(key);
  return seen;
}

test.prop([fc.array(opArbitrary, { maxLength: 400 }), fc.integer({ min: 1, max: 6 }), keyArbitrary, fc.boolean()], { numRuns: 300 })(
  'after any adds and removes, a walk from any seek is the model from that bound on',
  (ops, chunk, probe, strict) => {
    const keys = new SortedKeys(chunk);
    const model = new Set<string>();
    for (const { remove, key } of ops) {
      if (remove) {
        keys.delete(key);
        model.delete(key);
      } else {
        keys.add(key);
        model.add(key);
      }
    }
    // NOTE: the default sort compares UTF-16 code units, the order `list` promises.
    const sorted = [...model].sort();
    expect(walk(keys, keys.seek('', false))).toEqual(sorted);
    expect(walk(keys, keys.seek(probe, strict))).toEqual(sorted.filter((key) => (strict ? key > probe : key >= probe)));
  },
);

test('keys that arrive in order, then leave from the middle, with the default chunk (splits at 1,024)', () => {
  const keys = new SortedKeys();
  const all = Array.from({ length: 5000 }, (_, index) => `key:${String(index).padStart(5, '0')}`);
  for (const key of all) keys.add(key);
  for (const key of all.slice(1000, 4000)) keys.delete(key);
  const left = [...all.slice(0, 1000), ...all.slice(4000)];
  expect(walk(keys, keys.seek('', false))).toEqual(left);
  expect(keys.at(keys.seek('key:00999', true))).toBe('key:04000');
});
