/**
 * Postgres text is UTF-8: a JavaScript string with a lone surrogate cannot be stored as given (drivers
 * replace it with U+FFFD, so two different keys could land on one row, and jsonb refuses it). Such strings
 * are refused before any I/O.
 */
import { InvalidArgumentError } from '../../errors.js';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Throws `InvalidArgumentError` when `value` (a string) is not well-formed UTF-16. */
export function assertEncodable(what: string, value: string | null | undefined): void {
  if (typeof value === 'string' && LONE_SURROGATE.test(value)) {
    throw new InvalidArgumentError(`${what} contains a lone UTF-16 surrogate, which Postgres text cannot store`);
  }
}

/** Checks every name and value of an attribute map. */
export function assertEncodableAttributes(attributes: Readonly<Record<string, string>> | undefined): void {
  for (const [name, value] of Object.entries(attributes ?? {})) {
    assertEncodable('attribute name', name);
    assertEncodable(`attribute ${name}`, value);
  }
}
