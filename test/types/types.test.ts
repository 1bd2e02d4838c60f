/**
 * Runs the type-level specifications (test/types/*.test-d.ts) inside `npm test`: they pass when the
 * compiler accepts them, every `expectTypeOf` holding and every `@ts-expect-error` line refused.
 * NOTE: compiled with TypeScript 7 (the `typescript7` devDependency: ~3 s, where 6.0 takes ~30 s on 2 cores);
 * `npm run typecheck` compiles the same files with the pinned `typescript` through tsconfig.all.json.
 */
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const REPO_ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

it('the type-level specifications of the public generics compile', async () => {
  const tsc = join(REPO_ROOT, 'node_modules', 'typescript7', 'bin', 'tsc');
  const { exitCode, output } = await new Promise<{ exitCode: number; output: string }>((done) => {
    execFile(
      process.execPath,
      [tsc, '-p', 'test/types/tsconfig.json', '--noEmit', '--listFiles'],
      { cwd: REPO_ROOT },
      (error, stdout, stderr) => {
        done({ exitCode: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, output: `${stdout}${stderr}` });
      },
    );
  });
  expect(exitCode, output).toBe(0);
  expect(output).toContain('test/types/generics.test-d.ts');
});
