/**
 * The `available_at` column of claim-next (issue 24, capability 1) as SQL: the pure
 * `availableSince(record, item)` (fence/claim-next.ts) over a lease row's columns, so that every statement that
 * writes a row sets the column in the same statement, with no extra read or statement for a key that is no item
 * (its `item_set` is NULL: the CASE stops at its first branch and the column stays NULL, outside every index).
 * Expiry needs no write: a grant's availability is its `expires_at`, already stored. The claim-next model test
 * compares the column with the pure function after every step.
 */

/** Where each input of the expression is read from (a column name, or `excluded.<column>` in an upsert). */
export interface AvailableAtInputs {
  readonly itemSet: string;
  readonly itemDueAt: string;
  readonly recoveryRequired: string;
  readonly holder: string;
  readonly expiresAt: string;
  readonly endingAt: string;
  readonly heldUntil: string;
}

/** The inputs as the row's own columns. */
export const ROW_INPUTS: AvailableAtInputs = {
  itemSet: 'item_set',
  itemDueAt: 'item_due_at',
  recoveryRequired: 'recovery_required',
  holder: 'holder',
  expiresAt: 'expires_at',
  endingAt: 'ending_at',
  heldUntil: 'held_until',
};

/**
 * `availableSince` as an expression: NULL for a key that is no item, a key blocked for recovery or a grant without
 * expiry; otherwise the latest of the due time, the grant's expiry (or, with no grant, the last ending) and the
 * hold. NOTE: SQLite's multi-argument `max` is NULL when any argument is, so an absent ending or hold stands in
 * as the due time (which the `max` has anyway), as the pure function ignores them. A row with no record (token
 * NULL) has no grant, ending or hold: its value is its due time, as `availableSince(null, item)` is.
 */
export function availableAtSql(inputs: AvailableAtInputs): string {
  const { itemSet, itemDueAt, recoveryRequired, holder, expiresAt, endingAt, heldUntil } = inputs;
  return `CASE WHEN ${itemSet} IS NULL OR ${recoveryRequired} <> 0 OR (${holder} IS NOT NULL AND ${expiresAt} IS NULL) THEN NULL
  ELSE max(${itemDueAt}, coalesce(CASE WHEN ${holder} IS NOT NULL THEN ${expiresAt} ELSE ${endingAt} END, ${itemDueAt}),
    coalesce(${heldUntil}, ${itemDueAt})) END`;
}
