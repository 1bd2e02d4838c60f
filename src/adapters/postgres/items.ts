/**
 * Claim-next on PostgreSQL (issue 24, capability 1; docs/design/claim-next.md): `addItems`, `removeItems` and
 * `claimNext`, each one statement (one round trip) on the server's clock. An item is a lease row whose `item_set`
 * names its set, due at `item_due_at`; `available_at` is its `availableSince` (availability.ts: every statement
 * that changes one of its inputs sets it), and the partial index `<table>_ready` on (set, availability, key)
 * hands the set's items in grant order. An item never claimed is a token-0 placeholder row (no record).
 *
 * Claim-next reads O(limit) index entries: `FOR NO KEY UPDATE SKIP LOCKED` locks the first claimable row no other
 * transaction holds. The adapter decides the outcome with the pure core (`fence/claim-next.ts#claimNext`) on the
 * row's pre-image, as the other operations run their transition on theirs, and checks that SQL applied the grant
 * iff the core granted.
 */
import {
  claimNext,
  type AddItemsCommand,
  type AddItemsOutcome,
  type ClaimNextCommand,
  type ClaimNextOutcome,
  type ItemCandidate,
  type RemoveItemsCommand,
  type RemoveItemsOutcome,
} from '../../fence/claim-next.js';
import type { StoreTime } from '../../fence/types.js';
import { InvalidArgumentError } from '../../errors.js';
import { assertName, checkedItemKeys, checkedNotBefore, describe } from '../../validate.js';
import { availableOfRow } from './availability.js';
import { claimable, claimSet, expectParams, stateExpected, type ClaimTerms } from './claim-rule.js';
import { assertEncodable, assertEncodableAttributes, assertEncodableState } from './encodable.js';
import type { TableName } from './identifier.js';
import { claimPreImageJson, decodePreImage, epochMs, NOW, preImageColumns } from './rows.js';
import { secretHash } from './secret-hash.js';
import { claimTokenFloor, removedFloorSql, tokenFloorTable } from './token-floor.js';

/** The claim-next statement's parameters, as `claim-rule.ts` terms (never recovering: a recovery is a `claim`). */
const TERMS: ClaimTerms = {
  now: 'pre.now',
  holder: '$2::text',
  runId: '$3::text',
  secret: '$4::text',
  ttlMs: '$5::bigint',
  attributes: '$6::text::jsonb',
  recovering: 'false',
  expectValues: '$7::text::jsonb',
  expectAbsent: '$8::text::text[]',
};

/** The grant's recovery flag: record-first ($9) with an abandoned run (an expired grant, recorded or not). */
const RECOVERY = `(pre.recovery_required OR ($9::boolean AND (pre.holder IS NOT NULL OR pre.ending_kind IS NOT DISTINCT FROM 'expired')))`;

/**
 * The claim-next statement. $1 set, $2 holder, $3 run id, $4 secret hash, $5 ttl ms (NULL: none), $6 attributes
 * JSON, $7 expected values (JSON, NULL: none), $8 names expected absent (text[] literal, NULL: none), $9 record-first.
 *
 * - `clock`: the statement's first now: the bound of the pick, the now of a replay and of an idle answer.
 * - `replay`: the live grant this secret already holds in the set (delivered twice), judged at that now.
 * - `pre`: the claimable row with the smallest availability, then key, that no other transaction holds locked,
 *   with now read after the lock (the grant's now: an item that became available between the bound and it is
 *   behind the one picked). NOTE: the bound is `(SELECT at FROM clock)`, an InitPlan, so that it is an index bound
 *   (`clock_timestamp()` itself is volatile: a filter, which would read every entry of the set). At READ
 *   COMMITTED a row changed after the snapshot is re-checked on its newest version when locked (EvalPlanQual),
 *   so a row another claim-next just granted (its availability moved to the grant's expiry) is skipped.
 * - `applied`: the claim rule (claim-rule.ts) on that row, plus record-first's recovery flag.
 * - `next_at`: when nothing was picked, the set's first availability among rows whose state matches `expect`
 *   (one index probe without `expect`; with it, the probe reads past the mismatches).
 */
