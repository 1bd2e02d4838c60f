/**
 * What every worker process of the SQLite multi-process races takes from its parent (LF_DB, LF_WORKER,
 * LF_DURATION_MS, LF_SEED), and its random source: mulberry32 seeded per worker, so a failing run can be
 * replayed from its seed.
 */

export const path = process.env['LF_DB'] ?? '';
export const worker = Number(process.env['LF_WORKER'] ?? '0');
export const durationMs = Number(process.env['LF_DURATION_MS'] ?? '2000');
let seed = Number(process.env['LF_SEED'] ?? '1') + worker * 7919;

/** A number in [0, 1) from the worker's deterministic sequence. */
export function random(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

export const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
