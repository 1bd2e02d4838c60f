/**
 * The pre-image wire format. Every lease statement returns ONE row with ONE text column, `r`: a JSON array
 * `[now_ms, applied, ...columns]` of the store's now, whether the statement applied its change, and the
 * lease row as it was before the statement (all NULL when there was none). The SQL that builds it and the
 * decoder that reads it come from the same column list below, so they cannot drift apart.
 *
 * NOTE: one JSON column instead of one column per field: drivers spend most of their per-row time on
 * fields (pg builds a parser per field from every RowDescription), and JSON.parse of one short array is
 * cheaper than that; the server builds the array for about what it spends sending the fields.
 * Tokens travel as decimal text (parsed with `BigInt`, never through `Number`); times as epoch ms.
 */
import type {
  Ending,
  EndingKind,
  KeyState,
  LeaseAttributes,
  LeaseRecord,
  QueuedWaiter,
  StateChange,
  StoreTime,
  SubmissionRecord,
} from '../../fence/types.js';
import { unreadableCheckpoint } from '../../unreadable-checkpoint.js';

/**
 * Epoch milliseconds of a `timestamptz(3)`. NOTE: `date_part` (float8) is measurably cheaper than `extract`
 * (numeric) and exact here: stored times are whole milliseconds, so the product is within a rounding error
 * of an integer far below 0.5, and `round` recovers it.
 */
export const epochMs = (expression: string): string =>
  `pg_catalog.round(pg_catalog.date_part('epoch', ${expression}) OPERATOR(pg_catalog.*) 1000::float8)::bigint`;

/** The store's now, truncated to milliseconds like every stored time. */
export const NOW = `pg_catalog.date_trunc('milliseconds', pg_catalog.clock_timestamp())`;

/**
 * What a fence check reads (`verdict.ts#checkFence`: the grant, the token, and the ending its refusals
 * report, with the key state a `state-changed` refusal names): the whole pre-image of renew, checkpoint,
 * release, fenced writes. `state` is NULL only on a placeholder row (waiter interest, freed-interest.ts),
 * which reads as no record.
 */
const FENCE_COLUMNS = [
  ['key', 'key'],
  ['token', 'token::text'],
  ['holder', 'holder'],
  ['run_id', 'run_id'],
  ['secret_matches', 'secret_hash'],
  ['expires_at', 'expires_at'],
  ['attributes', 'attributes'],
  ['ending_kind', 'ending_kind'],
  ['ending_token', 'ending_token::text'],
  ['ending_holder', 'ending_holder'],
  ['ending_run_id', 'ending_run_id'],
  ['ending_at', 'ending_at'],
  ['ending_reason', 'ending_reason'],
  ['ending_by', 'ending_by'],
  ['ending_change', 'ending_change'],
  ['state', 'state'],
] as const;

/** What a grant's whole view adds (claim, revoke, recover, inspect, setKeyState, remove read it). */
const GRANT_COLUMNS = [
  ['acquired_at', 'acquired_at'],
  ['recovery_required', 'recovery_required'],
  ['held_until', 'held_until'],
] as const;

/**
 * The key's queue of waiting claims (claim-queue.ts): a jsonb array of `{w, h, a, e}` (waiter id, holder, arrived
 * at and expires at in epoch ms), NULL when nobody waits. Claim, dequeue and inspect read it (revoke and recover
 * carry it along: their outcomes never read it).
 */
const WAITER_COLUMNS = [['waiters', 'waiters']] as const;

/** The checkpoint, which claim, revoke, recover and inspect read. */
const CHECKPOINT_COLUMNS = [
  ['checkpoint_json', 'checkpoint_json'],
  ['checkpoint_token', 'checkpoint_token::text'],
  ['checkpoint_written_at', 'checkpoint_written_at'],
] as const;

const TIME_COLUMNS: ReadonlySet<string> = new Set(['expires_at', 'ending_at', 'acquired_at', 'checkpoint_written_at', 'held_until']);

