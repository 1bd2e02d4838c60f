/**
 * How `npm run bench:scale` fills a store with many keys, one function per store, all in this file so that a
 * new stored layout needs no change here (or a change in one place).
 *
 * The keys are `k:<i>`; `i % 3` picks the kind: 0 released, 1 live (granted for an hour), 2 released with a
 * checkpoint of 1 KiB of JSON. Each kind is first made ONCE through the public API (`leases.claim`,
 * `checkpoint`, `release`) on a template key (`tpl-released`, `tpl-live`, `tpl-checkpoint`); then:
 *
 * - memory: every key is made through the public API, the same three calls (the store IS its API);
 * - Redis: every Redis key whose name contains the template's lease key is copied with `DUMP` / `RESTORE`
 *   under the name with the lease key replaced (pipelined, 1,000 per round trip), a hash kept in the
 *   template's encoding (see fillRedis);
 * - PostgreSQL and SQLite: every row of the store's tables with a text column equal to the template's key
 *   is copied by one `INSERT ... SELECT` per table and kind, that column replaced by the new key (a
 *   `generate_series` or recursive CTE of the indexes; identity / serial columns left to their default).
 *
 * What the copies depend on (checked after every fill by `checkFill`, which inspects copies and claims a live
 * one, so a layout that breaks these assumptions fails loudly instead of measuring wrong records):
 * - Redis: a lease's Redis keys spell the lease key verbatim in their names (the hash tag does), and their
 *   values do not contain it; keys shared by all leases (none today) are not copied.
 * - SQL: a lease's rows hold its key verbatim in one text column per table, and in no other column; no
 *   unique constraint other than on that column (and on defaulted serial columns).
 * Copied records are byte-for-byte the template's otherwise: the same token, secret hash and store times
 * (the live grant expires an hour after the template was claimed).
 */
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type Database from 'better-sqlite3';
import type { Leases } from '../src/leases-types.js';
import type { Operator } from '../src/operator.js';

/** The three kinds of filled keys, by `i % 3`. */
export const KINDS = ['released', 'live', 'checkpoint'] as const;
export type Kind = (typeof KINDS)[number];

export const kindOf = (i: number): Kind => KINDS[i % 3]!;
export const keyOf = (i: number): string => `k:${i}`;
export const templateOf = (kind: Kind): string => `tpl-${kind}`;

/**
 * A checkpoint whose JSON text is 1,024 bytes, of letters and digits in a fixed pseudo-random order (a
 * repeated character would compress to nothing where a store compresses, which user progress does not).
 */
export const CHECKPOINT_1KIB = {
  data: Array.from({ length: 1024 - '{"data":""}'.length }, (_, i) => ((i * 2_654_435_761) >>> 7).toString(36).slice(-1)).join(''),
};

/** Makes one key of `kind` through the public API. */
export async function makeKey(leases: Leases, key: string, kind: Kind): Promise<void> {
  const claimed = await leases.claim(key);
  if (!claimed.ok) throw new Error(`fill: ${key} not granted (${claimed.reason})`);
  if (kind === 'live') return;
  if (kind === 'checkpoint') {
    const saved = await leases.checkpoint(claimed.lease, CHECKPOINT_1KIB);
    if (!saved.ok) throw new Error(`fill: checkpoint of ${key} refused`);
  }
  const released = await leases.release(claimed.lease);
  if (!released.ok) throw new Error(`fill: release of ${key} refused`);
}

/** Makes the three template keys (every fill but memory's copies them). */
export async function makeTemplates(leases: Leases): Promise<void> {
  for (const kind of KINDS) await makeKey(leases, templateOf(kind), kind);
}

/** The indexes in [from, to) of one kind. */
function* indexesOf(kind: Kind, from: number, to: number): Generator<number> {
  const first = from + ((KINDS.indexOf(kind) - (from % 3) + 3) % 3);
  for (let i = first; i < to; i += 3) yield i;
}

/** Memory: keys [from, to) through the public API, one after another. */
export async function fillMemory(leases: Leases, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i += 1) await makeKey(leases, keyOf(i), kindOf(i));
}

