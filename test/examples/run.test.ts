/**
 * `npm run example -- <name>`: a name that is not an example prints the usage and exits 2, before building
 * or starting anything; names that an object inherits (`toString`, `constructor`, `__proto__`) included.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX_LOADER = join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs');

/** Runs examples/run.ts as `npm run example` does (tsx), with `args`. */
function runExamples(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['--import', TSX_LOADER, join(ROOT, 'examples', 'run.ts'), ...args],
      { cwd: ROOT, timeout: 60_000 },
      (error, stdout, stderr) => {
        done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
      },
    );
  });
}

describe('npm run example with a name that is not an example', () => {
  it.concurrent.each(['toString', 'constructor', '__proto__'])('%s: prints the usage and exits 2', async (name) => {
    const run = await runExamples([name]);
    expect(run.stderr).toBe('usage: npm run example -- <daily-export | ramp-runner | classifier | scan-work | export-pool> [args]\n');
    expect(run.code).toBe(2);
  });
});