function claimNextStatement(table: TableName): string {
  const t = table.quoted;
  const columns = `${preImageColumns('record')}, item_due_at`;
  const matches = (alias: string) => stateExpected(TERMS, `${alias}.state`);
  return `WITH clock AS MATERIALIZED (SELECT ${NOW} AS at),
replay AS MATERIALIZED (
  SELECT r.${columns.split(', ').join(', r.')}, clock.at AS now FROM clock, ${t} AS r
  WHERE r.item_set = $1::text AND r.item_secret = $4::text AND r.secret_hash = $4::text
    AND (r.expires_at IS NULL OR r.expires_at OPERATOR(pg_catalog.>) clock.at)
  LIMIT 1
),
pre AS MATERIALIZED (
  SELECT locked.*, ${NOW} AS now,
    CASE WHEN locked.token OPERATOR(pg_catalog.=) 0::bigint THEN ${removedFloorSql(tokenFloorTable(table))} END AS removed_floor
  FROM (
    SELECT ${columns} FROM ${t} AS l
    WHERE NOT EXISTS (SELECT 1 FROM replay) AND l.item_set = $1::text
      AND l.available_at OPERATOR(pg_catalog.<=) (SELECT clock.at FROM clock) AND ${matches('l')}
    ORDER BY l.available_at, l.key COLLATE "C"
    LIMIT 1
    FOR NO KEY UPDATE OF l SKIP LOCKED
  ) AS locked
),
applied AS (
  UPDATE ${t} AS l SET ${claimSet(TERMS, 'pre.removed_floor', RECOVERY)}, recovery_required = ${RECOVERY}
  FROM pre
  WHERE l.key = pre.key AND ${claimable(TERMS)}
  RETURNING 1
)
SELECT COALESCE(replay.key, pre.key) AS key,
  CASE WHEN replay.key IS NOT NULL
    THEN ${claimPreImageJson('replay.', 'replay.now', 'false', '$4::text', 'NULL::bigint')}
    ELSE ${claimPreImageJson('pre.', 'COALESCE(pre.now, clock.at)', 'EXISTS (SELECT 1 FROM applied)', '$4::text', 'pre.removed_floor')}
  END AS r,
  ${epochMs('COALESCE(replay.item_due_at, pre.item_due_at)')}::text AS due,
  CASE WHEN replay.key IS NULL AND pre.key IS NULL THEN ${epochMs(`(SELECT pg_catalog.min(n.available_at) FROM ${t} AS n
    WHERE n.item_set = $1::text AND n.available_at IS NOT NULL AND ${matches('n')})`)}::text END AS next_at
FROM clock LEFT JOIN replay ON true LEFT JOIN pre ON true`;
}

/** The addItems function's name in the table's schema. */
export const ADD_ITEMS_SUFFIX = 'add_items';

/**
 * `addItems` as one plpgsql function (one call, one round trip): refuses the whole call when a key is an item of
 * another set (the first in the command's order); otherwise makes each key that is no item an item of the set, due
 * at now plus the delay, its availability from the record as it is (`availableOfRow`). A key already in the set
 * keeps its due time. Returns one JSON text: [now ms, due ms, added keys, other key, other set].
 *
 * ATOMICITY: every key first gets a row (a token-0 placeholder when new, which reads as no record), then all the
 * rows are locked in key order, and the sets are judged after the locks, in a fresh snapshot (the function is
 * VOLATILE, at READ COMMITTED): a concurrent addItems of the same key waits for this one and then sees its set.
 * NOTE: a statement could not: both calls would judge a new key in snapshots without it, and the loser's upsert
 * would leave it out of `added` instead of refusing (the race spec failed so). The placeholders a refused call
 * inserted are deleted again.
 */
