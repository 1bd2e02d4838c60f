/**
 * The claim-next index column `available_at` (issue 24, capability 1; docs/design/claim-next.md): every statement
 * that changes an input of `availableSince` (`fence/claim-next.ts`) of a lease row sets it in its own SET list,
 * written over the row's NEW values, so that it always equals the pure `availableSince` of the row's record and
 * item. A key that is no item (`item_set` NULL) keeps it NULL: the statement writes NULL over NULL, so its
 * updates stay HOT (no index entry written). Expiry needs no write: a grant's availability is its `expires_at`.
 *
 * NOTE: a column set by the statements, not `GENERATED ... STORED`: PostgreSQL 15 recomputes every stored generated
 * column on every UPDATE, which doubled the server time of a renew of an ordinary key (test/claim-next/pg-layout-probe.ts).
 */

/** The new values of a row that `availableSince` reads, as SQL over the statement's scope (the row is `l`). */
export interface NewAvailability {
  /** True when time alone will not make the key claimable: recovery required, or a grant without expiry. */
  readonly blocked: string;
  /** The end of the last grant: the grant's expiry, or the ending's time (NULL: neither). */
  readonly end: string;
  /** The hold (NULL: none). */
  readonly held: string;
}

/**
 * `availableSince(record, item)` over new values, for an item row (`due`: its due time); NULL when blocked.
 * NOTE: GREATEST ignores NULLs, as `availableSince` ignores an absent ending or hold.
 */
export const availableSql = (due: string, { blocked, end, held }: NewAvailability): string =>
  `CASE WHEN (${blocked}) IS TRUE THEN NULL ELSE GREATEST(${due}, ${end}, ${held}) END`;

/** The SET item of an UPDATE of the lease row aliased `l`: NULL for a key that is no item. */
export const availableAtSet = (values: NewAvailability): string =>
  `available_at = CASE WHEN l.item_set IS NULL THEN NULL ELSE ${availableSql('l.item_due_at', values)} END`;

/**
 * `availableSince` of the row `row` as it is (an alias or plpgsql row variable with a dot, e.g. `l.`), for an
 * item due at `due`: a placeholder row (state NULL) is no record, available since its due time.
 */
export const availableOfRow = (row: string, due: string): string =>
  `CASE WHEN ${row}state IS NULL THEN ${due} ELSE ${availableSql(due, {
    blocked: `${row}recovery_required OR (${row}holder IS NOT NULL AND ${row}expires_at IS NULL)`,
    end: `CASE WHEN ${row}holder IS NOT NULL THEN ${row}expires_at ELSE ${row}ending_at END`,
    held: `${row}held_until`,
  })} END`;

/**
 * The SET item that keeps the "delivered twice" lookup's column: the new grant's secret hash on an item row
 * (NULL on a key that is no item: NULL over NULL keeps its update HOT). Only grants set it; a stale value after
 * the grant ended is harmless, since the lookup also requires the row's live grant to have that secret.
 */
export const itemSecretSet = (secret: string): string => `item_secret = CASE WHEN l.item_set IS NULL THEN NULL ELSE ${secret} END`;
