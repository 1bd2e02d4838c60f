/** The CLI's plain-text formatting: aligned tables and relative times. */
import { describe, expect, it } from 'vitest';
import { formatDuration, formatRelative } from '../../src/cli/durations.js';
import { formatTable } from '../../src/cli/table.js';

describe('CLI formatting', () => {
  it('aligns columns by code points, two spaces apart, with no trailing spaces', () => {
    expect(
      formatTable(
        ['KEY', 'STATE'],
        [
          ['job:1', 'live'],
          ['é', 'released'],
          ['a-long-key', ''],
        ],
      ),
    ).toBe(['KEY         STATE', 'job:1       live', 'é           released', 'a-long-key'].join('\n'));
  });

  it('says durations in the largest whole unit', () => {
    expect(
      [0, 999, 12_400, 119_999, 120_000, 3_599_000, 7_200_000, 6 * 3_600_000, 47 * 3_600_000, 49 * 3_600_000, -5].map(formatDuration),
    ).toEqual(['0 s', '0 s', '12 s', '119 s', '2 min', '59 min', '2 h', '6 h', '47 h', '2 d', '0 s']);
    expect(formatRelative(12_000, 0)).toBe('in 12 s');
    expect(formatRelative(0, 12_000)).toBe('12 s ago');
  });
});
