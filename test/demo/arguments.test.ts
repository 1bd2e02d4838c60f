/**
 * `npm run demo`'s command line: the documented flags, and a refusal (exit 2 in demo/fleet.ts) for anything
 * else, so that a misspelt `--unfenced` does not quietly run the fenced fleet and pass its check.
 */
import { describe, expect, it } from 'vitest';
import { parseDemoArguments } from '../../demo/arguments.js';
import { DEFAULT_SEED } from '../../demo/fleet-run.js';

describe('npm run demo arguments', () => {
  it('takes --seed (or DEMO_SEED), --unfenced and --timeline', () => {
    expect(parseDemoArguments([], {})).toEqual({ seed: DEFAULT_SEED, unfenced: false, timelineFile: undefined });
    expect(parseDemoArguments(['--seed', '42', '--unfenced', '--timeline', 'run.svg'], {})).toEqual({
      seed: 42,
      unfenced: true,
      timelineFile: 'run.svg',
    });
    expect(parseDemoArguments([], { DEMO_SEED: '7' })).toMatchObject({ seed: 7 });
    expect(parseDemoArguments(['--seed', '8'], { DEMO_SEED: '7' })).toMatchObject({ seed: 8 });
    expect(parseDemoArguments([], { DEMO_SEED: '' })).toMatchObject({ seed: DEFAULT_SEED });
  });

  it('refuses a misspelt flag, a stray argument and a missing or bad value', () => {
    for (const argv of [
      ['--unfence'],
      ['--sed', '42'],
      ['42'],
      ['--seed'],
      ['--seed', '-1'],
      ['--seed', '1.5'],
      ['--timeline'],
      ['--timeline', '--unfenced'],
    ]) {
      expect(parseDemoArguments(argv, {}), argv.join(' ')).toBeNull();
    }
    expect(parseDemoArguments([], { DEMO_SEED: 'x' })).toBeNull();
  });
});
