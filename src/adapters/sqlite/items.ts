/**
 * Claim-next on the SQLite store (issue 24, capability 1): `addItems`, `removeItems` and `claimNext`, each one
 * `BEGIN IMMEDIATE` transaction on the store's clock. The item lives on its key's lease row (`item_set`,
 * `item_due_at`, `item_order`), and `available_at` is `availableSince(record, item)`, set by every statement that
 * writes the row (available-at.ts), so the partial index `<table>_ready` (item_set, available_at, item_order) hands
 * a set's items in grant order from its front: a claim-next reads the first claimable row (with `expect`, the rows
 * in front of the first that matches), never the whole set. An item with no record (added before its first claim,
 * or kept by `remove`) is a row whose token is NULL, which reads as no record.
 *
 * SQLite's write lock makes each call atomic across processes (no `SKIP LOCKED`: no other writer runs meanwhile,
 * so no item is ever busy). The decision is the pure core's `claimNext` over the rows read, and each row's stored
 * `available_at` is checked against the pure `availableSince` as it is read (a mismatch is a bug, thrown loudly).
 */
import { assertName, describeValue as describe, InvalidArgumentError, type LeaseRecord, type StoreTime } from '../../store-entry.js';
import {
  availableSince,
  claimNext,
  stateMatches,
  type AddItemsCommand,
  type AddItemsOutcome,
  type ClaimNextCommand,
  type ClaimNextOutcome,
  type ItemCandidate,
  type RemoveItemsCommand,
  type RemoveItemsOutcome,
} from '../../fence/claim-next.js';
import { checkedItemKeys, checkedNotBefore } from '../../validate.js';
import { availableAtSql, ROW_INPUTS } from './available-at.js';
import type { SqliteClient } from './client.js';
import type { TableName } from './identifier.js';
import { RECORD_COLUMNS_SQL, recordOf } from './rows.js';
import { hashedClaim } from './secret-hash.js';
import { statementFor } from './statement-cache.js';
import { immediate } from './transaction.js';

/** How many index rows a claim-next with `expect` reads at a time (rows whose state does not match are passed). */
const EXPECT_PAGE = 16;

/** The largest time a row can hold (a JS Date's range): the upper bound of "every later row". */
const END_OF_TIME = 8.64e15;

/** What the item methods need of the store they belong to. */
export interface SqliteItemsHost {
  readonly client: SqliteClient;
  readonly table: TableName;
  /** The store's now (call it inside the transaction). */
  now(): StoreTime;
  /** The floor of a new token of `record` at `now` (the clock floor, and the removed floor for a key with no token). */
  floorFor(record: LeaseRecord | null, now: StoreTime): bigint;
  /** Writes a record (the upsert that also sets `available_at`). */
  write(record: LeaseRecord): void;
}

export interface SqliteItemsMethods {
  addItems(command: AddItemsCommand): AddItemsOutcome;
  removeItems(command: RemoveItemsCommand): RemoveItemsOutcome;
  claimNext(command: ClaimNextCommand): ClaimNextOutcome;
}

/**
 * The key as UTF-16 code units, big-endian: byte order (a BLOB compares with memcmp) is then code-unit order, the
 * order `byAvailability` breaks ties by. The key column's own order is UTF-8's, which puts a character above
 * U+FFFF after U+E000..U+FFFF where code units put it before.
 */
export function itemOrder(key: string): Buffer {
  const bytes = Buffer.allocUnsafe(key.length * 2);
  for (let index = 0; index < key.length; index++) bytes.writeUInt16BE(key.charCodeAt(index), index * 2);
  return bytes;
}

/** A row of a claim-next read: the record's columns and the item's. */
interface ItemRow {
  readonly key: string;
  readonly item_due_at: number | bigint;
  readonly available_at: number | bigint | null;
  readonly item_order: Uint8Array;
}

