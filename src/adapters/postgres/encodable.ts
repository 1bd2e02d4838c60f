/**
 * Postgres text is UTF-8 without NUL: a JavaScript string with a lone surrogate cannot be stored as given
 * (drivers replace it with U+FFFD, so two different keys could land on one row, and jsonb refuses it).
 * `createLeases` already refuses such input; these checks keep the store safe when it is called directly.
 */
import { InvalidArgumentError } from '../../errors.js';
import { assertStorableText, describe } from '../../validate.js';

/**
 * The most attributes a grant's row keeps (its `attributes` jsonb is read by every fenced operation).
 * NOTE: the same bound as `createLeases`' validation; repeated so a store called directly keeps it too.
 */
export const MAX_STORED_ATTRIBUTES = 64;

/** Throws `InvalidArgumentError` when `value` (a string) cannot be stored exactly. */
export function assertEncodable(what: string, value: string | null | undefined): void {
  if (typeof value === 'string') assertStorableText(what, value);
}

/** Checks every name and value of an attribute map. */
export function assertEncodableAttributes(attributes: Readonly<Record<string, string>> | undefined): void {
  const entries = Object.entries(attributes ?? {});
  if (entries.length > MAX_STORED_ATTRIBUTES)
    throw new InvalidArgumentError(`at most ${MAX_STORED_ATTRIBUTES} attributes per grant, got ${entries.length}`);
  for (const [name, value] of entries) {
    assertEncodable('attribute name', name);
    assertEncodable(`attribute ${name}`, value);
  }
}

/** Checks every name and value of key-state values (`null`: absent) before any I/O. */
export function assertEncodableState(what: string, values: Readonly<Record<string, string | null>>): void {
  if (typeof values !== 'object' || values === null)
    throw new InvalidArgumentError(`${what} must be an object of names to strings or null`);
  for (const [name, value] of Object.entries(values)) {
    assertEncodable(`${what} name`, name);
    if (value !== null && typeof value !== 'string')
      throw new InvalidArgumentError(`${what} ${name} must be a string or null, got ${describe(value)}`);
    assertEncodable(`${what} ${name}`, value);
  }
}
