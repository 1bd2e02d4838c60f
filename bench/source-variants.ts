/**
 * Copies of `src/` with one piece taken out, for the breakdown benches (memory-breakdown.ts,
 * memory-with-lease-breakdown.ts): each variant is a list of text edits, and a copy fails loudly when an edit no
 * longer matches the source, so a breakdown never silently measures the unchanged code.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { THIS_SRC } from './library.js';

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
