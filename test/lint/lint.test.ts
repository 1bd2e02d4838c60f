/** `npm run lint` inside `npm test`: Biome's recommended rules (biome.jsonc) find nothing, warnings included. */
import { expect, it } from 'vitest';
import { runBiome } from './biome.js';

it('the linter finds nothing in src, test, bench, scripts, demo and examples', async () => {
  const { exitCode, output } = await runBiome(['lint', '--error-on-warnings', '--max-diagnostics=50']);
  expect(exitCode, output).toBe(0);
  expect(output).toMatch(/Checked \d+ files/);
  expect(output).not.toMatch(/Found \d+ (errors?|warnings?|infos?)/);
});
