/**
 * `leasefence items add|remove <set> <key...>` (issue 24, claim-next): an operator queues keys as items of a
 * set or takes them out; the key of another set is refused (exit 4, nothing added). The store is the memory
 * store handed to `runCli` as the opened one (no server store offers sets yet); a store without sets is exit 2
 * with the reason (test/cli/sqlite.test.ts, through the CLI's own connection).
 */
import { PassThrough } from 'node:stream';
import { beforeEach, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createMemoryStore, type MemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases } from '../../src/leases.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';
import { runCli } from '../../src/cli/main.js';

let store: MemoryStore;

/** Runs the CLI in this process on `store` (handed in as the opened store). */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
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

describe('the CLI and the items of a set', () => {
  const clock = createManualClock(MEMORY_EPOCH);
  beforeEach(() => {
    clock.set(MEMORY_EPOCH);
    store = createMemoryStore({ clock });
  });

  it('adds and removes items, which claimNext then grants', async () => {
    expect(await cli('items', 'add', 'scans', 'scan:a', 'scan:b')).toEqual({
      code: 0,
      stdout: 'added 2 of 2 to scans (due now): scan:a, scan:b\n',
      stderr: '',
    });
    expect(await cli('items', 'add', 'scans', 'scan:a', 'scan:c', '--not-before-ms', '60000')).toEqual({
      code: 0,
      stdout: `added 1 of 2 to scans (due at ${new Date(MEMORY_EPOCH + 60_000).toISOString()}): scan:c\n`,
      stderr: '',
    });
    expect(await cli('items', 'remove', 'scans', 'scan:b', 'scan:z')).toEqual({
      code: 0,
      stdout: 'removed 1 of 2 from scans: scan:b\n',
      stderr: '',
    });
    const leases = createLeases(store, { holder: 'scanner' });
    const next = await leases.claimNext('scans');
    expect(next.ok && next.lease.key).toBe('scan:a');
    // NOTE: the next that may come free is scan:a at its grant's expiry (30 s), before scan:c is due (60 s).
    expect(await leases.claimNext('scans')).toMatchObject({ ok: false, reason: 'idle', nextAt: MEMORY_EPOCH + 30_000 });
  });

  it('a key of another set is refused (exit 4), nothing added; --json prints the outcome', async () => {
    await cli('items', 'add', 'scans', 'scan:a');
    expect(await cli('items', 'add', 'other', 'scan:new', 'scan:a')).toEqual({
      code: 4,
      stdout: '',
      stderr: 'not added: scan:a is an item of set scans; nothing was added\n',
    });
    const json = await cli('items', 'add', 'other', 'scan:new', '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: true, set: 'other', added: ['scan:new'] });
    expect(await createLeases(store, { holder: 'x' }).claimNext('other')).toMatchObject({ ok: true });
  });

  it('bad usage is exit 2 before anything is sent', async () => {
    for (const args of [
      ['items'],
      ['items', 'list', 'scans'],
      ['items', 'add', 'scans'],
      ['items', 'add'],
      ['items', 'add', 'scans', 'scan:a', '--not-before-ms', '-5'],
      ['items', 'remove', 'scans', 'scan:a', '--not-before-ms', '5'],
      ['items', 'add', 'scans', 'scan:a', 'scan:a'],
    ]) {
      const run = await cli(...args);
      expect(run.code, args.join(' ')).toBe(2);
    }
    expect(await createLeases(store, { holder: 'x' }).claimNext('scans')).toMatchObject({ ok: false, reason: 'idle', nextAt: null });
  });
});
