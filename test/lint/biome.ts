/**
 * Runs the repository's pinned Biome (biome.jsonc) on the whole tree and returns what it printed.
 * Shared by test/lint/lint.test.ts and test/lint/format.test.ts.
 */
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const BIOME = join(REPO_ROOT, 'node_modules', '.bin', 'biome');

/** Biome's exit code and its output (stdout and stderr together, without colours). */
export function runBiome(args: readonly string[]): Promise<{ exitCode: number; output: string }> {
  return new Promise((done) => {
    execFile(BIOME, [...args, '--colors=off'], { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const exitCode = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      done({ exitCode, output: `${stdout}${stderr}` });
    });
  });
}
