/**
 * Semaphores on PostgreSQL (issue 25; fence/permits.ts): `acquirePermit` as one plpgsql function (one call, one
 * round trip) on the server's clock. A permit is an ordinary lease row under `{semaphore}:permit-<index>`; every
 * other operation on it is the ordinary one on its key. The partial index `<table>_permits` on `key COLLATE "C"`,
 * over permit-shaped keys only, hands a semaphore's permits as one key range, so an acquire reads O(permits) rows.
 * Permits are no items (`item_set` stays NULL): claim-next never sees them.
 *
 * The adapter decides the outcome with the pure core (`fence/permits.ts#acquirePermit`) on the pre-images of every
 * permit row the function read, and checks that SQL granted the permit the core chose iff the core granted.
 */
import {
  acquirePermit,
  MAX_PERMITS,
  permitKey,
  type AcquirePermitCommand,
  type AcquirePermitOutcome,
  type PermitCandidate,
} from '../../fence/permits.js';
import type { StoreTime } from '../../fence/types.js';
import { assertSemaphore } from '../../validate.js';
import { claimable, claimSet, firstGrant, PLPGSQL_CLAIM_TERMS, refloorFirstGrant, type ClaimTerms } from './claim-rule.js';
import { assertEncodable, assertEncodableAttributes } from './encodable.js';
import type { TableName } from './identifier.js';
import { epochMs, NOW, recordCellsJson, recordOfCells, type Cell } from './rows.js';
import { secretHash } from './secret-hash.js';
import { claimTokenFloor } from './token-floor.js';

/** The acquire function's name in the table's schema: `<table>_acquire_permit`. */
export const ACQUIRE_PERMIT_SUFFIX = 'acquire_permit';

/** What every permit key matches (and the partial index's predicate): `{name}:permit-...`. */
const PERMIT_SHAPE = `key LIKE '{%}:permit-%'`;

/**
 * The permit index: the permit-shaped keys in code-unit order (`COLLATE "C"`), so a semaphore's permits are the
 * range from `{name}:permit-` to `{name}:permit.`. NOTE: partial, so a key that is no permit has no entry (its
 * insert pays one LIKE), and `key` never changes: updates of permit rows stay HOT.
 */
export function permitIndexDdl(table: TableName): string {
  return `CREATE INDEX IF NOT EXISTS "${table.bare}_permits" ON ${table.quoted} (key COLLATE "C") WHERE ${PERMIT_SHAPE}`;
}

/** The function's arguments, as `claim-rule.ts` terms: the claim function's, but an acquire expects no key state. */
const TERMS: ClaimTerms = { ...PLPGSQL_CLAIM_TERMS, expectValues: 'NULL::jsonb', expectAbsent: 'NULL::text[]' };

/** `availableSince` of a permit row `p` (a never-used permit, or a placeholder row: the epoch, first of all). */
const SINCE = `CASE WHEN p.recorded IS NOT TRUE THEN 'epoch'::timestamptz
  ELSE GREATEST('epoch'::timestamptz, CASE WHEN p.holder IS NOT NULL THEN p.expires_at WHEN p.ending_kind IS NOT NULL THEN p.ending_at END, p.held_until) END`;

/**
 * The decision over the permit rows in this statement's snapshot, at `now_at` read in the same statement (after the
 * snapshot: nothing it sees ended later on the store's clock), as `fence/permits.ts` decides it:
 * `chosen` (the index to grant, NULL: a re-delivery or full), its row's `version` (xmin, NULL: no row) and
 * `token`, the `highest` token of the semaphore's records, the removed-token floor when the chosen permit has no
 * token, and `permits`: every permit row as `[index, busy, ...record cells]` (the checkpoint only for the chosen
 * and the re-delivered permit: no other outcome carries one). `v_busy` are the indexes found locked so far.
 */
