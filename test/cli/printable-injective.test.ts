/**
 * `printable` is injective and `parsePrintable` is its inverse (issue 29 item 9): two different texts never
 * print the same, so pasting a printed key names that key and no other.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parsePrintable, printable } from '../../src/printable.js';

/** Text rich in what printable escapes: backslashes, the letters of escapes, controls, separators, bidi. */
const tricky = fc
  .array(
    fc.oneof(
      fc.constantFrom('\\', 'n', 'u', '0', '1', 'b', '\n', '\r', '\t', '\u001b', '\u009b', '\u2028', '\u202e', '\u2066', '\u007f', 'x'),
      fc.string({ unit: 'grapheme-composite', maxLength: 3 }),
    ),
    { maxLength: 16 },
  )
  .map((parts) => parts.join(''));

describe('printable', () => {
  it('is injective: different texts print differently (property)', () => {
    fc.assert(
      fc.property(tricky, tricky, (a, b) => {
        fc.pre(a !== b);
        expect(printable(a)).not.toBe(printable(b));
      }),
      { numRuns: 5000 },
    );
  });

  it('parsePrintable reads back exactly what was printed (property), and the output is one safe line', () => {
    fc.assert(
      fc.property(fc.oneof(tricky, fc.string({ unit: 'binary' })), (text) => {
        const printed = printable(text);
        expect(parsePrintable(printed)).toBe(text);
        // biome-ignore lint/suspicious/noControlCharactersInRegex: the property is that no control character is printed
        expect(printed).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
      }),
      { numRuns: 5000 },
    );
  });

  it('the twin keys of the report print differently', () => {
    expect(printable('twin\nkey')).toBe('twin\\nkey');
    expect(printable('twin\\nkey')).toBe('twin\\\\nkey');
    expect(printable('C:\\temp')).toBe('C:\\\\temp');
  });

  it('parsePrintable refuses what printable never writes', () => {
    for (const bad of ['a\\', 'a\\q', 'a\\u12', 'a\\u12g4', '\\x41']) expect(parsePrintable(bad)).toBeNull();
    expect(parsePrintable('\\u0041\\\\\\t')).toBe('A\\\t');
  });
});
