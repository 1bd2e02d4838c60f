/**
 * Prepared statements, kept per connection: preparing costs more than running a short statement (SQLite
 * parses and plans it), so leasefence prepares each SQL text once per connection, its own statements and the
 * ones a fenced write's callback runs through the context. Bounded: the oldest is dropped past the limit
 * (a callback that builds SQL text per call would otherwise grow it forever).
 */
import type { SqliteClient, SqliteStatement } from './client.js';

/** How many statements are kept per connection. */
const MAX_STATEMENTS = 200;

const caches = new WeakMap<SqliteClient, Map<string, SqliteStatement>>();

/** The prepared statement of `sql` on `client`, prepared on first use. */
export function statementFor(client: SqliteClient, sql: string): SqliteStatement {
  let cache = caches.get(client);
  if (cache === undefined) {
    cache = new Map();
    caches.set(client, cache);
  }
  let statement = cache.get(sql);
  if (statement === undefined) {
    statement = client.prepare(sql);
    if (cache.size >= MAX_STATEMENTS) cache.delete(cache.keys().next().value as string);
    cache.set(sql, statement);
  }
  return statement;
}
