/**
 * Semaphores on the SQLite store (issue 25, part 2): `acquirePermit`, one `BEGIN IMMEDIATE` transaction on the
 * store's clock. A permit is an ordinary lease row under its key `{semaphore}:permit-<index>`; the acquire reads
 * every row of the semaphore's permit keys with one range on the primary key (the keys that start with
 * `{semaphore}:permit-`, contiguous in the key column's BINARY order), lets the pure `fence/permits.ts#acquirePermit`
 * decide, and writes the chosen permit's row. SQLite's write lock serialises it with every other operation of every
 * connection and process on the file: no two acquires ever count the same live permits, and no permit is ever busy
 * (a fenced write's callback runs inside its own transaction, under the same lock).
 *
 * A permit's row is no item (`item_set` stays NULL): claim-next never sees it.
 */
import {
  acquirePermit,
  assertSemaphore,
  permitOf,
  type AcquirePermitCommand,
  type AcquirePermitOutcome,
  type LeaseRecord,
  type PermitCandidate,
  type StoreTime,
} from '../../store-entry.js';
import type { SqliteClient } from './client.js';
import type { TableName } from './identifier.js';
import { assertCheckpointRead, CLAIM_RECORD_COLUMNS_SQL, recordOf } from './rows.js';
import { hashedClaim } from './secret-hash.js';
import { statementFor } from './statement-cache.js';
import { immediate } from './transaction.js';

/** What the permit method needs of the store it belongs to. */
export interface SqlitePermitsHost {
  readonly client: SqliteClient;
  readonly table: TableName;
  /** The store's now (call it inside the transaction). */
  now(): StoreTime;
  /** The store's floor of any new token at `now`: the clock floor, and above every removed record's token. */
  mintFloor(now: StoreTime): bigint;
  /** Writes a record (the upsert). */
  write(record: LeaseRecord): void;
}

/**
 * The rows of one semaphore's permit keys: `key >= '{name}:permit-' AND key < '{name}:permit.'` ('.' follows '-'),
 * a range search on the primary key (BINARY, byte order), never a scan of the table and never LIKE (case-blind, and
 * `_`/`%` in a name would be wildcards). Keys in the range that are no permit key (`{name}:permit-x`) are read and
 * passed over. The checkpoint is read only where an acquire may take the permit over or answer its own grant again
 * (`CLAIM_RECORD_COLUMNS_SQL`). ATOMICITY: inside the acquire's `BEGIN IMMEDIATE`, under the write lock. Bind: now,
 * the acquire's secret hash, the range's two ends.
 */
export function selectPermitsSql(table: TableName): string {
  return `SELECT ${CLAIM_RECORD_COLUMNS_SQL}
FROM ${table.quoted} WHERE key >= ? AND key < ?`;
}

/** The two ends of the key range of a semaphore's permit keys (see `selectPermitsSql`). */
export function permitKeyRange(semaphore: string): readonly [from: string, to: string] {
  return [`{${semaphore}}:permit-`, `{${semaphore}}:permit.`];
}

/** Creates the SQLite store's `acquirePermit` (synchronous: the store wraps it in a promise). */
export function createSqlitePermits(host: SqlitePermitsHost): (command: AcquirePermitCommand) => AcquirePermitOutcome {
  const { client } = host;
  const selectPermits = selectPermitsSql(host.table);
  return (command) => {
    assertSemaphore(command.semaphore, command.limit);
    const stored = hashedClaim(command);
    const [from, to] = permitKeyRange(command.semaphore);
    return immediate<AcquirePermitOutcome>(client, 'acquire permit', () => {
      const now = host.now();
      const rows = statementFor(client, selectPermits).all(now, stored.secret, from, to);
      const candidates: PermitCandidate[] = [];
      const rowOf = new Map<number, unknown>();
      for (const row of rows) {
        const permit = permitOf((row as { key: string }).key);
        const record = recordOf(row);
        // NOTE: every row in the range is of this semaphore; a key of it that is no permit key is passed over, and a
        // row without a record (an item never claimed) is a permit never used: left out, as the core allows.
        if (permit === null || record === null) continue;
        candidates.push({ index: permit.index, record, busy: false });
        rowOf.set(permit.index, row);
      }
      const { key, transition } = acquirePermit(candidates, stored, now, host.mintFloor(now));
      if (key === null || !transition.changed || transition.record === null) return { outcome: transition.outcome, commit: false };
      const { outcome } = transition;
      if (outcome.ok) assertCheckpointRead(rowOf.get(outcome.index), true);
      host.write(transition.record);
      return { outcome, commit: true };
    });
  };
}
