/**
 * `leasefence permits <semaphore>` (issue 25): an operator sees a semaphore's permits in index order (permit 10 after
 * permit 2), how many are live, and keys that only look like another semaphore's permits are left out. The store
 * is the memory store handed to `runCli` as the opened one.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createMemoryStore, type MemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases } from '../../src/leases.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';
import { runCli } from '../../src/cli/main.js';

async function cli(store: MemoryStore, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const printed = { stdout: '', stderr: '' };
  const stdout = new PassThrough().on('data', (chunk: Buffer) => {
    printed.stdout += chunk.toString();
  });
  const stderr = new PassThrough().on('data', (chunk: Buffer) => {
    printed.stderr += chunk.toString();
  });
  const stdin = Object.assign(new PassThrough(), { isTTY: false });
  stdin.end('');
  const code = await runCli([...args, '--store', 'sqlite:/unused.db'], { stdout, stderr, stdin, env: {} }, async () => ({
    store,
    gate: null,
    close: async () => undefined,
  }));
  return { code, ...printed };
}

describe('leasefence permits', () => {
  it("lists a semaphore's permits in index order with how many are live", async () => {
    const clock = createManualClock(MEMORY_EPOCH);
    const store = createMemoryStore({ clock });
    const leases = createLeases(store, { holder: 'exporter', ttlMs: 60_000 });
    const granted = [];
    for (let count = 0; count < 10; count += 1) granted.push(await leases.acquirePermitOrThrow('exports', { limit: 10 }));
    for (const permit of granted.slice(0, 8)) await leases.release(permit.lease);
    // NOTE: another semaphore whose name starts the same, and a key that only looks like a permit: both left out.
    await leases.acquirePermitOrThrow('exports-b', { limit: 1 });
    await leases.claimOrThrow('{exports}:permit-x');
    const shown = await cli(store, 'permits', 'exports');
    expect(shown.code).toBe(0);
    const lines = shown.stdout.trim().split('\n');
    expect(lines[0]).toBe('semaphore exports: 2 live of 10 permits');
    const keys = lines.slice(2).map((line) => line.split(/\s+/)[0]);
    expect(keys).toEqual(Array.from({ length: 10 }, (_, index) => `{exports}:permit-${index + 1}`));
    const json = await cli(store, 'permits', 'exports', '--json');
    const parsed = JSON.parse(json.stdout) as { semaphore: string; live: number; permits: Array<{ key: string; state: string }> };
    expect(parsed).toMatchObject({ semaphore: 'exports', live: 2 });
    expect(parsed.permits.filter((permit) => permit.state === 'live').map((permit) => permit.key)).toEqual([
      '{exports}:permit-9',
      '{exports}:permit-10',
    ]);
    expect(await cli(store, 'permits', 'none')).toMatchObject({ code: 0, stdout: 'semaphore none: 0 live of 0 permits\n' });
  });
});
