/**
 * Table names: validated as plain identifiers and always quoted, so a configured name can never inject
 * SQL. Keys and every other value travel as bind parameters.
 */
import { InvalidArgumentError } from '../../errors.js';

/**
 * One identifier part: a letter or underscore, then letters, digits or underscores; at most 48 characters,
 * so that derived names (`<table>_try_claim`) stay within Postgres's 63-byte limit.
 */
const PART = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;

/** A validated table name, optionally schema-qualified. */
export interface TableName {
  /** As configured: `leases` or `app.leases`. */
  readonly name: string;
  /** The schema as configured (`app`), or `null` when the name has none (the search_path decides). */
  readonly schema: string | null;
  /** The table's own name, without its schema: `leases`. */
  readonly bare: string;
  /** Quoted and qualified, ready to splice into SQL: `"app"."leases"`. */
  readonly quoted: string;
  /** A derived object in the same schema, quoted: `derive('try_claim')` is `"app"."leases_try_claim"`. */
  derive(suffix: string): string;
}

/** Double-quotes an identifier part that already passed `PART`. */
function quote(part: string): string {
  return `"${part}"`;
}

/**
 * Validates `name` (`table` or `schema.table`) and returns it quoted. Names are case-sensitive, because
 * they are always quoted: `Leases` and `leases` are different tables.
 */
export function tableName(name: unknown, what = 'table'): TableName {
  if (typeof name !== 'string') throw new InvalidArgumentError(`${what} name must be a string, got ${typeof name}`);
  const parts = name.split('.');
  if (parts.length > 2 || !parts.every((part) => PART.test(part))) {
    throw new InvalidArgumentError(
      `${what} name must be an identifier (letters, digits, underscores; at most 48 characters), optionally schema-qualified as schema.table; got ${JSON.stringify(name.slice(0, 100))}`,
    );
  }
  const quoted = parts.map(quote).join('.');
  const schemaPrefix = parts.length === 2 ? `${quote(parts[0] as string)}.` : '';
  const table = parts[parts.length - 1] as string;
  return {
    name,
    schema: parts.length === 2 ? (parts[0] as string) : null,
    bare: table,
    quoted,
    derive: (suffix) => `${schemaPrefix}${quote(`${table}_${suffix}`)}`,
  };
}

/** Validates a column name of a user's table and quotes it. */
export function columnName(name: unknown, what = 'column'): string {
  if (typeof name !== 'string' || !PART.test(name)) {
    throw new InvalidArgumentError(
      `${what} must be an identifier (letters, digits, underscores; at most 48 characters), got ${JSON.stringify(String(name).slice(0, 100))}`,
    );
  }
  return quote(name);
}
