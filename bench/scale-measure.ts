/**
 * What `npm run bench:scale` measures on a filled store: per-operation latency (claim + release, a fenced
 * write) on keys picked at random among the filled released ones, one operation at a time, and the time of
 * one `list` page, as percentiles of wall-clock samples.
 */
import type { Lease } from '../src/lease.js';
import type { Leases } from '../src/leases-types.js';
import type { Operator } from '../src/operator.js';
import { CHECKPOINT_1KIB, keyOf } from './scale-fill.js';

/** p50 and p99 of samples, in µs. */
export interface Percentiles {
  readonly p50: number;
  readonly p99: number;
}

export function percentiles(samples: readonly number[]): Percentiles {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.floor(q * (sorted.length - 1))] ?? Number.NaN;
  return { p50: at(0.5), p99: at(0.99) };
}

/** A store's fenced write of the bench: the least user write its context allows (one SET, one INSERT). */
export type ScaleWrite = (lease: Lease, options?: { checkpoint?: unknown }) => Promise<void>;

export interface OperationTimes {
  readonly claimRelease: Percentiles;
  readonly fencedWrite: Percentiles;
}

/** A small deterministic generator (mulberry32), so every store samples the same keys. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * `samples` cycles (after `warmup` unrecorded ones), each on a random released key below `keys` (kind 0 or
 * 2: with and without a checkpoint): claim, one fenced write, release. Claim + release is the sum of the
 * claim's and the release's times.
 */
export async function timeOperations(
  leases: Leases,
  write: ScaleWrite,
  keys: number,
  samples: number,
  warmup: number,
): Promise<OperationTimes> {
  const next = random(keys);
  const claimRelease: number[] = [];
  const fencedWrite: number[] = [];
  for (let n = 0; n < warmup + samples; n += 1) {
    let i = Math.floor(next() * keys);
    if (i % 3 === 1) i = (i + 1) % keys;
    const key = keyOf(i);
    const t0 = performance.now();
    const claimed = await leases.claim(key);
    const t1 = performance.now();
    if (!claimed.ok) throw new Error(`${key}: claim refused (${claimed.reason})`);
    await write(claimed.lease);
    const t2 = performance.now();
    const released = await leases.release(claimed.lease);
    const t3 = performance.now();
    if (!released.ok) throw new Error(`${key}: release refused`);
    if (n < warmup) continue;
    claimRelease.push((t1 - t0 + (t3 - t2)) * 1000);
    fencedWrite.push((t2 - t1) * 1000);
  }
  return { claimRelease: percentiles(claimRelease), fencedWrite: percentiles(fencedWrite) };
}

/**
 * `pages` + 1 pages of `limit` leases, in order from the first, each timed (µs): the first page apart (it is
 * the first call after the fill: a store that indexes keys lazily pays for the new keys there), the
 * percentiles over the others.
 */
export async function timeList(operator: Operator, pages: number, limit: number): Promise<{ first: number; pages: Percentiles }> {
  const times: number[] = [];
  let first = Number.NaN;
  let cursor: string | null = null;
  for (let n = 0; n <= pages; n += 1) {
    const started = performance.now();
    const page: Awaited<ReturnType<Operator['list']>> = await operator.list({ limit, ...(cursor === null ? {} : { cursor }) });
    if (n > 0) times.push((performance.now() - started) * 1000);
    else first = (performance.now() - started) * 1000;
    if (page.cursor === null) cursor = null;
    else cursor = page.cursor;
  }
  return { first, pages: percentiles(times) };
}

/**
 * History: one claim + fenced write (with a 1 KiB checkpoint) + release cycle on one key, then `cycles` more,
 * the key's bytes (`keyBytes`) read after the first and after each of `marks` more cycles: whether a record
 * grows with use, and whether it stops growing.
 */
export async function historyGrowth(
  leases: Leases,
  write: ScaleWrite,
  key: string,
  marks: readonly number[],
  keyBytes: (key: string) => Promise<number>,
): Promise<{ readonly cycles: number; readonly bytes: number }[]> {
  const seen: { cycles: number; bytes: number }[] = [];
  const last = Math.max(...marks);
  for (let n = 0; n <= last; n += 1) {
    const claimed = await leases.claim(key);
    if (!claimed.ok) throw new Error(`${key}: claim refused (${claimed.reason})`);
    await write(claimed.lease, {
      checkpoint: { ...CHECKPOINT_1KIB, data: CHECKPOINT_1KIB.data.slice(0, -6) + String(n).padStart(6, '0') },
    });
    const released = await leases.release(claimed.lease);
    if (!released.ok) throw new Error(`${key}: release refused`);
    if (n === 0 || marks.includes(n)) seen.push({ cycles: n, bytes: await keyBytes(key) });
  }
  return seen;
}
