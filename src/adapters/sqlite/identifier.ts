/**
 * Table names: validated as plain identifiers and always quoted, so a configured name can never inject SQL.
 * Keys, secrets' hashes, tokens and every other value travel as bind parameters.
 */
import { describeValue as describe, InvalidArgumentError } from '../../store-entry.js';

/** A letter or underscore, then letters, digits or underscores; at most 64 characters. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** A validated table name and its quoted form, ready to splice into SQL. */
export interface TableName {
  /** As configured: `leasefence_leases`. */
  readonly name: string;
  /** Double-quoted: `"leasefence_leases"`. */
  readonly quoted: string;
}

/** Validates `name` as an identifier (case-sensitive in leasefence's eyes; SQLite folds ASCII case). */
export function tableName(name: unknown, what = 'table'): TableName {
  if (typeof name !== 'string' || !IDENTIFIER.test(name)) {
    throw new InvalidArgumentError(
      `${what} name must be an identifier (a letter or underscore, then letters, digits, underscores; at most 64 characters), got ${describe(name)}`,
    );
  }
  // NOTE: names starting with sqlite_ are reserved for SQLite's own tables.
  if (/^sqlite_/i.test(name))
    throw new InvalidArgumentError(`${what} name must not start with sqlite_ (reserved by SQLite), got ${JSON.stringify(name)}`);
  return { name, quoted: `"${name}"` };
}
