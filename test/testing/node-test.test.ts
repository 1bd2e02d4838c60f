/**
 * The `leasefence/testing` suites run under `node:test` too, not only vitest: a child `node --test` runs
 * test/testing/suites.node.ts (memory store suites + planted-bug checks, node:test + node:assert only) and
 * must report every test passed, each planted bug caught, and only the spec that needs a controlled clock
 * skipped where the clock is not controlled.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PLANTED_BUGS } from '../../src/testing/index.js';
import { MODEL_PLANTED_BUG_SEEDS, PLANTED_BUG_SEEDS } from '../../src/testing/planted-bugs.js';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Bound on the child run (about 5 s idle); it only ends a hung child, which execFile then kills. */
const CHILD_TIMEOUT_MS = 120_000;

function runNodeTest(file: string): Promise<{ exitCode: number; output: string }> {
  return new Promise((done) => {
    const args = ['--import', 'tsx', '--test', '--test-reporter=tap', file];
    execFile(
      process.execPath,
      args,
      { cwd: REPO_ROOT, timeout: CHILD_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } },
      (error, stdout, stderr) => {
        done({ exitCode: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, output: `${stdout}${stderr}` });
      },
    );
  });
}

describe('leasefence/testing under node:test', () => {
  it(
    'runs the memory store suites, catches every planted bug and skips what needs a controlled clock, with node:test + node:assert only',
    async () => {
      const { exitCode, output } = await runNodeTest('test/testing/suites.node.ts');
      expect(exitCode, output).toBe(0);
      // NOTE: 82 conformance specs (3 of them election, 12 record-level, 10 claim-next, 10 semaphore, 13 fair waiting) + the model-based
      // (one key, semaphores) and race (invariants, fair waiting) properties + one race check per planted bug the race reaches and one model check
      // per sequential one, then the 82 specs again on a clock the test does not control, where the strict-expiry spec
      // skips itself.
      const plantedChecks = Object.keys(PLANTED_BUG_SEEDS).length + Object.keys(MODEL_PLANTED_BUG_SEEDS).length;
      expect(output).toMatch(new RegExp(`^# pass ${86 + plantedChecks + 81}$`, 'm'));
      expect(output).toMatch(/^# fail 0$/m);
      expect(output).toMatch(/^# skipped 1$/m);
      expect(output).toMatch(/^ {8}ok \d+ - one ms before expires-at .* # SKIP the store clock cannot be controlled$/m);
      // Every planted bug is checked by one suite at least.
      for (const bug of PLANTED_BUGS) expect(bug in PLANTED_BUG_SEEDS || bug in MODEL_PLANTED_BUG_SEEDS, bug).toBe(true);
      for (const bug of Object.keys(PLANTED_BUG_SEEDS)) expect(output).toMatch(new RegExp(`^# ${bug}: caught after \\d+ run\\(s\\)`, 'm'));
      for (const bug of Object.keys(MODEL_PLANTED_BUG_SEEDS))
        expect(output).toMatch(new RegExp(`^# ${bug} \\(model\\): caught after \\d+ run\\(s\\)`, 'm'));
    },
    CHILD_TIMEOUT_MS + 10_000,
  );
});
