/**
 * `npm run test:repeat`'s command line: a `--load-max` that is not a bounded number of seconds (no load at
 * all, or hogs that never stop by themselves) and an unknown option are refused with exit code 2. The vitest
 * arguments name no test file, so a regression runs nothing instead of the whole suite.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function testRepeat(...args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    const argv = ['--import', 'tsx', join(ROOT, 'scripts', 'test-repeat.ts'), ...args, '--', 'test/no-such-test-file'];
    execFile(process.execPath, argv, { cwd: ROOT, timeout: 60_000 }, (error, _stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stderr });
    });
  });
}

it('refuses a bad --load-max or an unknown option with exit code 2 and the usage', async () => {
  for (const args of [
    ['1', '--load', '--load-max', 'abc'],
    ['1', '--load-max', '1e999'],
    ['1', '--lod'],
  ]) {
    const run = await testRepeat(...args);
    expect({ args, code: run.code }).toEqual({ args, code: 2 });
    expect(run.stderr).toContain('usage: npm run test:repeat');
  }
});