/** Redis: DUMP every key of each template once, RESTORE copies for keys [from, to). */
export async function fillRedis(redis: Redis, from: number, to: number): Promise<void> {
  for (const kind of KINDS) {
    const template = templateOf(kind);
    const names = await scanAll(redis, `*${template}*`);
    if (names.length === 0) throw new Error(`fill: no Redis key names ${template}`);
    const dumps = await Promise.all(names.map(async (name) => [name, await redis.dumpBuffer(name)] as const));
    // NOTE: RESTORE re-encodes a small hash compactly (listpack) even when the template, like every hash
    // that once held a field longer than hash-max-listpack-value, is a hashtable, which Redis never turns
    // back into a listpack: adding and removing a long field makes the copy what a used key is.
    const widened = new Set<string>();
    for (const name of names) if ((await redis.object('ENCODING', name)) === 'hashtable') widened.add(name);
    let pipeline = redis.pipeline();
    let queued = 0;
    for (const i of indexesOf(kind, from, to)) {
      for (const [name, dump] of dumps) {
        if (dump === null) throw new Error(`fill: ${name} vanished`);
        const copy = name.replaceAll(template, keyOf(i));
        pipeline.restore(copy, 0, dump, 'REPLACE');
        if (widened.has(name)) pipeline.hset(copy, WIDE_FIELD, WIDE_VALUE).hdel(copy, WIDE_FIELD);
        queued += 1;
      }
      if (queued >= 1_000) {
        await execOrThrow(pipeline);
        pipeline = redis.pipeline();
        queued = 0;
      }
    }
    if (queued > 0) await execOrThrow(pipeline);
  }
}

const WIDE_FIELD = 'bench:scale:wide';
const WIDE_VALUE = '-'.repeat(1024);

async function execOrThrow(pipeline: ReturnType<Redis['pipeline']>): Promise<void> {
  for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error;
}

async function scanAll(redis: Redis, match: string): Promise<string[]> {
  const names: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 1_000);
    names.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return names;
}

/** A table with the text column that holds the lease key, and its columns in order. */
interface KeyedTable {
  readonly table: string;
  readonly keyColumn: string;
  /** Columns to copy (serial / identity columns are left to their defaults). */
  readonly columns: readonly string[];
}

const quote = (identifier: string): string => `"${identifier.replaceAll('"', '""')}"`;

/** PostgreSQL: the tables of `schema` holding the template's key in a text column (not `except`). */
export async function postgresKeyedTables(client: pg.Pool, except: readonly string[], schema = 'public'): Promise<KeyedTable[]> {
  const columns = (
    await client.query<{ table_name: string; column_name: string; data_type: string; generated: boolean }>(
      `SELECT c.table_name, c.column_name, c.data_type,
         (c.is_identity = 'YES' OR coalesce(c.column_default, '') LIKE 'nextval(%' OR c.is_generated = 'ALWAYS') AS generated
       FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name)
       WHERE c.table_schema = $1 AND t.table_type = 'BASE TABLE' ORDER BY c.table_name, c.ordinal_position`,
      [schema],
    )
  ).rows.filter((column) => !except.includes(column.table_name));
  const tables: KeyedTable[] = [];
  for (const table of new Set(columns.map((column) => column.table_name))) {
    const own = columns.filter((column) => column.table_name === table);
    for (const column of own.filter((c) => c.data_type === 'text' || c.data_type === 'character varying')) {
      const found = await client.query(`SELECT 1 FROM ${quote(schema)}.${quote(table)} WHERE ${quote(column.column_name)} = $1 LIMIT 1`, [
        templateOf('released'),
      ]);
      if (found.rowCount === 0) continue;
      tables.push({ table, keyColumn: column.column_name, columns: own.filter((c) => !c.generated).map((c) => c.column_name) });
      break;
    }
  }
  if (tables.length === 0) throw new Error('fill: no PostgreSQL table holds the template key');
  return tables;
}

