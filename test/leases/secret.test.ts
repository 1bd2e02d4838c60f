import { describe, expect, it } from 'vitest';
import { newSecret } from '../../src/secret.js';
import { SECRET_PATTERN } from '../../src/validate.js';

describe('newSecret', () => {
  it('makes 32 lowercase hex digits, never the same twice, across many CSPRNG fills and encodings', () => {
    // NOTE: 5,000 secrets cross the 256-secret CSPRNG fill and the 8-secret hex encoding many times over.
    const seen = new Set<string>();
    for (let index = 0; index < 5_000; index += 1) {
      const secret = newSecret();
      expect(secret).toMatch(SECRET_PATTERN);
      expect(secret).toHaveLength(32);
      seen.add(secret);
    }
    expect(seen.size).toBe(5_000);
  });

  it('uses every digit: each of the 16 hex digits appears at each of the 32 positions', () => {
    const positions = Array.from({ length: 32 }, () => new Set<string>());
    for (let index = 0; index < 2_000; index += 1) {
      const secret = newSecret();
      for (let at = 0; at < 32; at += 1) positions[at]?.add(secret[at] as string);
    }
    for (const digits of positions) expect(digits.size).toBe(16);
  });
});