function decisionQuery(t: string, floorTable: string): string {
  return `WITH clock AS MATERIALIZED (SELECT ${NOW} AS now_at),
    permits AS MATERIALIZED (
      SELECT n.idx, l.*, l.xmin::text AS version, l.state IS NOT NULL AS recorded,
        (l.holder IS NOT NULL AND (l.expires_at IS NULL OR clock.now_at < l.expires_at)) AS live,
        (n.idx = ANY (v_busy)) AS busy
      FROM clock, ${t} AS l
      CROSS JOIN LATERAL (SELECT CASE WHEN substr(l.key, v_from) ~ '^[1-9][0-9]{0,3}$'
        THEN substr(l.key, v_from)::integer END AS idx) AS n
      WHERE l.key COLLATE "C" >= v_first AND l.key COLLATE "C" < v_past AND l.${PERMIT_SHAPE} AND n.idx <= ${MAX_PERMITS}
    ),
    facts AS (
      SELECT count(*) FILTER (WHERE p.live) AS live_count,
        min(p.idx) FILTER (WHERE p.live AND p.secret_hash = p_secret) AS replay,
        max(p.token) FILTER (WHERE p.recorded) AS highest
      FROM permits AS p
    ),
    chosen AS (
      SELECT g.i AS idx, p.version, p.token
      FROM clock, facts, generate_series(1, p_limit) AS g(i) LEFT JOIN permits AS p ON p.idx = g.i
      WHERE facts.replay IS NULL AND facts.live_count < p_limit
        AND p.live IS NOT TRUE AND p.busy IS NOT TRUE
        AND COALESCE(p.recorded AND p.recovery_required, false) = p_recovering
        AND ${SINCE} <= clock.now_at
      ORDER BY ${SINCE}, g.i
      LIMIT 1
    )
    SELECT clock.now_at, chosen.idx AS chosen, chosen.version, facts.highest,
      CASE WHEN chosen.idx IS NOT NULL AND COALESCE(chosen.token, 0::bigint) = 0::bigint THEN (SELECT f.token FROM ${floorTable} AS f) END AS removed_floor,
      (SELECT json_agg(${recordCellsJson('p.', 'p.idx', 'p.busy', 'p_secret', '(p.idx = chosen.idx OR p.idx = facts.replay)')} ORDER BY p.idx)
        FROM permits AS p) AS permits
    INTO decided
    FROM clock, facts LEFT JOIN chosen ON true`;
}

/**
 * `acquirePermit` as one plpgsql function. Returns one JSON text: [now ms, applied, chosen index, removed-token
 * floor, permits] (see `decisionQuery`).
 *
 * ATOMICITY (at READ COMMITTED, the server's default; any other isolation is refused): a transaction-scoped advisory lock on the semaphore's name serialises the acquires of one semaphore
 * (only acquires take it; each commits before the next reads), so two never both see `limit - 1` live, and each
 * reads the tokens the one before granted. After the lock, each statement takes a fresh snapshot (VOLATILE, READ
 * COMMITTED). The decision is made on one snapshot at one now; then the chosen row is locked `FOR NO KEY UPDATE
 * SKIP LOCKED`, and granted only when its newest version is the one decided on (same xmin). A row another
 * transaction holds (a fenced write, a release in progress) is busy: decided again without it, never waited for
 * (no lock wait under the advisory lock: a fenced write's callback that acquires on another connection cannot
 * deadlock with it). A row changed since the snapshot is decided again (this transaction now holds it). Other
 * operations on permits (release, revoke, renew, remove) only end or extend grants, so a permit seen live at
 * now was live when the snapshot was taken: the acquire is linearised there, as the claim function's `held` is.
 * Each round either grants, answers, or adds a busy or locked row, so `2 * limit + 4` rounds always settle.
 */
export function acquirePermitFunctionDdl(table: TableName, schemaPrefix: string): string {
  const t = `${schemaPrefix}"${table.bare}"`;
  const floorTable = `${schemaPrefix}"${table.bare}_token_floor"`;
  const nowMs = epochMs('now_at');
  const answer = (applied: string, removed = 'decided.removed_floor') =>
    `json_build_array(${nowMs}, ${applied}, decided.chosen, ${removed}::text, decided.permits)::text`;
  const above = 'decided.highest + 1::bigint';
  return `CREATE OR REPLACE FUNCTION ${schemaPrefix}"${table.bare}_${ACQUIRE_PERMIT_SUFFIX}"(
  p_semaphore text, p_limit integer, p_holder text, p_run_id text, p_secret text, p_ttl_ms bigint, p_attributes jsonb, p_recovering boolean)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $leasefence$
DECLARE
  v_first text := '{' || p_semaphore || '}:permit-';
  v_past text := '{' || p_semaphore || '}:permit.';
  v_from integer := length(v_first) + 1;
  v_busy integer[] := '{}';
  v_key text;
  now_at timestamptz;
  v_removed bigint;
  v_latest bigint;
  decided record;
  pre record;
BEGIN
  -- NOTE: at REPEATABLE READ or SERIALIZABLE every statement here would read the snapshot taken before the lock
  -- wait, and an acquire could count the permits as they were before the one it waited for granted one.
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'leasefence: acquirePermit runs at READ COMMITTED only, this transaction is %', current_setting('transaction_isolation')
      USING ERRCODE = 'feature_not_supported';
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended(p_semaphore, ${advisorySeed(table)}));
  FOR attempt IN 1..(2 * p_limit + 4) LOOP
    -- NOTE: the decision's now is read inside its statement, after that statement's snapshot: a release
    -- committed after an earlier clock reading would otherwise be seen at a now before its own (a permit counted
    -- free at an instant the store's clock still had it live: the semaphore chaos workload caught two).
    ${decisionQuery(t, floorTable)};
    now_at := decided.now_at;
    IF decided.chosen IS NULL THEN
      RETURN ${answer('false')};
    END IF;
    v_key := v_first || decided.chosen;
    IF decided.version IS NULL THEN
      ${firstGrant(t, 'decided.removed_floor', 'v_key', TERMS, above)}
      ON CONFLICT (key) DO NOTHING;
      IF FOUND THEN
        v_removed := decided.removed_floor;
        ${refloorFirstGrant(t, floorTable, 'v_key', 'v_removed', 'v_latest', TERMS, above)}
        RETURN ${answer('true', 'v_removed')};
      END IF;
      -- NOTE: another operation created the row since the snapshot: decide again on it.
      CONTINUE;
    END IF;
    SELECT l.xmin::text AS version, l.* INTO pre FROM ${t} AS l WHERE l.key = v_key FOR NO KEY UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
      -- NOTE: locked by another transaction (or deleted since the snapshot: then it is no row, and not busy).
      v_busy := v_busy || decided.chosen;
      CONTINUE;
    END IF;
    IF pre.version IS DISTINCT FROM decided.version THEN
      CONTINUE;
    END IF;
    UPDATE ${t} AS l SET ${claimSet(TERMS, 'decided.removed_floor', 'pre.recovery_required', above)}
    WHERE l.key = v_key AND ${claimable(TERMS)};
    RETURN ${answer('FOUND')};
  END LOOP;
  RAISE EXCEPTION 'leasefence: the acquire of a permit of % did not settle', p_semaphore;
END
$leasefence$`;
}

