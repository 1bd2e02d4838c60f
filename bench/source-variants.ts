/**
 * Copies of `src/` with one piece taken out, and the loop that measures them, for the breakdown benches
 * (memory-breakdown.ts, memory-with-lease-breakdown.ts): each variant is a list of text edits, and a copy fails
 * loudly when an edit no longer matches the source, so a breakdown never silently measures the unchanged code.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadLibrary, THIS_SRC, type Library } from './library.js';
import { collectGarbage, seededRandom, shuffled } from './slices.js';

/** One text edit of a copied file: `from` must occur exactly once. */
export interface Edit {
  readonly file: string;
  readonly from: string;
  readonly to: string;
}

/** A copy of `src/` without one piece, and whether that piece is a guarantee. */
export interface Variant {
  readonly name: string;
  readonly piece: string;
  readonly guarantee: string;
  readonly edits: readonly Edit[];
}

/** Copies `src/` to `directory` and applies `variant`'s edits, failing loudly when one no longer matches. */
export function makeCopy(variant: Variant, directory: string): void {
  cpSync(THIS_SRC, directory, { recursive: true });
  for (const edit of variant.edits) {
    const path = join(directory, edit.file);
    const text = readFileSync(path, 'utf8');
    const count = text.split(edit.from).length - 1;
    if (count !== 1) throw new Error(`${variant.name}: ${edit.file}: the edit matches ${count} times (src changed: update the variant)`);
    writeFileSync(path, text.replace(edit.from, edit.to));
  }
}

/** Each variant copied into `work` (one directory each) and bundled, in `variants`' order. */
export async function loadVariants(variants: readonly Variant[], work: string): Promise<Library[]> {
  const libraries: Library[] = [];
  for (const [index, variant] of variants.entries()) {
    const directory = join(work, `v${index}`);
    makeCopy(variant, directory);
    libraries.push(await loadLibrary(directory));
  }
  return libraries;
}

/** `n` cycles of one contender. */
export type Cycles = (n: number) => Promise<void>;

/**
 * Every contender in interleaved rounds, in a new shuffled order each round (neighbours change: see slices.ts),
 * `warm` rounds unrecorded first: ns of CPU per cycle, one value per measured round.
 */
export async function measureRounds(
  contenders: readonly (readonly [string, Cycles])[],
  { n, rounds, warm }: { n: number; rounds: number; warm: number },
): Promise<Map<string, number[]>> {
  const ns = new Map(contenders.map(([name]) => [name, [] as number[]]));
  const random = seededRandom(0x1ea5e);
  for (let round = 0; round < rounds + warm; round++) {
    for (const [name, run] of shuffled(contenders, random)) {
      await run(n / 10);
      collectGarbage();
      const before = process.cpuUsage();
      await run(n);
      const cpu = process.cpuUsage(before);
      if (round >= warm) ns.get(name)?.push(((cpu.user + cpu.system) * 1000) / n);
    }
  }
  return ns;
}
