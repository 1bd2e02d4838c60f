/**
 * The token floor: a grant's token is `GREATEST(last token + 1, floor)`, where the floor is the store's
 * now (`clock_timestamp()` truncated to milliseconds, the now every statement reads) in epoch
 * microseconds. A server that forgot grants (a restored backup, a promoted asynchronous replica that
 * missed commits) then still mints tokens above every token it ever issued, ASSUMING its clock is not
 * behind the clock of the server that issued them, and a key is not granted 1,000 times within one
 * millisecond (each grant updates the key's row under its lock, which takes longer than a microsecond).
 * Redis mints `max(last + 1, TIME in µs)`; SQLite `max(last + 1, now ms * 1000)`, as here.
 *
 * The SQL mint and `tokenFloorAt` compute the same value from the same now (the pre-image carries it
 * as epoch ms): the adapter answers with the token the pure core mints, so they must agree exactly.
 */
import type { StoreTime } from '../../fence/types.js';
import { epochMs } from './rows.js';

/** The floor at the store's `now` (epoch ms, as the pre-image reports it): now in microseconds. */
export const tokenFloorAt = (now: StoreTime): bigint => BigInt(now) * 1000n;

/**
 * The next token after `previous` (a bigint SQL expression; `0::bigint` for a key's first grant), at `now`
 * (a millisecond-truncated timestamptz expression: the statement's now, read after the row lock).
 */
export const mintTokenSql = (previous: string, now: string): string =>
  `GREATEST(${previous} OPERATOR(pg_catalog.+) 1::bigint, ${epochMs(now)} OPERATOR(pg_catalog.*) 1000::bigint)`;