/**
 * How much of the row a statement returns: `fence` (what a fence check reads, for the operations whose
 * outcome is a fence verdict or built from the command), `grant` (all but the queue and the checkpoint:
 * setKeyState and remove, whose outcomes never carry them), `queue` (all but the checkpoint: dequeue) or
 * `record` (all of it). NOTE: each width is a prefix of the next, so one decoder reads them all.
 */
export type PreImageWidth = 'fence' | 'grant' | 'queue' | 'record';

const COLUMNS = {
  fence: FENCE_COLUMNS,
  grant: [...FENCE_COLUMNS, ...GRANT_COLUMNS],
  queue: [...FENCE_COLUMNS, ...GRANT_COLUMNS, ...WAITER_COLUMNS],
  record: [...FENCE_COLUMNS, ...GRANT_COLUMNS, ...WAITER_COLUMNS, ...CHECKPOINT_COLUMNS],
} as const;

/** The names of the columns a pre-image of `width` carries, in their order in `r`. */
export function preImageColumnNames(width: PreImageWidth): readonly string[] {
  return COLUMNS[width].map(([name]) => name);
}

/** The table columns a statement of `width` must read (its `pre` CTE selects these). */
export function preImageColumns(width: PreImageWidth): string {
  return preImageColumnNames(width)
    .map((name) => (name === 'secret_matches' ? 'secret_hash' : name))
    .join(', ');
}

/**
 * The `r` column: `json_build_array(now_ms, applied, ...columns of source)::text`, where `source` is the
 * pre-image's qualifier (`pre.`, or a plpgsql row variable), `now` the store's now and `applied` a boolean.
 * `presented` is the SQL of the presented secret's hash (`null`: none presented); the row's secret hash is
 * never returned, only whether it equals the presented one (`secret_matches`).
 */
export function preImageJson(width: PreImageWidth, source: string, now: string, applied: string, presented: string | null): string {
  const columns = COLUMNS[width];
  const matches = presented === null ? 'false' : `(${source}secret_hash OPERATOR(pg_catalog.=) ${presented})`;
  const values = columns.map(([name, expression]) =>
    name === 'secret_matches' ? matches : TIME_COLUMNS.has(name) ? epochMs(`${source}${name}`) : `${source}${expression}`,
  );
  return `pg_catalog.json_build_array(${epochMs(now)}, ${applied}, ${values.join(', ')})::text`;
}

/**
 * The claim's pre-image: as `preImageJson` (record width) followed by the removed-token floor
 * (`removedFloor`, SQL; sent only when the key has no token: `PreImage.removedFloor`), except that the checkpoint is left out (NULL)
 * while a live grant of another secret holds the row. NOTE: such a claim is refused `held`, whose outcome
 * carries no checkpoint; without this every poller of a held key would fetch the whole checkpoint (up to
 * its size limit) at every attempt. A re-delivered claim (same secret) and every other outcome get it.
 */
export function claimPreImageJson(source: string, now: string, applied: string, presented: string, removedFloor: string): string {
  const live = `${source}holder IS NOT NULL AND (${source}expires_at IS NULL OR ${now} OPERATOR(pg_catalog.<) ${source}expires_at)`;
  const needed = `(NOT (${live}) OR ${source}secret_hash OPERATOR(pg_catalog.=) ${presented})`;
  // NOTE: the queue only when the claim gets past the live grant and the hold: a `held` or `held-back` refusal
  // carries nothing of it, and every waiter of a held key polls (a full queue is 1,000 entries).
  const queueRead = `(NOT (${live}) AND (${source}held_until IS NULL OR ${now} OPERATOR(pg_catalog.>=) ${source}held_until))`;
  const values = recordCells(source, presented, needed, queueRead);
  // NOTE: the removed-token floor (token-floor.ts), only for a key without a token, after the row's columns.
  values.push(`CASE WHEN COALESCE(${source}token, 0::bigint) OPERATOR(pg_catalog.=) 0::bigint THEN (${removedFloor})::text END`);
  return `pg_catalog.json_build_array(${epochMs(now)}, ${applied}, ${values.join(', ')})::text`;
}

/**
 * The record-width columns of `source` as `r` carries them, the checkpoint only where `withCheckpoint` (SQL) holds,
 * the queue only where `withWaiters` does.
 */
