/**
 * The planted-bug checks of `leasefence/testing` under vitest: the race property must fail, with an
 * invariant violation, against a memory store with each classic lease bug planted, and the model-based
 * property against each bug a single caller can hit (deterministic seeds).
 * The same checks run under `node:test` in test/testing/node-test.test.ts.
 */
import { it } from 'vitest';
import { describePlantedBugChecks } from '../../src/testing/index.js';
import { mutantRepeats } from '../support/repeats.js';
import { vitestRunner } from './vitest-runner.js';

// NOTE: LEASEFENCE_TEST_SCALE above 1 repeats each check (vitest `repeats`), to measure that a catch is no luck.
describePlantedBugChecks({
  ...vitestRunner,
  it: (name, body, timeout) => it(name, { repeats: mutantRepeats(), ...(timeout === undefined ? {} : { timeout }) }, body),
});
