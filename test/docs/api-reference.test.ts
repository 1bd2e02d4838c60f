/**
 * `npm run docs` (TypeDoc over every package entry, typedoc.json) builds with no warning: typedoc.json sets
 * `treatWarningsAsErrors` and `validation.notDocumented`, so an export without a TSDoc comment, a broken
 * `{@link}` or a referenced type that is not exported fails this test. The HTML goes to a temp dir.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('the API reference builds with every export documented and no warning', async () => {
  const out = await mkdtemp(join(tmpdir(), 'leasefence-api-'));
  try {
    const run = await new Promise<{ exitCode: number; output: string }>((done) => {
      execFile(join(ROOT, 'node_modules', '.bin', 'typedoc'), ['--out', out], { cwd: ROOT, env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' } }, (error, stdout, stderr) => {
        done({ exitCode: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, output: `${stdout}${stderr}` });
      });
    });
    expect(run.output).not.toMatch(/\[warning\]|\[error\]/);
    expect(run.exitCode, run.output).toBe(0);
    expect(existsSync(join(out, 'index.html'))).toBe(true);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}, 120_000);
