/**
 * Postgres text is UTF-8 without NUL: a JavaScript string with a lone surrogate cannot be stored as given
 * (drivers replace it with U+FFFD, so two different keys could land on one row, and jsonb refuses it).
 * `createLeases` already refuses such input; these checks keep the store safe when it is called directly.
 */
import { assertStorableText } from '../../validate.js';

/** Throws `InvalidArgumentError` when `value` (a string) cannot be stored exactly. */
export function assertEncodable(what: string, value: string | null | undefined): void {
  if (typeof value === 'string') assertStorableText(what, value);
}

/** Checks every name and value of an attribute map. */
export function assertEncodableAttributes(attributes: Readonly<Record<string, string>> | undefined): void {
  for (const [name, value] of Object.entries(attributes ?? {})) {
    assertEncodable('attribute name', name);
    assertEncodable(`attribute ${name}`, value);
  }
}