function recordCells(source: string, presented: string, withCheckpoint: string, withWaiters = 'true'): string[] {
  return COLUMNS.record.map(([name, expression]) => {
    if (name === 'secret_matches') return `(${source}secret_hash OPERATOR(pg_catalog.=) ${presented})`;
    const value = TIME_COLUMNS.has(name) ? epochMs(`${source}${name}`) : `${source}${expression}`;
    if (name === 'waiters') return withWaiters === 'true' ? value : `CASE WHEN ${withWaiters} THEN ${value} END`;
    return name.startsWith('checkpoint_') ? `CASE WHEN ${withCheckpoint} THEN ${value} END` : value;
  });
}

/**
 * One row as a JSON array (not text) `[first, second, ...columns]`, the record-width columns of `source` in the
 * places `recordOfCells` reads them, after two cells of the caller's (`first`, `second`: SQL). The checkpoint is
 * sent only where `withCheckpoint` (SQL) holds, NULL elsewhere; `presented` is the presented secret's hash (SQL).
 */
export function recordCellsJson(source: string, first: string, second: string, presented: string, withCheckpoint: string): string {
  return `pg_catalog.json_build_array(${first}, ${second}, ${recordCells(source, presented, withCheckpoint).join(', ')})`;
}

/** A decoded statement result: the store's now, whether SQL applied the change, and the pre-image. */
export interface PreImage {
  readonly now: StoreTime;
  readonly applied: boolean;
  /** The lease row before the statement (`null`: no row). Columns a `fence`-width statement omits are absent. */
  readonly record: LeaseRecord | null;
  /** A claim's removed-token floor (token-floor.ts), `null`: none, or the key has a token. */
  readonly removedFloor: bigint | null;
}

/** One stored waiter (`WAITER_COLUMNS`): waiter id, holder, arrived at, expires at (epoch ms). */
interface WaiterCell {
  readonly w: string;
  readonly h: string;
  readonly a: number;
  readonly e: number;
}

/** One cell of a pre-image's JSON array. */
export type Cell = string | number | boolean | null | Record<string, string> | StateChange | readonly WaiterCell[];
type Column = (typeof COLUMNS.record)[number][0];

/** Each column's index in the `r` array (after now_ms and applied). */
const AT = Object.fromEntries(COLUMNS.record.map(([name], index) => [name, index + 2])) as Readonly<Record<Column, number>>;

const NO_SUBMISSIONS: readonly SubmissionRecord[] = Object.freeze([]);
const NO_WAITERS: readonly QueuedWaiter[] = Object.freeze([]);

/** The queue in a `waiters` cell, in stored order (expired entries too: the core judges them). */
function waitersOf(cell: Cell | undefined): readonly QueuedWaiter[] {
  if (!Array.isArray(cell)) return NO_WAITERS;
  return (cell as readonly WaiterCell[]).map(({ w, h, a, e }) => ({ waiterId: w, holder: h, arrivedAt: a, expiresAt: e }));
}

/** The index of a claim's removed-token floor in `r`: after every column of the row. */
const FLOOR_AT = COLUMNS.record.length + 2;

const bigintOf = (cell: Cell | undefined): bigint | null => (typeof cell === 'string' ? BigInt(cell) : null);
const textOf = (cell: Cell | undefined): string | null => (typeof cell === 'string' ? cell : null);
const timeOf = (cell: Cell | undefined): StoreTime | null => (typeof cell === 'number' ? cell : null);

/** `json` if it parses, otherwise the unreadable-checkpoint marker (valid JSON), so the key stays usable. */
function readableCheckpoint(json: string): string {
  try {
    JSON.parse(json);
    return json;
  } catch {
    return JSON.stringify(unreadableCheckpoint(json.length));
  }
}

/**
 * Decodes the `r` column. A `fence`-width pre-image has no acquired-at (0), checkpoint (null), pending
 * recovery (false) or hold (null), a `grant`-width one no checkpoint: the operations that send one never
 * read them (a property test holds them to it). Submissions are never in a pre-image (they live in their
 * own table, submissions.ts): the record has none, and a fenced write with a submission adds the one its
 * lookup found.
 * The grant's secret is `presented` when the server said the hashes matched, and otherwise a string that
 * differs from it (so the pure core's `checkFence` decides `wrong-secret` exactly as on the whole row).
 */
