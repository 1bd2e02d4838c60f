/**
 * `npm run docs` (TypeDoc over every package entry, typedoc.json) builds with no warning: typedoc.json sets
 * `treatWarningsAsErrors` and `validation.notDocumented`, so an export without a TSDoc comment, a broken
 * `{@link}` or a referenced type that is not exported fails this test. The HTML goes to a temp dir.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { REPO_ROOT, runCommand } from '../../scripts/package-checks.js';

test('the API reference builds with every export documented and no warning', async () => {
  const out = await mkdtemp(join(tmpdir(), 'leasefence-api-'));
  try {
    const run = await runCommand(join(REPO_ROOT, 'node_modules', '.bin', 'typedoc'), ['--out', out], REPO_ROOT);
    expect(run.output).not.toMatch(/\[warning\]|\[error\]/);
    expect(run.exitCode, run.output).toBe(0);
    expect(existsSync(join(out, 'index.html'))).toBe(true);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}, 120_000);
