import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { mintToken } from '../../src/fence/token.js';

const tokenArb = fc.bigInt({ min: 0n, max: 1n << 80n });

describe('mintToken', () => {
  test.prop([tokenArb])('without a floor, the next token is exactly one more than the last', (previous) => {
    expect(mintToken(previous)).toBe(previous + 1n);
  });

  test.prop([tokenArb, tokenArb])(
    'the next token is above the last and at least the floor: max(previous + 1, floor)',
    (previous, floor) => {
      const next = mintToken(previous, floor);
      expect(next > previous).toBe(true);
      expect(next >= floor).toBe(true);
      expect(next).toBe(previous + 1n > floor ? previous + 1n : floor);
    },
  );

  test.prop([tokenArb, fc.array(tokenArb, { maxLength: 20 })])(
    'minting repeatedly (with any floors) yields strictly increasing tokens',
    (start, floors) => {
      let last = start;
      for (const floor of floors) {
        const next = mintToken(last, floor);
        expect(next > last).toBe(true);
        last = next;
      }
    },
  );

  test.prop([fc.bigInt({ min: 1n << 53n, max: 1n << 64n })])('tokens past 2^53 keep exact precision', (previous) => {
    expect(mintToken(previous) - previous).toBe(1n);
  });
});