export function decodePreImage(r: unknown, presented: string | null = null): PreImage {
  if (typeof r !== 'string') throw new Error(`leasefence/postgres: expected the pre-image as JSON text, got ${typeof r}`);
  const cells = JSON.parse(r) as Cell[];
  const [now, applied] = cells;
  if (typeof now !== 'number' || typeof applied !== 'boolean') throw new Error('leasefence/postgres: malformed pre-image');
  return { now, applied, removedFloor: bigintOf(cells[FLOOR_AT]), record: recordOfCells(cells, presented) };
}

/**
 * The record in a pre-image's cells (the row's columns from index 2, as `preImageJson` and `recordCellsJson`
 * place them), `null` for no row or a placeholder. See `decodePreImage`.
 */
export function recordOfCells(cells: readonly Cell[], presented: string | null): LeaseRecord | null {
  const key = cells[AT.key];
  const token = bigintOf(cells[AT.token]);
  const state = cells[AT.state];
  // NOTE: a row without state is a placeholder that only carries waiter interest (freed-interest.ts): no record.
  if (typeof key !== 'string' || token === null || typeof state !== 'object' || state === null) return null;
  const holder = cells[AT.holder];
  // NOTE: a NUL never occurs in a stored or presented secret (Postgres text has none), so this never matches.
  const secret = cells[AT.secret_matches] === true && presented !== null ? presented : `${presented ?? ''}\u0000not-presented`;
  const grant =
    typeof holder !== 'string'
      ? null
      : {
          token,
          holder,
          runId: textOf(cells[AT.run_id]),
          secret,
          acquiredAt: timeOf(cells[AT.acquired_at]) ?? 0,
          expiresAt: timeOf(cells[AT.expires_at]),
          attributes: Object.freeze((cells[AT.attributes] as Record<string, string> | null) ?? {}) as LeaseAttributes,
        };
  const endingKind = cells[AT.ending_kind];
  const endingToken = bigintOf(cells[AT.ending_token]);
  const endingHolder = cells[AT.ending_holder];
  const change = cells[AT.ending_change] as StateChange | null | undefined;
  let ending: Ending | null = null;
  if (typeof endingKind === 'string' && endingToken !== null && typeof endingHolder === 'string') {
    const ended: Ending = {
      kind: endingKind as EndingKind,
      token: endingToken,
      holder: endingHolder,
      runId: textOf(cells[AT.ending_run_id]),
      at: timeOf(cells[AT.ending_at]) ?? 0,
      reason: textOf(cells[AT.ending_reason]),
      by: textOf(cells[AT.ending_by]),
    };
    // NOTE: only a `state-changed` ending has a change; the other kinds keep their shape (no `change` key). A
    // change left on the row by an earlier ending is stale, not cleared (one SET item fewer on the hot path):
    // every statement that writes a `state-changed` ending writes its change too.
    const changed = endingKind === 'state-changed' && typeof change === 'object' && change !== null;
    ending = changed ? { ...ended, change: { name: change.name, from: change.from, to: change.to } } : ended;
  }
  const checkpointJson = cells[AT.checkpoint_json];
  const checkpointToken = bigintOf(cells[AT.checkpoint_token]);
  const checkpoint =
    typeof checkpointJson !== 'string' || checkpointToken === null
      ? null
      : { json: readableCheckpoint(checkpointJson), token: checkpointToken, writtenAt: timeOf(cells[AT.checkpoint_written_at]) ?? 0 };
  return {
    key,
    token,
    grant,
    ending,
    checkpoint,
    recoveryRequired: cells[AT.recovery_required] === true,
    state: Object.freeze(state as Record<string, string>) as KeyState,
    heldUntil: timeOf(cells[AT.held_until]),
    submissions: NO_SUBMISSIONS,
    waiters: waitersOf(cells[AT.waiters]),
  };
}
