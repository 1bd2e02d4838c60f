/** The claim-next conformance specs' runner for Redis (standalone and Cluster): one spec's last step differs by design. */
import { it } from 'vitest';
import type { TestRunner } from '../../src/testing/index.js';

/** The one spec whose last step Redis answers differently by design (the tag rule), run by this file instead. */
const ANOTHER_SET_SPEC = 'a key of another set is refused';

/**
 * vitest, with the spec that adds a key of another set skipped: on Redis such a key carries the other set's
 * hash tag and is refused with InvalidArgumentError before any I/O (never `in-another-set`); the test
 * 'removeItems, adding again, a key of another set' in redis-claim-next.test.ts runs that spec's steps with Redis' answer.
 */
export const claimNextSpecRunner = (runner: TestRunner): TestRunner => ({
  ...runner,
  it: (name, body, timeoutMs) =>
    name.includes(ANOTHER_SET_SPEC)
      ? it.skip(`${name} (Redis: the tag rule, see redis-claim-next.test.ts)`, body)
      : runner.it(name, body, timeoutMs),
});
