/** The Redis listing decodes every record key name the adapter writes back to its lease key, and nothing else. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { leaseKeyOf, matchPattern } from '../../src/adapters/redis/list.js';

/** Redis' glob, enough for the patterns `matchPattern` builds (`*` and backslash escapes). */
function globMatches(pattern: string, text: string): boolean {
  let source = '';
  for (let index = 0; index < pattern.length; index += 1) {
    const char = pattern[index] as string;
    if (char === '\\') source += (pattern[++index] ?? '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    else if (char === '*') source += '[\\s\\S]*';
    else source += char.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`).test(text);
}

const name = fc.string({ unit: fc.constantFrom('a', ':', '{', '}', '#', '*', '?', '[', '\\', 'é'), minLength: 1, maxLength: 12 });

describe('list: redis key names', () => {
  it('decodes the record name of any lease key, and matches it with the pattern of any prefix of it', () => {
    fc.assert(
      fc.property(name, fc.nat(), fc.constantFrom('leasefence:', 'app:*x:'), (key, cut, namespace) => {
        const names = keyNames(namespace);
        const record = names.record(key, 'lease');
        expect(leaseKeyOf(namespace, record)).toBe(key);
        expect(globMatches(matchPattern(namespace, key.slice(0, cut % (key.length + 1))), record)).toBe(true);
        expect(leaseKeyOf(namespace, names.record(key, 'gate'))).toBeNull();
      }),
    );
  });
});
