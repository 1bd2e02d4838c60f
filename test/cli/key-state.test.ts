/**
 * The CLI's view of issue 24's record-level state: `list` and `inspect` show a key's state and a hold (until
 * when), and the operator commands `set-state` and `remove` work as `revoke` does (asked first on a terminal,
 * acting only on what was shown). The store is the memory store behind the CLI's own `openStore`, so the
 * commands' logic is tested without a server (the store is handed to `runCli` as the opened one); the SQLite
 * suite covers the CLI's connection.
 */
import { PassThrough } from 'node:stream';
import { beforeEach, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createMemoryStore, type MemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases } from '../../src/leases.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';
import { runCli } from '../../src/cli/main.js';

const HOUR = 3_600_000;
let store: MemoryStore;

/** Runs the CLI in this process on `store` (handed in as the opened store); stdin a terminal when answering. */
async function cli(args: string[], answer = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  const printed = { stdout: '', stderr: '' };
  const stdout = new PassThrough().on('data', (chunk: Buffer) => {
    printed.stdout += chunk.toString();
  });
  const stderr = new PassThrough().on('data', (chunk: Buffer) => {
    printed.stderr += chunk.toString();
  });
  const stdin = Object.assign(new PassThrough(), { isTTY: answer !== '' });
  stdin.end(answer);
  const code = await runCli([...args, '--store', 'sqlite:/unused.db'], { stdout, stderr, stdin, env: {} }, async () => ({
    store,
    gate: null,
    close: async () => undefined,
  }));
  return { code, ...printed };
}

describe('the CLI and key state, hold-back and remove', () => {
  const clock = createManualClock(MEMORY_EPOCH);
  beforeEach(() => {
    clock.set(MEMORY_EPOCH);
    store = createMemoryStore({ clock });
  });

  it('list and inspect show the key state and a hold with until when', async () => {
    const leases = createLeases(store, { holder: 'classifier-1', ttlMs: 60_000 });
    await leases.setKeyState('item:1', { revision: 'r7', tier: '3' });
    const lease = await leases.claimOrThrow('item:1', { runId: 'r1' });
    await leases.release(lease, { holdMs: 6 * HOUR });
    await leases.claimOrThrow('item:2');
    const list = await cli(['list']);
    expect(list).toMatchObject({ code: 0, stderr: '' });
    const until = new Date(MEMORY_EPOCH + 6 * HOUR).toISOString();
    expect(list.stdout).toContain(`released, held back 6 h (until ${until})`);
    expect(list.stdout).toMatch(/LAST ENDING +KEY STATE\n/);
    expect(list.stdout).toContain('revision=r7, tier=3');
    const inspect = await cli(['inspect', 'item:1']);
    expect(inspect.stdout).toMatch(/key state +revision=r7, tier=3/);
    expect(inspect.stdout).toMatch(new RegExp(`held back +held back 6 h \\(until ${until.replaceAll('.', '\\.')}\\)`));
    const heldBack = await cli(['list', '--state', 'held-back', '--json']);
    expect((JSON.parse(heldBack.stdout) as { key: string }[]).map((lease) => lease.key)).toEqual(['item:1']);
    const json = JSON.parse((await cli(['list', '--json'])).stdout) as { key: string; keyState: object; heldUntil: number | null }[];
    expect(json[0]).toMatchObject({ key: 'item:1', keyState: { revision: 'r7', tier: '3' }, heldUntil: MEMORY_EPOCH + 6 * HOUR });
    // No key has state: the table keeps its columns.
    store = createMemoryStore({ clock });
    await createLeases(store, { holder: 'x' }).claimOrThrow('plain');
    expect((await cli(['list'])).stdout).not.toContain('KEY STATE');
  });

  it('set-state sets values (name= removes one), fences the holder, and holds or cancels', async () => {
    const leases = createLeases(store, { holder: 'runner', ttlMs: 60_000 });
    const lease = await leases.claimOrThrow('ramp', { runId: 'r1' });
    const set = await cli(['set-state', 'ramp', 'tier=4', 'stale=', '--by', 'ops:alice', '--yes']);
    expect(set).toMatchObject({ code: 0, stderr: '' });
    expect(set.stdout).toBe('ramp: changed tier; state tier=4; runner (token 1) is fenced (state-changed)\n');
    expect(await leases.renew(lease)).toMatchObject({ ok: false, reason: 'state-changed', attribute: { name: 'tier', found: '4' } });
    const held = await cli(['set-state', 'ramp', '--hold-ms', String(HOUR), '--yes']);
    expect(held.stdout).toContain('nothing changed; state tier=4; held back 60 min');
    expect(await leases.claim('ramp')).toMatchObject({ reason: 'held-back' });
    await cli(['set-state', 'ramp', '--cancel-hold', '--yes']);
    expect(await leases.claim('ramp')).toMatchObject({ ok: true });
  });

  it('set-state asks first on a terminal; bad arguments are usage errors before anything is sent', async () => {
    const declined = await cli(['set-state', 'ramp', 'tier=4'], 'n\n');
    expect(declined.code).toBe(6);
    expect((await store.inspect('ramp')).exists).toBe(false);
    for (const args of [
      ['set-state', 'ramp'],
      ['set-state', 'ramp', 'tier'],
      ['set-state', 'ramp', '=4'],
      ['set-state', 'ramp', 'a=1', '--hold-ms', '-5'],
    ]) {
      expect((await cli([...args, '--yes'])).code).toBe(2);
    }
    expect((await cli(['set-state', 'ramp', 'a=1'])).code).toBe(2); // not a terminal, no --yes
  });

  it('remove: refused while held unless --force (exit 4), then the holder is told missing; asks first on a terminal', async () => {
    const leases = createLeases(store, { holder: 'runner', ttlMs: 60_000 });
    const lease = await leases.claimOrThrow('ramp', { runId: 'r1' });
    const refused = await cli(['remove', 'ramp', '--yes']);
    expect(refused).toMatchObject({
      code: 4,
      stderr: 'not removed: ramp is held (token 1): a grant is live (pass --force to remove it anyway)\n',
    });
    expect((await cli(['remove', 'ramp', '--force'], 'n\n')).code).toBe(6);
    const removed = await cli(['remove', 'ramp', '--force'], 'y\n');
    expect(removed).toMatchObject({ code: 0 });
    expect(removed.stdout).toBe('removed ramp at token 1; runner (token 1) is told missing\n');
    expect(await leases.checkpoint(lease, { wave: 2 })).toMatchObject({ ok: false, reason: 'missing' });
    expect((await cli(['remove', 'ramp', '--yes'])).code).toBe(3);
    expect((await cli(['remove', 'ramp', '--yes', '--expected-token', 'x'])).code).toBe(2);
  });
});
