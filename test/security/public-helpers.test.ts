/**
 * The exported helpers that are not lease operations (`createManualClock`, `hashSecret`) refuse a bad value
 * with INVALID_ARGUMENT, like every other input: a NaN or infinite manual clock would make every lease on it
 * live for ever (or expire at once), and a raw TypeError from inside `hashSecret` is not a `LeaseError`.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { isLeaseError } from '../../src/index.js';
import { hashSecret } from '../../src/store-entry.js';
import { createManualClock } from '../../src/adapters/memory/index.js';

const notFiniteNumber = fc.oneof(
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY),
  fc.string(),
  fc.bigInt(),
  fc.boolean(),
  fc.constant(null),
  fc.object(),
);

function invalidArgument(act: () => unknown): boolean {
  try {
    act();
  } catch (error) {
    return isLeaseError(error, 'INVALID_ARGUMENT');
  }
  return false;
}

describe('createManualClock', () => {
  test.prop([notFiniteNumber])('refuses a start, a step or a setting that is not a finite number, and keeps its time', (bad) => {
    expect(invalidArgument(() => createManualClock(bad as unknown as number))).toBe(true);
    const clock = createManualClock(1_000);
    expect(invalidArgument(() => clock.advance(bad as unknown as number))).toBe(true);
    expect(invalidArgument(() => clock.set(bad as unknown as number))).toBe(true);
    expect(clock()).toBe(1_000);
  });

  it('only moves forward (INVALID_ARGUMENT, time unchanged)', () => {
    const clock = createManualClock(1_000);
    expect(invalidArgument(() => clock.advance(-5))).toBe(true);
    clock.advance(0);
    clock.advance(2.5);
    expect(clock()).toBe(1_002.5);
    clock.set(0);
    expect(clock()).toBe(0);
    expect(createManualClock()()).toBe(0);
  });
});

describe('hashSecret', () => {
  test.prop([fc.oneof(fc.integer(), fc.constant(undefined), fc.constant(null), fc.object(), fc.bigInt())])(
    'refuses a secret that is not a string',
    (bad) => {
      expect(invalidArgument(() => hashSecret(bad as unknown as string))).toBe(true);
    },
  );

  it('hashes a string to lowercase hex SHA-256', () => {
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