export function addItemsFunctionDdl(table: TableName, schemaPrefix: string): string {
  const t = `${schemaPrefix}"${table.bare}"`;
  return `CREATE OR REPLACE FUNCTION ${schemaPrefix}"${table.bare}_${ADD_ITEMS_SUFFIX}"(p_set text, p_keys text[], p_delay_ms bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $leasefence$
DECLARE
  now_at timestamptz;
  due_at timestamptz;
  inserted text[];
  other_key text;
  other_set text;
  added json;
BEGIN
  WITH fresh AS (
    INSERT INTO ${t} AS l (key, token)
    SELECT k.key, 0 FROM unnest(p_keys) AS k(key) ORDER BY k.key COLLATE "C"
    ON CONFLICT (key) DO NOTHING
    RETURNING l.key
  )
  SELECT array_agg(fresh.key) INTO inserted FROM fresh;
  PERFORM 1 FROM ${t} AS l WHERE l.key = ANY (p_keys) ORDER BY l.key COLLATE "C" FOR NO KEY UPDATE;
  now_at := ${NOW};
  due_at := now_at + p_delay_ms::float8 * '1 millisecond'::interval;
  SELECT l.key, l.item_set INTO other_key, other_set FROM ${t} AS l
  WHERE l.key = ANY (p_keys) AND l.item_set IS NOT NULL AND l.item_set <> p_set
  ORDER BY array_position(p_keys, l.key)
  LIMIT 1;
  IF other_key IS NULL THEN
    WITH changed AS (
      UPDATE ${t} AS l SET item_set = p_set, item_due_at = due_at,
        available_at = ${availableOfRow('l.', 'due_at')}, item_secret = l.secret_hash
      WHERE l.key = ANY (p_keys) AND l.item_set IS NULL
      RETURNING l.key
    )
    SELECT json_agg(changed.key) INTO added FROM changed;
  ELSIF inserted IS NOT NULL THEN
    DELETE FROM ${t} AS l WHERE l.key = ANY (inserted) AND l.state IS NULL AND l.item_set IS NULL AND l.waited_until IS NULL;
  END IF;
  RETURN json_build_array(${epochMs('now_at')}, ${epochMs('due_at')}, added, other_key, other_set)::text;
END
$leasefence$`;
}

/** The addItems call: $1 set, $2 keys (text[]), $3 delay ms. */
function addItemsCall(table: TableName): string {
  return `SELECT ${table.derive(ADD_ITEMS_SUFFIX)}($1::text, $2::text[], $3::bigint) AS r`;
}

/** The removeItems statement ($1 set, $2 keys text[]): the rows stay (records, grants, state); they are no items. */
function removeItemsStatement(table: TableName): string {
  return `WITH removed AS (
  UPDATE ${table.quoted} AS l SET item_set = NULL, item_due_at = NULL, available_at = NULL, item_secret = NULL
  WHERE l.key = ANY ($2::text[]) AND l.item_set = $1::text
  RETURNING l.key
)
SELECT pg_catalog.json_build_array(${epochMs(NOW)}, (SELECT pg_catalog.json_agg(removed.key) FROM removed))::text AS r`;
}

/** The item statements of one lease table. */
export interface ItemStatements {
  readonly addItems: string;
  readonly removeItems: string;
  readonly claimNext: string;
}

export function itemStatements(table: TableName): ItemStatements {
  return { addItems: addItemsCall(table), removeItems: removeItemsStatement(table), claimNext: claimNextStatement(table) };
}

/** What the item methods need of the store. */
export interface PostgresItemsHost {
  readonly statements: ItemStatements;
  /** Sends one of leasefence's statements (its failure never carries the driver's error). */
  readonly statement: (operation: string, text: string, params: unknown[]) => Promise<unknown[]>;
  /** Refuses a call inside a fenced write's callback on a connection it would wait for. */
  readonly guard: (operation: string) => void;
}

/** The optional Store methods of claim-next. */
export interface PostgresItemsMethods {
  addItems(command: AddItemsCommand): Promise<AddItemsOutcome>;
  removeItems(command: RemoveItemsCommand): Promise<RemoveItemsOutcome>;
  claimNext(command: ClaimNextCommand): Promise<ClaimNextOutcome>;
}

