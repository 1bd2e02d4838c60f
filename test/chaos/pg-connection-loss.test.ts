/**
 * Regression found by the chaos harness (connections and restart scenarios on Postgres): when the server
 * ends a pooled connection that the adapter has checked out (pg_terminate_backend, a crash restart), pg
 * emits 'error' on that client; with no listener while it is checked out, the worker process crashed with
 * "Unhandled 'error' event ... Connection terminated unexpectedly".
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../support/postgres-server.js';

const run = promisify(execFile);
const probe = join(fileURLToPath(new URL('.', import.meta.url)), 'pg-connection-loss-probe.ts');
let own: PostgresServer | null = null;
afterAll(async () => own?.stop());

async function postgresUrl(): Promise<string> {
  const shared = process.env['LEASEFENCE_PG_URL'];
  if (shared !== undefined && shared !== '') return shared;
  own = await startPostgres();
  return own.url;
}

describe('postgres adapter under a terminated connection', () => {
  it('a connection the server ends during a fenced write yields a typed error, and the process lives on', async () => {
    const url = await postgresUrl();
    const result = await run(process.execPath, ['--import', 'tsx', probe], {
      env: { ...process.env, PROBE_PG_URL: url },
      timeout: 30_000,
    }).catch((error: { code?: number; stdout?: string; stderr?: string }) => ({
      stdout: error.stdout ?? '',
      stderr: `exit ${error.code}: ${error.stderr ?? ''}`,
    }));
    expect(result.stderr.slice(0, 2000)).not.toMatch(/Unhandled 'error' event|exit \d/);
    expect(result.stdout).toMatch(/outcome (STORE_UNAVAILABLE|OUTCOME_UNKNOWN)/);
    expect(result.stdout).toContain('survived');
  });
});
