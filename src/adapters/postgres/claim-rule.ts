/**
 * The claim's rule as SQL, stated once: when a lease row may be granted and what a grant writes, mirroring
 * `transitions.claim`. Both places that claim are generated from these fragments: the claim statement
 * (statements.ts, for rows that exist, in plain SQL) and the claim function (schema.ts, in plpgsql: for a
 * key whose row does not exist yet, and for every claim of a store whose statements are not prepared). Each fragment reads the locked row as `pre` and writes the
 * table aliased `l`; `ClaimTerms` names the store's now and the claim's parameters in the caller's scope.
 */

import { availableAtSet, itemSecretSet } from './availability.js';
import type { TableName } from './identifier.js';
import { mintTokenSql } from './token-floor.js';

/** The claim function's name in the table's schema: `<table>_try_claim`. */
export const CLAIM_FUNCTION_SUFFIX = 'try_claim';

/** The claim function of a lease table, quoted: `<table>_try_claim` in the table's schema. */
export function claimFunction(table: TableName): string {
  return table.derive(CLAIM_FUNCTION_SUFFIX);
}

/** How the caller names the store's now and the claim's parameters (bind parameters or plpgsql arguments). */
export interface ClaimTerms {
  /** The store's now, read after the row was locked. */
  readonly now: string;
  readonly holder: string;
  readonly runId: string;
  /** The claim's secret hash (secret-hash.ts). */
  readonly secret: string;
  /** The time to live in ms, NULL for no expiry. */
  readonly ttlMs: string;
  /** The bound attributes, as jsonb. */
  readonly attributes: string;
  readonly recovering: string;
  /** The values the claim's `expect` requires, as a jsonb object of strings (NULL: none). */
  readonly expectValues: string;
  /** The names the claim's `expect` requires absent (its `null` values), as text[] (NULL: none). */
  readonly expectAbsent: string;
}

/**
 * The terms of a plpgsql function that claims (the claim function, the acquire function): its now variable and
 * its arguments. The claim function's `expect` arguments are `p_expect` and `p_absent`.
 */
export const PLPGSQL_CLAIM_TERMS: ClaimTerms = {
  now: 'now_at',
  holder: 'p_holder',
  runId: 'p_run_id',
  secret: 'p_secret',
  ttlMs: 'p_ttl_ms',
  attributes: 'p_attributes',
  recovering: 'p_recovering',
  expectValues: 'p_expect',
  expectAbsent: 'p_absent',
};

/**
 * The key state of `pre` has every value `expect` requires and none of the names it requires absent, as
 * `transitions.claim` checks it first. A placeholder row (state NULL) has the empty state. NOTE: containment
 * and `?|`, not a subquery over the expected values: a subquery's plan nodes are initialised at every
 * execution of the claim, which is most of what it would cost.
 */
export function stateExpected(terms: ClaimTerms, state = 'pre.state'): string {
  const current = `COALESCE(${state}, '{}'::jsonb)`;
  return `(${terms.expectValues} IS NULL OR ${current} OPERATOR(pg_catalog.@>) ${terms.expectValues})
    AND (${terms.expectAbsent} IS NULL OR NOT (${current} OPERATOR(pg_catalog.?|) ${terms.expectAbsent}))`;
}

/** A claim's `expect` as the two parameters `stateExpected` reads: required values (JSON text) and absent names (a text[] literal). */
export function expectParams(expect: Readonly<Record<string, string | null>> | undefined): [string | null, string | null] {
  if (expect === undefined) return [null, null];
  const values: Record<string, string> = {};
  const absent: string[] = [];
  for (const [name, value] of Object.entries(expect)) {
    if (value === null) absent.push(name);
    else values[name] = value;
  }
  // NOTE: an array literal with every element double-quoted, backslashes and quotes escaped: any name reads back as itself.
  const literal = absent.length === 0 ? null : `{${absent.map((name) => `"${name.replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(',')}}`;
  return [JSON.stringify(values), literal];
}

/** The expiry of a grant made at `now` with `ttlMs` (NULL: never). */
const expiresAfter = (terms: ClaimTerms): string =>
  `${terms.now} OPERATOR(pg_catalog.+) (${terms.ttlMs}::float8 OPERATOR(pg_catalog.*) '1 millisecond'::interval)`;

/**
 * A minted token raised to `tokenFloor` (SQL, `null`: none): a semaphore's permit is granted above every token of
 * every permit of the semaphore (permits.ts), the claim's own mint is left as it is.
 */
const floored = (mint: string, tokenFloor: string | null): string => (tokenFloor === null ? mint : `GREATEST(${mint}, ${tokenFloor})`);