/** PostgreSQL: copies of the template rows for keys [from, to), one INSERT ... SELECT per table and kind. */
export async function fillPostgres(client: pg.Pool, tables: readonly KeyedTable[], from: number, to: number): Promise<void> {
  for (const { table, keyColumn, columns } of tables) {
    const select = columns.map((column) => (column === keyColumn ? `'k:' || g` : `t.${quote(column)}`)).join(', ');
    for (const kind of KINDS) {
      const first = indexesOf(kind, from, to).next();
      if (first.done) continue;
      await client.query(
        `INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')})
         SELECT ${select} FROM ${quote(table)} AS t, generate_series($1::bigint, $2::bigint, 3) AS g WHERE t.${quote(keyColumn)} = $3`,
        [first.value, to - 1, templateOf(kind)],
      );
    }
  }
}

/** SQLite: the tables holding the template's key in a TEXT column (not `except`). */
export function sqliteKeyedTables(database: Database.Database, except: readonly string[]): KeyedTable[] {
  const names = (
    database.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).all() as { name: string }[]
  )
    .map((row) => row.name)
    .filter((name) => !except.includes(name));
  const tables: KeyedTable[] = [];
  for (const table of names) {
    const columns = database.prepare(`SELECT name, type, pk FROM pragma_table_info(?)`).all(table) as {
      name: string;
      type: string;
      pk: number;
    }[];
    for (const column of columns.filter((c) => c.type.toUpperCase() === 'TEXT')) {
      const found = database.prepare(`SELECT 1 FROM ${quote(table)} WHERE ${quote(column.name)} = ? LIMIT 1`).get(templateOf('released'));
      if (found === undefined) continue;
      // NOTE: an INTEGER PRIMARY KEY (rowid alias) is left to SQLite, as a serial column is in PostgreSQL.
      const copied = columns.filter(
        (c) => !(c.pk === 1 && c.type.toUpperCase() === 'INTEGER' && columns.filter((o) => o.pk > 0).length === 1),
      );
      tables.push({ table, keyColumn: column.name, columns: copied.map((c) => c.name) });
      break;
    }
  }
  if (tables.length === 0) throw new Error('fill: no SQLite table holds the template key');
  return tables;
}

/** SQLite: copies of the template rows for keys [from, to), in one transaction. */
export function fillSqlite(database: Database.Database, tables: readonly KeyedTable[], from: number, to: number): void {
  database.transaction(() => {
    for (const { table, keyColumn, columns } of tables) {
      const select = columns.map((column) => (column === keyColumn ? `'k:' || g.n` : `t.${quote(column)}`)).join(', ');
      for (const kind of KINDS) {
        const first = indexesOf(kind, from, to).next();
        if (first.done) continue;
        database
          .prepare(
            `WITH RECURSIVE g(n) AS (SELECT CAST(? AS INTEGER) UNION ALL SELECT n + 3 FROM g WHERE n + 3 < ?)
             INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')})
             SELECT ${select} FROM ${quote(table)} AS t, g WHERE t.${quote(keyColumn)} = ?`,
          )
          .run(first.value, to, templateOf(kind));
      }
    }
  })();
}

/**
 * Checks copies in [from, to) through the public API: each kind's state and checkpoint as the template's,
 * and a claim of a live copy refused. Throws when a copy does not read as its kind.
 */
export async function checkFill(leases: Leases, operator: Operator, from: number, to: number): Promise<void> {
  for (const kind of KINDS) {
    for (const i of [...indexesOf(kind, from, to)].filter((_, n, all) => n === 0 || n === all.length - 1)) {
      const key = keyOf(i);
      const seen = await operator.inspect(key);
      const live = seen.grant?.live === true;
      const ok =
        kind === 'live'
          ? live && seen.checkpoint === null
          : !live &&
            seen.ending?.kind === 'released' &&
            (kind === 'checkpoint' ? JSON.stringify(seen.checkpoint?.value) === JSON.stringify(CHECKPOINT_1KIB) : seen.checkpoint === null);
      if (!ok)
        throw new Error(
          `fill: ${key} does not read as ${kind}: ${JSON.stringify(seen, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`,
        );
      if (kind === 'live' && (await leases.claim(key)).ok) throw new Error(`fill: live copy ${key} was granted to another claim`);
    }
  }
}
