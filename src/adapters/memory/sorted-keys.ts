/**
 * The memory store's keys in code-unit order, kept sorted as keys come and go: a list of sorted chunks (each at
 * most `2 × CHUNK` keys) with the last key of each beside it. Adding or removing a key costs two binary searches
 * and a splice within one chunk (O(log n + CHUNK)); finding where a page starts, two binary searches.
 * NOTE: one flat sorted array with the new keys merged in at the next `list` (the layout before) made the first
 * page after a fill of a million keys sort them all (0.4–1.3 s), and every page while keys arrived copy the whole
 * array (O(n)).
 */

/** Keys per chunk after a split; a chunk splits when it grows past twice this. */
const CHUNK = 512;

/** A place in the keys: chunk `chunk`, index `index` within it. */
export interface KeyPosition {
  readonly chunk: number;
  readonly index: number;
}

/** The first index in sorted `keys` whose key is at least `text` (`strict`: greater than `text`). */
function bound(keys: readonly string[], text: string, strict: boolean): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    const key = keys[middle] as string;
    if (key < text || (strict && key === text)) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** A set of keys in code-unit order (the default sort's, the order `list` promises). */
export class SortedKeys {
  /** Sorted, non-empty chunks; every key of a chunk is below every key of the next. */
  readonly #chunks: string[][] = [];
  /** The last (greatest) key of each chunk. */
  readonly #lasts: string[] = [];

  /** @param chunk keys per chunk after a split (tests make it small, to split and empty chunks often). */
  constructor(private readonly chunk: number = CHUNK) {}

  /** Adds `key` (nothing when it is already there). */
  add(key: string): void {
    const chunks = this.#chunks;
    if (chunks.length === 0) {
      chunks.push([key]);
      this.#lasts.push(key);
      return;
    }
    // NOTE: a key above every key goes to the last chunk (keys that arrive in order append there).
    const at = Math.min(bound(this.#lasts, key, false), chunks.length - 1);
    const chunk = chunks[at] as string[];
    const index = bound(chunk, key, false);
    if (chunk[index] === key) return;
    chunk.splice(index, 0, key);
    if (index === chunk.length - 1) this.#lasts[at] = key;
    if (chunk.length > 2 * this.chunk) {
      const upper = chunk.splice(this.chunk);
      chunks.splice(at + 1, 0, upper);
      this.#lasts.splice(at, 0, chunk[chunk.length - 1] as string);
    }
  }

  /** Removes `key` (nothing when it is not there). */
  delete(key: string): void {
    const at = bound(this.#lasts, key, false);
    const chunk = this.#chunks[at];
    if (chunk === undefined) return;
    const index = bound(chunk, key, false);
    if (chunk[index] !== key) return;
    chunk.splice(index, 1);
    if (chunk.length === 0) {
      this.#chunks.splice(at, 1);
      this.#lasts.splice(at, 1);
    } else if (index === chunk.length) this.#lasts[at] = chunk[index - 1] as string;
  }

  /** Where the first key at least `text` is (`strict`: greater than `text`); past the end when there is none. */
  seek(text: string, strict: boolean): KeyPosition {
    const at = bound(this.#lasts, text, strict);
    const chunk = this.#chunks[at];
    return chunk === undefined ? { chunk: at, index: 0 } : { chunk: at, index: bound(chunk, text, strict) };
  }

  /** The key at `position`, or `undefined` past the end. */
  at(position: KeyPosition): string | undefined {
    return this.#chunks[position.chunk]?.[position.index];
  }

  /** The position after `position`. */
  next(position: KeyPosition): KeyPosition {
    const chunk = this.#chunks[position.chunk];
    return chunk !== undefined && position.index + 1 < chunk.length
      ? { chunk: position.chunk, index: position.index + 1 }
      : { chunk: position.chunk + 1, index: 0 };
  }
}