/** The single row's JSON column `r`. */
function jsonOf(rows: unknown[], operation: string): unknown[] {
  const r = (rows[0] as { r?: unknown } | undefined)?.r;
  if (rows.length !== 1 || typeof r !== 'string') throw new Error(`leasefence/postgres: ${operation} returned no result row`);
  return JSON.parse(r) as unknown[];
}

const textOrNull = (value: unknown): string | null => (typeof value === 'string' ? value : null);

export function createPostgresItems(host: PostgresItemsHost): PostgresItemsMethods {
  const { statements, statement, guard } = host;
  return {
    async addItems(command) {
      const keys = checkedItemKeys(command.set, command.keys);
      const delay = checkedNotBefore(command.notBeforeMs);
      const { set } = command;
      guard('addItems');
      const [now, dueAt, added, otherKey, otherSet] = jsonOf(
        await statement('addItems', statements.addItems, [set, keys, delay]),
        'addItems',
      ) as [StoreTime, StoreTime, string[] | null, string | null, string | null];
      if (otherKey !== null && otherSet !== null) return { ok: false, reason: 'in-another-set', set, key: otherKey, otherSet, now };
      const inserted = new Set(added ?? []);
      return { ok: true, set, added: keys.filter((key) => inserted.has(key)), dueAt, now };
    },

    async removeItems(command) {
      const keys = checkedItemKeys(command.set, command.keys);
      const { set } = command;
      guard('removeItems');
      const [now, removed] = jsonOf(await statement('removeItems', statements.removeItems, [set, keys]), 'removeItems') as [
        StoreTime,
        string[] | null,
      ];
      const gone = new Set(removed ?? []);
      return { ok: true, set, removed: keys.filter((key) => gone.has(key)), now };
    },

    async claimNext(command) {
      assertName('set', command.set);
      assertEncodable('set', command.set);
      if (command.onExpired !== 'take-over' && command.onExpired !== 'record-first')
        throw new InvalidArgumentError(`onExpired must be 'take-over' or 'record-first', got ${describe(command.onExpired)}`);
      assertEncodable('holder', command.holder);
      assertEncodable('runId', command.runId);
      assertEncodableAttributes(command.attributes);
      if (command.expect !== undefined) assertEncodableState('expect', command.expect);
      const params = [
        command.set,
        command.holder,
        command.runId,
        secretHash(command.secret),
        command.ttlMs,
        JSON.stringify(command.attributes),
        ...expectParams(command.expect),
        command.onExpired === 'record-first',
      ];
      guard('claimNext');
      const rows = await statement('claimNext', statements.claimNext, params);
      const row = rows[0] as { key?: unknown; r?: unknown; due?: unknown; next_at?: unknown } | undefined;
      if (rows.length !== 1 || row === undefined) throw new Error('leasefence/postgres: claimNext returned no result row');
      const { now, applied, record, removedFloor } = decodePreImage(row.r, command.secret);
      const key = textOrNull(row.key);
      const due = textOrNull(row.due);
      const candidates: ItemCandidate[] =
        key === null || due === null ? [] : [{ item: { set: command.set, key, dueAt: Number(due) }, record, busy: false }];
      const floor = claimTokenFloor(now, record?.token ?? 0n, removedFloor);
      const { transition } = claimNext(candidates, command, now, floor);
      if (transition.changed !== applied) {
        // NOTE: unreachable while the SQL mirrors the pure core; the conformance and model suites check it.
        throw new Error(
          `leasefence/postgres: claimNext disagrees with the core (core changed=${transition.changed}, SQL applied=${applied})`,
        );
      }
      const { outcome } = transition;
      if (outcome.ok || candidates.length > 0) return outcome;
      // NOTE: nothing picked: the set's first availability, or now when a claimable row was locked (busy) or
      // changed after the statement's snapshot (a caller retries at nextAt either way).
      const first = textOrNull(row.next_at);
      return { ...outcome, nextAt: first === null ? null : Math.max(Number(first), now) };
    },
  };
}
