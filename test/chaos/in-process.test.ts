/**
 * The harness tested on itself, in one process over the memory store: the workload, recorder and checker
 * agree that a correct store keeps every guarantee, and the checker catches an unfenced write when the
 * workers' clocks lie. (The multi-process runs against Postgres and Redis are in chaos.test.ts.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store.js';
import { createMemoryChaos } from './backend-memory.js';
import { checkHistory, formatViolations } from './checker.js';
import { HistoryWriter, readHistory } from './history.js';
import { Recorder } from './recorder.js';
import { Workload } from './workload.js';
import { delegatingStore } from './mutants.js';

const dir = mkdtempSync(join(tmpdir(), 'leasefence-chaos-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function runInProcess(name: string, options: { wrap?: (store: Store) => Store; rate: number; durationMs: number }) {
  const chaos = createMemoryChaos();
  const path = join(dir, `${name}.jsonl`);
  const writer = new HistoryWriter(path);
  const keys = ['k1', 'k2'];
  const workloads = [1, 2, 3, 4].map(
    (n) =>
      new Workload(
        { proc: `w${n}`, keys, ttlMs: 120, seed: 7, writesPerGrant: [2, 8], thinkMs: [5, 40], idleMs: [5, 30], skew: { rate: options.rate, jumps: [{ atMs: 100 * n, offsetMs: -3000 }, { atMs: 700 + 50 * n, offsetMs: -6000 }] }, badInputChance: 0.2 },
        chaos.backend((store) => lateRenewals(options.wrap === undefined ? store : options.wrap(store))),
        new Recorder(`w${n}`, writer),
      ),
  );
  const running = workloads.map((workload) => workload.run());
  await new Promise((resolve) => setTimeout(resolve, options.durationMs));
  for (const workload of workloads) workload.stop();
  await Promise.all(running);
  writer.close();
  return checkHistory(readHistory(path), await chaos.admin.readFinal(keys), { takeoverBoundMs: null });
}

/** Network trouble in-process: now and then a renewal reaches the store late, after the grant ran out. */
const lateRenewals = (store: Store): Store => {
  let n = 0;
  return {
    id: store.id,
    claim: (c) => store.claim(c),
    renew: async (c) => {
      n += 1;
      if (n % 3 === 0) await new Promise((resolve) => setTimeout(resolve, 200));
      return store.renew(c);
    },
    checkpoint: (c) => store.checkpoint(c),
    release: (c) => store.release(c),
    revoke: (c) => store.revoke(c),
    recover: (c) => store.recover(c),
    inspect: (k) => store.inspect(k),
    fencedWrite: (fence, write) => store.fencedWrite(fence, write),
  };
};

/** A planted bug: the fenced write runs the user's write without checking the fence. */
const unfencedWrite = (store: Store): Store => ({
  ...delegatingStore(store),
  fencedWrite: async (fence, write) => {
    const now = Date.now();
    return { ok: true, value: await write({ token: fence.token, now } as never), token: fence.token, checkpoint: null, now };
  },
});

describe('chaos harness, in-process over the memory store', () => {
  it('a correct store passes every check, with grants, takeovers, refusals and bad input exercised', async () => {
    const report = await runInProcess('correct', { rate: 0.3, durationMs: 1500 });
    expect(report.violations, formatViolations(report.violations)).toEqual([]);
    expect(report.figures.grants).toBeGreaterThan(5);
    expect(report.figures.writesAcked).toBeGreaterThan(10);
    expect(Object.keys(report.figures.refusals).length).toBeGreaterThan(0);
  });

  it('the checker catches a fenced write without the fence check when slow worker clocks overstay their grant', async () => {
    const report = await runInProcess('unfenced', { wrap: unfencedWrite, rate: 0.3, durationMs: 1500 });
    expect(report.ok).toBe(false);
    const fired = report.violations.map((v) => v.check);
    expect(fired.filter((check) => check === 'stale-accepted' || check === 'expired-accepted').length).toBeGreaterThan(0);
  });
});
