/**
 * `assertStorableText`'s one-pass check (no regex unless the text has a surrogate) accepts exactly the text
 * a store can keep: no NUL, every surrogate paired.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { assertStorableText } from '../../src/validate.js';

/** The reference: scans pairs by hand, independent of the code under test. */
function storable(text: string): boolean {
  for (let index = 0; index < text.length; index += 1) {
    const unit = text.charCodeAt(index);
    if (unit === 0) return false;
    if (unit >= 0xdc00 && unit <= 0xdfff) return false;
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const low = index + 1 < text.length ? text.charCodeAt(index + 1) : -1;
      if (!(low >= 0xdc00 && low <= 0xdfff)) return false;
      index += 1;
    }
  }
  return true;
}

/** UTF-16 units biased to the interesting ones: ASCII, NUL, high and low surrogates, other BMP text. */
const unit = fc.oneof(
  fc.integer({ min: 0x20, max: 0x7e }),
  fc.constant(0),
  fc.integer({ min: 0xd800, max: 0xdbff }),
  fc.integer({ min: 0xdc00, max: 0xdfff }),
  fc.integer({ min: 0x80, max: 0xffff }),
);
const text = fc.array(unit, { maxLength: 12 }).map((units) => String.fromCharCode(...units));

describe('assertStorableText', () => {
  it('accepts a text if and only if it has no NUL and no lone surrogate', () => {
    fc.assert(
      fc.property(text, (value) => {
        let accepted = true;
        try {
          assertStorableText('key', value);
        } catch (error) {
          expect(error).toBeInstanceOf(InvalidArgumentError);
          accepted = false;
        }
        expect(accepted).toBe(storable(value));
      }),
      { numRuns: 5_000 },
    );
  });

  it('names what is wrong: NUL before a lone surrogate, a paired surrogate is fine', () => {
    expect(() => assertStorableText('key', 'a\u0000\uD800')).toThrow(/NUL/);
    expect(() => assertStorableText('key', 'a\uD800b')).toThrow(/lone UTF-16 surrogate/);
    expect(() => assertStorableText('key', '\uDC00')).toThrow(/lone UTF-16 surrogate/);
    expect(() => assertStorableText('key', 'job:\uD83D\uDE00')).not.toThrow();
  });
});
