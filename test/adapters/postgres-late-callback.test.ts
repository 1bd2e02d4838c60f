/**
 * Issue 29 item 18: a fenced write whose callback outlives the grant and the transaction's bound (the server
 * ends the session) is refused `expired` on postgres.js as on pg, nothing lands, and the driver's late
 * failure never escapes: in postgres.js 3.4.9 the ROLLBACK it sends when the callback finally settles,
 * on a connection whose socket is gone, threw an uncaught TypeError ("Cannot read properties of null
 * (reading 'write')") in a setImmediate. Each run is a child process, so a crash is an exit code.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freshTable, sharedPostgresUrl } from './postgres-harness.js';

const PROGRAM = fileURLToPath(new URL('./postgres-late-callback-program.ts', import.meta.url));

function runProgram(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', PROGRAM, ...args],
      { timeout: 60_000, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : ((error as { code?: number }).code ?? null), stdout, stderr });
      },
    );
  });
}

describe('a fenced write whose callback outlives its grant and the transaction bound', () => {
  it.each([
    ['pg', 'sleep'],
    ['pg', 'query'],
    ['postgresjs', 'sleep'],
    ['postgresjs', 'query'],
  ] as const)(
    '%s, callback then %s: refused expired, nothing landed, no late crash, the key claimable',
    async (kind, ending) => {
      const run = await runProgram([kind, await sharedPostgresUrl(), freshTable('lf_late'), ending]);
      expect(run.stderr).not.toMatch(/TypeError|Uncaught|unhandled/i);
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout.trim().split('\n').at(-1)!)).toEqual({
        answer: { ok: false, reason: 'expired' },
        landed: 0,
        next: 'granted',
      });
    },
    90_000,
  );

  it.each(['pg', 'postgresjs'] as const)(
    "%s, callback then a statement on the driver's own handle: STORE_UNAVAILABLE (its connection is gone), nothing landed, no late crash",
    async (kind) => {
      const run = await runProgram([kind, await sharedPostgresUrl(), freshTable('lf_late'), 'raw']);
      expect(run.stderr).not.toMatch(/TypeError|Uncaught|unhandled/i);
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout.trim().split('\n').at(-1)!)).toEqual({
        answer: { threw: 'STORE_UNAVAILABLE' },
        landed: 0,
        next: 'granted',
      });
    },
    90_000,
  );
});