/**
 * The seed of the advisory lock's hash, from the table's name, so that each table has its own locks (a collision
 * only serialises two semaphores' acquires). NOTE: the one-bigint advisory locks never meet the migration's
 * two-int lock.
 */
function advisorySeed(table: TableName): number {
  let hash = 0x811c9dc5;
  const text = `leasefence:permits:${table.name}`;
  for (let index = 0; index < text.length; index += 1) hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193);
  return hash >>> 1;
}

/** The acquire call: $1 semaphore, $2 limit, $3 holder, $4 run id, $5 secret hash, $6 ttl ms, $7 attributes JSON, $8 recovering. */
export function acquirePermitCall(table: TableName): string {
  return `SELECT ${table.derive(ACQUIRE_PERMIT_SUFFIX)}($1::text, $2::integer, $3::text, $4::text, $5::text, $6::bigint, $7::text::jsonb, $8::boolean) AS r`;
}

/** What the permit method needs of the store. */
export interface PostgresPermitsHost {
  /** The acquire call (`acquirePermitCall`). */
  readonly call: string;
  /** Sends one of leasefence's statements (its failure never carries the driver's error). */
  readonly statement: (operation: string, text: string, params: unknown[]) => Promise<unknown[]>;
  /** Refuses a call inside a fenced write's callback on a connection it would wait for. */
  readonly guard: (operation: string) => void;
}

/** The optional Store method of semaphores. */
export interface PostgresPermitsMethods {
  acquirePermit(command: AcquirePermitCommand): Promise<AcquirePermitOutcome>;
}

/** The function's answer: [now ms, applied, chosen index, removed-token floor, permit rows]. */
type Answer = [StoreTime, boolean, number | null, string | null, Cell[][] | null];

/**
 * The store's `acquirePermit`: the input checked before any I/O (`assertSemaphore`), one call of the function, and
 * the outcome decided by the pure core on the permit rows it answered with.
 */
export function createPostgresPermits(host: PostgresPermitsHost): PostgresPermitsMethods {
  const { call, statement, guard } = host;
  return {
    async acquirePermit(command) {
      assertSemaphore(command.semaphore, command.limit);
      assertEncodable('semaphore', command.semaphore);
      assertEncodable('holder', command.holder);
      assertEncodable('runId', command.runId);
      assertEncodableAttributes(command.attributes);
      const params = [
        command.semaphore,
        command.limit,
        command.holder,
        command.runId,
        secretHash(command.secret),
        command.ttlMs,
        JSON.stringify(command.attributes),
        command.recovering,
      ];
      guard('acquirePermit');
      const rows = await statement('acquirePermit', call, params);
      const r = (rows[0] as { r?: unknown } | undefined)?.r;
      if (rows.length !== 1 || typeof r !== 'string') throw new Error('leasefence/postgres: acquirePermit returned no result row');
      const [now, applied, chosen, removed, permits] = JSON.parse(r) as Answer;
      const candidates: PermitCandidate[] = (permits ?? []).map((cells) => ({
        index: cells[0] as number,
        busy: cells[1] === true,
        record: recordOfCells(cells, command.secret),
      }));
      const chosenToken = candidates.find((candidate) => candidate.index === chosen)?.record?.token ?? 0n;
      const floor = claimTokenFloor(now, chosenToken, removed === null ? null : BigInt(removed));
      const { key, transition } = acquirePermit(candidates, command, now, floor);
      const granted = chosen === null ? null : permitKey(command.semaphore, chosen);
      if (key !== granted || transition.changed !== applied) {
        // NOTE: unreachable while the SQL mirrors the pure core; the conformance and model suites check it.
        throw new Error(
          `leasefence/postgres: acquirePermit disagrees with the core (core granted ${key} changed=${transition.changed}, SQL chose ${granted} applied=${applied})`,
        );
      }
      return transition.outcome;
    },
  };
}
