/**
 * Prepared statements. leasefence's statements are long (the lock, the decision and the pre-image in one
 * CTE); parsing and planning them on every call costs more than the round trip on a local network. pg
 * prepares a statement once per connection when `query` gets `{ name, text, values }`; `fromPostgresJs`
 * turns that config into a prepared postgres.js query; PGlite runs in-process.
 */
import type { PostgresClient, PostgresQueryable } from './client.js';

/** How many distinct statement texts get a name (fixed operations plus wrapped fenced statements). */
const MAX_NAMED = 256;
const names = new Map<string, string>();

/**
 * 64 bits of FNV-1a over the UTF-16 code units of `text`, as 16 hex digits (two 32-bit lanes with
 * different offsets, so that a collision needs both to collide).
 */
function textHash(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let index = 0; index < text.length; index += 1) {
    const unit = text.charCodeAt(index);
    a = Math.imul(a ^ unit, 0x01000193);
    b = Math.imul(b ^ unit, 0x01000193) ^ (a >>> 15);
  }
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0');
}

/** The name of `text` as a prepared statement, or `null` when too many texts were named already. */
export function statementName(text: string): string | null {
  let name = names.get(text);
  if (name === undefined) {
    if (names.size >= MAX_NAMED) return null;
    // NOTE: derived from the text, so one text always has one name, in this copy of leasefence and in any
    // other loaded in the same process (a CJS and an ESM copy, two versions) that shares a connection: pg
    // refuses a name reused for another text on a connection.
    name = `leasefence_${textHash(text)}`;
    names.set(text, name);
  }
  return name;
}

/** Whether `client` is a pg Pool (pg-pool's documented counters) or says it takes pg's query configs. */
export function acceptsNamedStatements(client: PostgresClient): boolean {
  if (client.acceptsNamedStatements === true) return true;
  const pool = client as unknown as { totalCount?: unknown; idleCount?: unknown; waitingCount?: unknown };
  return typeof pool.totalCount === 'number' && typeof pool.idleCount === 'number' && typeof pool.waitingCount === 'number';
}

type QueryConfig = { readonly name: string; readonly text: string; readonly values: unknown[] };

/** Sends `text` on `queryable`, as a named statement when `named` and a name is available. */
export function send(queryable: PostgresQueryable, text: string, params: unknown[], named: boolean): Promise<{ rows: unknown[] }> {
  const name = named ? statementName(text) : null;
  if (name === null) return queryable.query(text, params);
  const query = queryable.query as unknown as (config: QueryConfig) => Promise<{ rows: unknown[] }>;
  return query.call(queryable, { name, text, values: params });
}
