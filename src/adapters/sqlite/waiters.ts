/**
 * A key's queue of waiting claims (fence/queue.ts) as the SQLite store keeps it: the `waiters` column of the lease
 * row, NULL when nobody waits (most rows), otherwise a JSON array of `[waiterId, holder, arrivedAt, expiresAt]` in
 * queue order. It is read as a member of the row's packed record (rows.ts), so the read of a row nobody waits for is
 * unchanged, and written only by the statement below: the record's upsert leaves it as it is, so every operation
 * that is not a claim or a dequeue (and claim-next's and a semaphore's grants) keeps the queue without touching it.
 */
import type { QueuedWaiter } from '../../store-entry.js';
import type { TableName } from './identifier.js';

/** One stored waiter. */
export type StoredWaiter = readonly [waiterId: string, holder: string, arrivedAt: number, expiresAt: number];

export const NO_WAITERS: readonly QueuedWaiter[] = Object.freeze([]);

/**
 * The column's text for `waiters`: NULL for an empty queue. NOTE: JSON escapes a lone surrogate, so any id or holder
 * survives the file's UTF-8.
 */
export function waitersText(waiters: readonly QueuedWaiter[]): string | null {
  if (waiters.length === 0) return null;
  return JSON.stringify(waiters.map((waiter): StoredWaiter => [waiter.waiterId, waiter.holder, waiter.arrivedAt, waiter.expiresAt]));
}

/** The waiters of the column as the packed record carries it (already parsed), `NO_WAITERS` for NULL. */
export function waitersOf(stored: readonly StoredWaiter[] | null | undefined): readonly QueuedWaiter[] {
  if (stored === null || stored === undefined || stored.length === 0) return NO_WAITERS;
  return stored.map(([waiterId, holder, arrivedAt, expiresAt]) => ({ waiterId, holder, arrivedAt, expiresAt }));
}

/**
 * Whether a transition changed the queue of the record it was decided on (`before`). NOTE: the core returns the
 * very array it read when nothing expired and nobody joined or left, and an empty queue stays NULL either way.
 */
export function waitersChanged(before: readonly QueuedWaiter[], after: readonly QueuedWaiter[]): boolean {
  return after !== before && (after.length > 0 || before.length > 0);
}

/**
 * ATOMICITY: one statement, inside the claim's or dequeue's `BEGIN IMMEDIATE`, after the read the queue was decided
 * on; it writes the queue alone (a waiting claim's refusal changes nothing else). Bind: the column's text, the key.
 */
export function updateWaitersSql(table: TableName): string {
  return `UPDATE ${table.quoted} SET waiters = ? WHERE key = ?`;
}
