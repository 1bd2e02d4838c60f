/**
 * The token floor: a grant's token is `GREATEST(last token + 1, floor)`, where the floor is the store's
 * now (`clock_timestamp()` truncated to milliseconds, the now every statement reads) in epoch
 * microseconds, and for a key without a token yet (no row, or a row of token 0: a placeholder or a record
 * of key state only) also above the table's removed-token floor (`<table>_token_floor`, one row): the
 * highest token of any record `remove` deleted. The clock alone does not outlive a deleted row: a key
 * removed and claimed again within the millisecond of its last grant (or after more grants than
 * microseconds) would get a token it had already issued. A server that forgot grants (a restored backup, a promoted asynchronous replica that
 * missed commits) then still mints tokens above every token it ever issued, ASSUMING its clock is not
 * behind the clock of the server that issued them, and a key is not granted 1,000 times within one
 * millisecond (each grant updates the key's row under its lock, which takes longer than a microsecond).
 * Redis mints `max(last + 1, TIME in µs)`; SQLite `max(last + 1, now ms * 1000)`, as here.
 *
 * The SQL mint and `tokenFloorAt` compute the same value from the same now (the pre-image carries it
 * as epoch ms): the adapter answers with the token the pure core mints, so they must agree exactly.
 */
import type { StoreTime } from '../../fence/types.js';
import type { TableName } from './identifier.js';
import { epochMs } from './rows.js';

/** The table's removed-token floor: one row (`id` true), the highest token `remove` deleted. */
export const tokenFloorTable = (table: TableName): string => table.derive('token_floor');

/** The removed-token floor table's DDL. */
export function tokenFloorDdl(table: TableName): string {
  return `CREATE TABLE IF NOT EXISTS ${tokenFloorTable(table)} (
  id boolean PRIMARY KEY,
  token bigint NOT NULL
)`;
}

/** Raises the removed-token floor to `token` (an SQL expression): a statement (plpgsql) of `remove`. */
export const raiseFloorSql = (floorTable: string, token: string): string =>
  `INSERT INTO ${floorTable} AS f (id, token) VALUES (true, ${token})
    ON CONFLICT (id) DO UPDATE SET token = GREATEST(f.token, EXCLUDED.token)`;

/** The floor at the store's `now` (epoch ms, as the pre-image reports it): now in microseconds. */
export const tokenFloorAt = (now: StoreTime): bigint => BigInt(now) * 1000n;

/**
 * The removed-token floor as a scalar subquery (NULL: nothing was ever removed). In a statement, read in the
 * statement's snapshot: a row of token 0 the statement locked was inserted before that snapshot, so after
 * any `remove` of the key, whose floor committed with the deletion. NOTE: the mint and the pre-image must
 * read the same value (the adapter answers with the token the pure core mints from the pre-image's floor):
 * in one statement they do; the claim function reads it once into a variable.
 */
export const removedFloorSql = (floorTable: string): string => `(SELECT f.token FROM ${floorTable} AS f)`;

/**
 * The next token after `previous` (a bigint SQL expression; `0::bigint` for a key's first grant), at `now`
 * (a millisecond-truncated timestamptz expression: the statement's now, read after the row lock), above
 * the removed-token floor `removed` (an SQL expression, `removedFloorSql` or a variable) when `previous` is
 * 0. NOTE: in a CASE branch, evaluated only when taken: a claim of a key that has a token never reads it.
 */
export const mintTokenSql = (previous: string, now: string, removed: string): string =>
  `GREATEST(${previous} OPERATOR(pg_catalog.+) 1::bigint, ${epochMs(now)} OPERATOR(pg_catalog.*) 1000::bigint,
    CASE WHEN ${previous} OPERATOR(pg_catalog.=) 0::bigint THEN ${removed} OPERATOR(pg_catalog.+) 1::bigint END)`;

/**
 * The token floor the pure core mints a claim's token above (`transitions.claim`'s `tokenFloor`): the clock
 * floor at `now`, and above `removed` (the pre-image's removed-token floor, carried only for a key without
 * a token) when the key has none yet. The same value as `mintTokenSql`.
 */
export function claimTokenFloor(now: StoreTime, keyToken: bigint, removed: bigint | null): bigint {
  const clock = tokenFloorAt(now);
  return keyToken === 0n && removed !== null && removed + 1n > clock ? removed + 1n : clock;
}
