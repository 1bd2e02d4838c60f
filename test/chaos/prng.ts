/**
 * A small seeded PRNG (sfc32) with named sub-streams: the fault schedule and every worker's choices derive
 * from one printed seed, so `CHAOS_SEED=<seed>` replays the same schedule. (Real concurrency still decides
 * how requests interleave; the seed fixes what the harness and the workers choose to do, and when.)
 */

/** A seeded random source. */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max] (inclusive). */
  int(min: number, max: number): number;
  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T;
  /** `true` with probability `p`. */
  chance(p: number): boolean;
  /** An independent stream for `label` (same seed + label: same stream). */
  fork(label: string): Random;
}

function hash32(text: string, seed: number): number {
  let h = (seed ^ 0x9e3779b9) >>> 0;
  for (let i = 0; i < text.length; i += 1) {
    h = Math.imul(h ^ text.charCodeAt(i), 0x85ebca6b);
    h = (h ^ (h >>> 13)) >>> 0;
  }
  return Math.imul(h ^ (h >>> 16), 0xc2b2ae35) >>> 0;
}

/** Creates a random source from a 32-bit seed. */
export function createRandom(seed: number): Random {
  let a = hash32('a', seed);
  let b = hash32('b', seed);
  let c = hash32('c', seed);
  let d = 1;
  const next = (): number => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i += 1) next();
  const random: Random = {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]): T => {
      if (items.length === 0) throw new RangeError('pick from an empty list');
      return items[Math.floor(next() * items.length)] as T;
    },
    chance: (p) => next() < p,
    fork: (label) => createRandom(hash32(label, seed)),
  };
  return random;
}

/** The run's seed: `CHAOS_SEED` when set, otherwise a fresh one (always printed by the harness). */
export function chaosSeed(env: NodeJS.ProcessEnv = process.env): number {
  const fromEnv = env['CHAOS_SEED'];
  if (fromEnv !== undefined && fromEnv !== '') {
    const seed = Number(fromEnv);
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)
      throw new RangeError(`CHAOS_SEED must be an integer in [0, 2^32), got ${fromEnv}`);
    return seed;
  }
  return Math.floor(Math.random() * 0xffffffff);
}
