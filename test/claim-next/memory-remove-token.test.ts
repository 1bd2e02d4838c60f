/**
 * A regression of the memory store's store-wide token floor (issue 24's `remove`): a key removed and claimed
 * again must never be granted a token its removed record had. It failed on 3b14e18 (the floor was the highest
 * token issued, which `mintToken` hands out again when it is not below it).
 */
import { expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/memory-store.js';

const claimOf = (key: string, secret: string) =>
  ({ key, holder: 'h', runId: null, secret: secret.repeat(32), ttlMs: 1000, attributes: {}, recovering: false }) as const;

it('a key removed and claimed again gets a token above every token its removed record had', async () => {
  const store = createMemoryStore();
  const first = await store.claim(claimOf('k', 'a'));
  expect(first.ok).toBe(true);
  expect((await store.remove({ key: 'k', force: true, expectedToken: null })).ok).toBe(true);
  const second = await store.claim(claimOf('k', 'b'));
  if (!first.ok || !second.ok) throw new Error('expected both claims to be granted');
  expect(second.token).toBeGreaterThan(first.token);
});