/** `available_at` of an existing row becoming an item: its record's columns as they are, the new item's due time. */
const availableAtOnAdd = availableAtSql({ ...ROW_INPUTS, itemSet: 'excluded.item_set', itemDueAt: 'excluded.item_due_at' });

/** The statements' text for one lease table. */
function itemStatements(table: TableName) {
  const columns = `${RECORD_COLUMNS_SQL}, item_due_at, available_at, item_order`;
  return {
    /** The set another set's item `key` belongs to (nothing: none). Bind: key, set. */
    otherSet: `SELECT item_set FROM ${table.quoted} WHERE key = ? AND item_set IS NOT NULL AND item_set <> ?`,
    /**
     * Adds one item: a row with no record, or the item columns on the key's row (with `available_at` from its
     * record as it is); a key already an item (of this set: the other sets were refused before) is left as it is.
     * RETURNING a row iff added. Bind: key, set, due time, item order, due time (positional `?` only: better-sqlite3
     * takes `?1` for a named parameter).
     */
    add: `INSERT INTO ${table.quoted} (key, token, item_set, item_due_at, item_order, available_at) VALUES (?, NULL, ?, ?, ?, ?)
ON CONFLICT (key) DO UPDATE SET item_set = excluded.item_set, item_due_at = excluded.item_due_at, item_order = excluded.item_order,
  available_at = ${availableAtOnAdd}
WHERE item_set IS NULL
RETURNING key`,
    /** Removes an item with no record: its row goes. Bind: key, set. */
    removeBare: `DELETE FROM ${table.quoted} WHERE key = ? AND item_set = ? AND token IS NULL RETURNING key`,
    /** Removes an item of a record: the record stays. Bind: key, set. */
    removeItem: `UPDATE ${table.quoted} SET item_set = NULL, item_due_at = NULL, item_order = NULL, available_at = NULL
WHERE key = ? AND item_set = ? RETURNING key`,
    /** The live grants of the set's items made with a secret (its hash). Bind: set, secret hash, now. */
    repeated: `SELECT ${columns} FROM ${table.quoted}
WHERE item_set = ? AND secret_hash = ? AND holder IS NOT NULL AND (expires_at IS NULL OR expires_at > ?)`,
    /**
     * A page of the set's items in grant order, from the index: `available_at` from `from` to `to`, after the
     * row (from, order) (keyset paging; an empty BLOB starts at `from` itself). Bind: set, from, to, from, order.
     * NOTE: the limit is a literal: with `LIMIT ?` the same statement cost ~10 µs more (measured on 1,000 items).
     */
    page: (limit: number) => `SELECT ${columns} FROM ${table.quoted}
WHERE item_set = ? AND available_at >= ? AND available_at <= ? AND (available_at > ? OR item_order > ?)
ORDER BY available_at, item_order LIMIT ${limit}`,
  };
}

