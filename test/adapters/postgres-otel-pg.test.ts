/**
 * Issue 29 item 17, with OpenTelemetry's own pg instrumentation (@opentelemetry/instrumentation-pg wraps
 * pg-pool's `connect`): every operation completes and no connection stays checked out. leasefence does not
 * depend on it: the test runs when LEASEFENCE_OTEL_PG_MODULES names a directory whose node_modules holds
 * @opentelemetry/instrumentation-pg and @opentelemetry/sdk-trace-base (`npm install` them there), and is
 * skipped otherwise.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freshTable, sharedPostgresUrl } from './postgres-harness.js';

const PROGRAM = fileURLToPath(new URL('./postgres-otel-pg-program.ts', import.meta.url));
const MODULES = process.env['LEASEFENCE_OTEL_PG_MODULES'] ?? '';
const installed = MODULES !== '' && existsSync(join(MODULES, 'node_modules', '@opentelemetry', 'instrumentation-pg'));

describe('a pg Pool instrumented by @opentelemetry/instrumentation-pg', () => {
  it.runIf(installed)(
    'migrate, claim, fenced write, inspect and release complete; connect is traced; nothing stays checked out',
    async () => {
      const url = await sharedPostgresUrl();
      const output = await new Promise<string>((resolve, reject) => {
        execFile(
          process.execPath,
          ['--import', 'tsx', PROGRAM, url, freshTable('lf_otelpg'), MODULES],
          { timeout: 60_000, killSignal: 'SIGKILL' },
          (error, stdout, stderr) => {
            if (error !== null) reject(new Error(`${error.message}\n${stderr}`));
            else resolve(stdout);
          },
        );
      });
      expect(JSON.parse(output.trim().split('\n').at(-1)!)).toMatchObject({ patched: true, results: [true, true, true], checkedOut: 0 });
    },
    90_000,
  );
});
