/**
 * `npm run format:check` inside `npm test`: every file is as `npm run format` (Biome, biome.jsonc: single
 * quotes, semicolons, trailing commas, 140 columns) would write it.
 */
import { expect, it } from 'vitest';
import { runBiome } from './biome.js';

it('every file is formatted (fix with `npm run format`)', async () => {
  const { exitCode, output } = await runBiome(['format', '--max-diagnostics=20']);
  expect(exitCode, output).toBe(0);
  expect(output).toMatch(/Checked \d+ files/);
});
