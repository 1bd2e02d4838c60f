/**
 * LEASEFENCE_TEST_SCALE (test/support/scale.ts), the one knob for the tests' run counts, and what the `unit`
 * tier refuses to start (test/support/tiers.ts).
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mutantRepeats } from '../support/repeats.js';
import { measuring, scaled, testScale } from '../support/scale.js';
import { assertTierMayStart } from '../support/tiers.js';

afterEach(() => void vi.unstubAllEnvs());

describe('LEASEFENCE_TEST_SCALE', () => {
  it('is 1 when unset or empty: the full runs, no measurement', () => {
    for (const value of [undefined, '', ' ']) {
      vi.stubEnv('LEASEFENCE_TEST_SCALE', value);
      expect([testScale(), scaled(800), measuring(), mutantRepeats()]).toEqual([1, 800, false, 0]);
    }
  });

  it('below 1 scales counts down, never below one run', () => {
    vi.stubEnv('LEASEFENCE_TEST_SCALE', '0.2');
    expect([scaled(3_000), scaled(3), scaled(1), measuring(), mutantRepeats()]).toEqual([600, 1, 1, false, 0]);
  });

  it('above 1 scales counts up, repeats each planted-bug test round(scale) times and runs the measurements', () => {
    vi.stubEnv('LEASEFENCE_TEST_SCALE', '50');
    expect([scaled(3), measuring(), mutantRepeats()]).toEqual([150, true, 49]);
  });

  it('refuses anything but a positive number, naming the variable', () => {
    for (const value of ['0', '-1', 'full', 'Infinity', 'NaN']) {
      vi.stubEnv('LEASEFENCE_TEST_SCALE', value);
      expect(() => testScale()).toThrow(/LEASEFENCE_TEST_SCALE must be a positive number/);
    }
  });
});

describe('the unit tier', () => {
  it('refuses to start a server, a build or a browser, naming where to move the file', () => {
    vi.stubEnv('LEASEFENCE_TEST_TIER', 'unit');
    expect(() => assertTierMayStart('redis-server')).toThrow(
      /unit tier starts no redis-server: list this test file under STORES_FILES, LONG_FILES or RUNTIMES_FILES/,
    );
    vi.stubEnv('LEASEFENCE_TEST_TIER', 'stores');
    expect(() => assertTierMayStart('redis-server')).not.toThrow();
  });
});

describe('fast-check under the scale', () => {
  it('runs each property scale x 100 times, however often the setup runs (before every file of a shared worker)', async () => {
    const before = fc.readConfigureGlobal();
    const setup = '../support/fast-check-setup.js';
    try {
      vi.stubEnv('LEASEFENCE_TEST_SCALE', '0.2');
      await import(`${setup}?first`);
      expect(fc.readConfigureGlobal().numRuns).toBe(20);
      await import(`${setup}?again`);
      expect(fc.readConfigureGlobal().numRuns).toBe(20);
    } finally {
      fc.configureGlobal(before);
    }
  });
});
