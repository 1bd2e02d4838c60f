/**
 * Redis key names. Every key the adapter writes for a lease (its record, where request memos live, and its
 * submissions) carries the lease key's hash tag, so in Redis Cluster they all live in one slot, and so can
 * your own keys:
 *
 * - a lease key without braces, `job:42`, gets the tag `{job:42}`: name your keys `{job:42}:result`;
 * - a lease key with a hash tag of its own, `order:{42}:ship`, keeps it (`{42}`): `order:{42}:invoice`
 *   lands in the same slot, like any key tagged `{42}`.
 *
 * `hashTagOf(leaseKey)` returns the tag to put in your key names. Names never collide: the lease key is
 * spelled out in full after the tag whenever the tag is not the whole key.
 */
import { InvalidArgumentError } from '../../errors.js';
import { describe } from '../../validate.js';

/** The default namespace of the adapter's keys. */
export const DEFAULT_PREFIX = 'leasefence:';

/** Redis' own hash tag of a key name: the text between the first `{` and the next `}`, when not empty. */
function ownHashTag(name: string): string | null {
  const open = name.indexOf('{');
  if (open < 0) return null;
  const close = name.indexOf('}', open + 1);
  return close > open + 1 ? name.slice(open + 1, close) : null;
}

/** The text inside the braces of the adapter's keys for `name` (never contains `}`). */
function tagText(name: string): string {
  if (!name.includes('}')) return name;
  // NOTE: with a '}' but no usable tag, no wrapping can reproduce Redis' slot of the name; any stable tag
  // keeps the lease's own keys together.
  return ownHashTag(name) ?? name.replaceAll('}', ')');
}

/**
 * The hash tag (with braces) that the adapter's keys for `leaseKey` carry: put it in your own key names to
 * keep them in the lease's Redis Cluster slot.
 *
 * ```ts
 * const resultKey = `${hashTagOf('job:42')}:result`; // '{job:42}:result'
 * ```
 */
export function hashTagOf(leaseKey: string): string {
  return `{${tagText(leaseKey)}}`;
}

/** The adapter's key names under one prefix. */
export interface KeyNames {
  /** The hash holding a lease record (or a token gate's highest writer). */
  record(name: string, kind: 'lease' | 'gate'): string;
  /**
   * The hash holding a lease key's recorded submissions (see `scripts.ts`): apart from the record, so that
   * no hot-path script reads them; in the record's slot (the same hash tag).
   */
  submissions(name: string): string;
}

/** Checks a prefix (no braces: the hash tag must come from the lease key) and builds key names under it. */
export function keyNames(prefix: string): KeyNames {
  if (typeof prefix !== 'string' || prefix.includes('{') || prefix.includes('}')) {
    throw new InvalidArgumentError(
      `prefix must be a string without '{' or '}' (the lease key provides the hash tag), got ${describe(prefix)}`,
    );
  }
  const base = (name: string): string => {
    const tag = tagText(name);
    return tag === name ? `${prefix}{${name}}` : `${prefix}{${tag}}#${name}`;
  };
  return {
    record: (name, kind) => `${base(name)}:${kind}`,
    submissions: (name) => `${base(name)}:submissions`,
  };
}

/** Whether `text` is well-formed UTF-16 (no lone surrogate, which Redis would store as U+FFFD). */
export function isWellFormed(text: string): boolean {
  return !/\p{Surrogate}/u.test(text);
}
