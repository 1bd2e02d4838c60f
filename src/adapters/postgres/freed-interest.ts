/**
 * Waiter interest on the lease row: a release `pg_notify`s only when the row says someone waits
 * (`waited_until` later than the store's now), because PostgreSQL serialises notifying commits through
 * their WAL flush (docs/history/benchmarks.md, "PostgreSQL, round three") and most releases have nobody waiting. A
 * revoke always notifies (`revokedNotify`): the holder it ends listens too (`withLease`), without a mark, and
 * revokes are an operator's rare act, so their cost in commit throughput does not matter.
 *
 * WHY NO WAKE-UP IS LOST: a waiter LISTENs first, then marks its interest (`interestStatement`), and only
 * then makes its claim (key-waiters.ts awaits `watchFreed` before claiming). The mark and a release both
 * lock the row, so one commits before the other. If the release commits first, the claim made after the
 * mark sees the grant ended; if the mark commits first, the release reads it on the row it locked and
 * notifies, and the LISTEN was already live. For a key with no row yet, the mark inserts a placeholder row
 * (token 0, state NULL, no grant: decoded as "no record", rows.ts) that carries the interest, so a first claim made by
 * someone else between the mark and the waiter's claim keeps it (a claim never writes `waited_until`).
 *
 * Interest lapses by itself: a mark lasts `INTEREST_WINDOW_MS` of store time and is renewed every
 * `REMARK_EVERY_MS` while the process watches the key, so a crashed waiter costs at most one window of
 * needless notifications.
 */
import { freedChannelOf } from './freed-channel.js';
import type { TableName } from './identifier.js';
import { NOW } from './rows.js';

/** How long one mark of interest lasts, in store-clock ms. */
export const INTEREST_WINDOW_MS = 30_000;

/** How often a watched key's interest is marked again (a third of the window: one failed re-mark is harmless). */
export const REMARK_EVERY_MS = 10_000;

/**
 * Marks interest in `$1` (key) for `INTEREST_WINDOW_MS`. ATOMICITY: one statement; an existing row is
 * locked as an UPDATE locks it (`FOR NO KEY UPDATE`, which release and revoke take too) and its interest
 * read and extended after the lock wait (`clock_timestamp()` in DO UPDATE runs after it); a missing row is
 * inserted as a placeholder (token 0, state NULL: no grant, no history), or, when a concurrent first claim inserts it
 * first, the conflict waits for that transaction and updates its row.
 *
 * NOTE: the lock wait is bounded by `budgetMs` (the watch's `subscribeTimeoutMs`, a validated integer):
 * behind a long fenced write the statement would otherwise keep its pooled connection until that write
 * ends, long after the watch gave up. `set_config(..., true)` sets `lock_timeout` for this statement's own
 * transaction only, in the row source the INSERT reads before it inserts or waits on a conflict.
 */
export function interestStatement(table: TableName, budgetMs: number): string {
  const until = `${NOW} OPERATOR(pg_catalog.+) '${INTEREST_WINDOW_MS} milliseconds'::interval`;
  return `INSERT INTO ${table.quoted} AS l (key, token, waited_until)
SELECT $1::text, 0::bigint, ${until}
FROM (SELECT pg_catalog.set_config('lock_timeout', '${Math.trunc(budgetMs)}', true) AS lock_timeout) AS budget
WHERE budget.lock_timeout IS NOT NULL
ON CONFLICT (key) DO UPDATE SET waited_until = GREATEST(l.waited_until, ${until})`;
}

/**
 * The `RETURNING` expression of release, which runs once per updated row (only when the statement ends a
 * grant): notifies only while the row's interest lasts; `l` is the row as updated, built
 * from the version the statement locked, so a mark committed before the lock is seen.
 */
export function freedNotify(table: TableName): string {
  return `CASE WHEN l.waited_until OPERATOR(pg_catalog.>) pre.now THEN pg_catalog.pg_notify('${freedChannelOf(table)}', pre.key) END`;
}

/**
 * The `RETURNING` expression of revoke (once per updated row: only when it ends a grant): notifies always,
 * so the holder's `withLease` hears it (freed-listener.ts, `watchRevoked`) whether or not a waiter marked
 * interest; a waiter hears it as a release. Same channel and payload as `freedNotify`.
 */
export function revokedNotify(table: TableName): string {
  return `pg_catalog.pg_notify('${freedChannelOf(table)}', pre.key)`;
}
