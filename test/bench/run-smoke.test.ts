/**
 * `npm run bench` stays runnable: its quick mode on the memory store (no server) prints a markdown table
 * with every memory contender. Not a benchmark: it checks the script, not the figures.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);

it('npm run bench -- --quick prints the memory table', async () => {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--quick'], {
    env: { ...process.env, BENCH_STORES: 'memory' },
    timeout: 20_000,
  });
  expect(stdout).toContain('| contender | cycles/s |');
  for (const row of [
    '| claim + release |',
    '| claim + release (control) |',
    '| self-check, a second bundle of this tree: claim + release |',
    '| withLease((lease) => token) |',
    '| withLease((lease, signal) => signal.aborted) |',
    '| store.claim + store.release (no shell) |',
    '| new AbortController().signal alone (reference) |',
  ]) {
    expect(stdout).toContain(row);
  }
}, 30_000);