/**
 * `pre` may be granted: its state has the values the claim expects, nothing is held or the grant has
 * expired (strictly: at now = expires_at it has), no hold lasts (strictly: at now = held_until it has
 * passed), and no recovery is pending unless the claimer is recovering.
 */
export function claimable(terms: ClaimTerms): string {
  return `${stateExpected(terms)}
    AND (pre.holder IS NULL OR (pre.expires_at IS NOT NULL AND ${terms.now} OPERATOR(pg_catalog.>=) pre.expires_at))
    AND (pre.held_until IS NULL OR ${terms.now} OPERATOR(pg_catalog.>=) pre.held_until)
    AND (NOT pre.recovery_required OR ${terms.recovering})`;
}

/**
 * The grant, as an UPDATE's SET list (`removedFloor`: the removed-token floor's SQL, token-floor.ts): the next token, the new holder, and an expired holder recorded as
 * the ending (a released, revoked or state-changed one already is); the checkpoint, a pending recovery and
 * the key state are kept (a placeholder row gets the empty state: it becomes a record), a passed hold is cleared;
 * on an item row, its availability (availability.ts) and its grant's secret for the "delivered twice" lookup
 * (`recoveryRequired`: the row's new recovery flag, SQL; claim-next's record-first sets it).
 */
export function claimSet(
  terms: ClaimTerms,
  removedFloor: string,
  recoveryRequired = 'pre.recovery_required',
  tokenFloor: string | null = null,
): string {
  const kept = (column: string, expired: string) => `${column} = CASE WHEN pre.holder IS NULL THEN pre.${column} ELSE ${expired} END`;
  return `token = ${floored(mintTokenSql('pre.token', terms.now, removedFloor), tokenFloor)},
    state = COALESCE(pre.state, '{}'::jsonb), held_until = NULL,
    holder = ${terms.holder}, run_id = ${terms.runId}, secret_hash = ${terms.secret}, acquired_at = ${terms.now},
    expires_at = ${expiresAfter(terms)}, attributes = ${terms.attributes},
    ${kept('ending_kind', `'expired'`)}, ${kept('ending_token', 'pre.token')}, ${kept('ending_holder', 'pre.holder')},
    ${kept('ending_run_id', 'pre.run_id')}, ${kept('ending_at', 'pre.expires_at')},
    ${kept('ending_reason', 'NULL')}, ${kept('ending_by', 'NULL')},
    ${availableAtSet({ blocked: `${recoveryRequired} OR ${terms.ttlMs} IS NULL`, end: expiresAfter(terms), held: 'NULL' })},
    ${itemSecretSet(terms.secret)}`;
}

/**
 * A key's first grant (`table`: the lease table as the caller names it, `removedFloor` its removed-token floor's SQL):
 * the first token (the floor), the empty state, nothing inherited.
 */
/**
 * After `firstGrant` inserted the key's row (plpgsql): the removed-token floor read again, in a statement of its own.
 * The floor the insert minted above was read before it, and a first grant of the key by another claim, then a
 * `remove` of it, may have committed in between (the insert then met no conflict, or waited for the remove and
 * went ahead): the token would repeat the removed row's (both clock-floored in the same millisecond) or fall
 * below it. Every such remove has committed once the insert is done (it deleted the row this insert would
 * otherwise conflict with), so this read sees its floor; the row is this transaction's, so its token is raised
 * before anyone sees it. `removed` (a variable) then holds the floor the token was minted above, as the pre-image
 * reports it.
 */
export function refloorFirstGrant(
  table: string,
  floorTable: string,
  key: string,
  removed: string,
  latest: string,
  terms: ClaimTerms,
  tokenFloor: string | null = null,
): string {
  return `${latest} := (SELECT f.token FROM ${floorTable} AS f);
      IF ${latest} IS DISTINCT FROM ${removed} THEN
        ${removed} := ${latest};
        UPDATE ${table} AS l SET token = ${floored(mintTokenSql('0::bigint', terms.now, removed), tokenFloor)} WHERE l.key = ${key};
      END IF;`;
}

export function firstGrant(table: string, removedFloor: string, key: string, terms: ClaimTerms, tokenFloor: string | null = null): string {
  return `INSERT INTO ${table} AS l (key, token, holder, run_id, secret_hash, acquired_at, expires_at, attributes, state)
    VALUES (${key}, ${floored(mintTokenSql('0::bigint', terms.now, removedFloor), tokenFloor)}, ${terms.holder}, ${terms.runId}, ${terms.secret}, ${terms.now}, ${expiresAfter(terms)}, ${terms.attributes}, '{}'::jsonb)`;
}