/** Creates the item methods of one SQLite store (each synchronous: the store wraps them in promises). */
export function createSqliteItems(host: SqliteItemsHost): SqliteItemsMethods {
  const { client, table } = host;
  const sql = itemStatements(table);
  const firstPage = sql.page(1);
  const expectPage = sql.page(EXPECT_PAGE);

  /** The candidate of a row read for claim-next, checking its stored `available_at` against the pure function. */
  const candidateOf = (row: unknown, set: string): ItemCandidate => {
    const item = { set, key: (row as ItemRow).key, dueAt: Number((row as ItemRow).item_due_at) };
    const record = recordOf(row);
    const stored = (row as ItemRow).available_at;
    const expected = availableSince(record, item);
    if ((stored === null ? null : Number(stored)) !== expected) {
      throw new Error(
        `leasefence/sqlite: the available_at of item ${JSON.stringify(item.key)} is ${stored}, but its record says ${expected}; this is a bug`,
      );
    }
    return { item, record, busy: false };
  };

  /**
   * The set's rows from `from` to `to` in grant order until the first whose state matches `expect` (included),
   * or the end. Without `expect` the first row matches: one row is read.
   */
  const readUntilMatch = (command: ClaimNextCommand, from: StoreTime, to: StoreTime): ItemCandidate[] => {
    const [pageSize, page] = command.expect === undefined ? [1, firstPage] : [EXPECT_PAGE, expectPage];
    const read: ItemCandidate[] = [];
    let after: { at: StoreTime; order: Uint8Array } = { at: from, order: Buffer.alloc(0) };
    for (;;) {
      const rows = statementFor(client, page).all(command.set, after.at, to, after.at, after.order) as ItemRow[];
      for (const row of rows) {
        const candidate = candidateOf(row, command.set);
        read.push(candidate);
        if (stateMatches(candidate.record, command.expect)) return read;
      }
      const last = rows[rows.length - 1];
      if (last === undefined || rows.length < pageSize) return read;
      after = { at: Number(last.available_at), order: last.item_order };
    }
  };

  return {
    addItems(command) {
      const keys = checkedItemKeys(command.set, command.keys);
      const delay = checkedNotBefore(command.notBeforeMs);
      const { set } = command;
      return immediate<AddItemsOutcome>(client, 'add items', () => {
        const now = host.now();
        for (const key of keys) {
          const other = statementFor(client, sql.otherSet).get(key, set) as { item_set: string } | undefined;
          if (other !== undefined)
            return { outcome: { ok: false, reason: 'in-another-set', set, key, otherSet: other.item_set, now }, commit: false };
        }
        const dueAt = now + delay;
        const added = keys.filter((key) => statementFor(client, sql.add).get(key, set, dueAt, itemOrder(key), dueAt) !== undefined);
        return { outcome: { ok: true, set, added, dueAt, now }, commit: added.length > 0 };
      });
    },

    removeItems(command) {
      const keys = checkedItemKeys(command.set, command.keys);
      const { set } = command;
      return immediate<RemoveItemsOutcome>(client, 'remove items', () => {
        const now = host.now();
        const removed = keys.filter(
          (key) =>
            statementFor(client, sql.removeBare).get(key, set) !== undefined ||
            statementFor(client, sql.removeItem).get(key, set) !== undefined,
        );
        return { outcome: { ok: true, set, removed, now }, commit: removed.length > 0 };
      });
    },

    claimNext(command) {
      assertName('set', command.set);
      if (command.onExpired !== 'take-over' && command.onExpired !== 'record-first')
        throw new InvalidArgumentError(`onExpired must be 'take-over' or 'record-first', got ${describe(command.onExpired)}`);
      const stored = hashedClaim(command);
      return immediate<ClaimNextOutcome>(client, 'claim next', () => {
        const now = host.now();
        // NOTE: delivered twice: a live grant this secret already holds is answered again, nothing read further.
        const repeated = (statementFor(client, sql.repeated).all(command.set, stored.secret, now) as ItemRow[]).map((row) =>
          candidateOf(row, command.set),
        );
        let candidates = repeated;
        if (candidates.length === 0) {
          candidates = readUntilMatch(stored, -END_OF_TIME, now);
          // NOTE: nothing claimable: the first later item whose state matches gives idle's nextAt.
          if (!candidates.some((candidate) => stateMatches(candidate.record, command.expect)))
            candidates = readUntilMatch(stored, now + 1, END_OF_TIME);
        }
        // NOTE: the token floor depends on the chosen record (only a key with no token of its own reads the removed
        // floor, as a claim does): decide which, then decide again with its floor (the same key: the floor only
        // moves the token).
        const probe = claimNext(candidates, stored, now, 0n);
        const chosen = candidates.find((candidate) => candidate.item.key === probe.key);
        const { key, transition } = chosen === undefined ? probe : claimNext(candidates, stored, now, host.floorFor(chosen.record, now));
        if (key !== null && transition.changed && transition.record !== null) host.write(transition.record);
        return { outcome: transition.outcome, commit: key !== null && transition.changed };
      });
    },
  };
}
