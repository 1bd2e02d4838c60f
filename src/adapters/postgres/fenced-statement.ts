/**
 * The one-statement fenced write: your INSERT / UPDATE / DELETE runs as a CTE of a statement that first
 * locks the lease row and checks the fence, so write and check are one round trip and one transaction.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { ReplayConflict, SubmissionCommand, SubmissionReplayed } from '../../fence/operations.js';
import * as transitions from '../../fence/transitions.js';
import type { Fence, FenceRefusal, LeaseAttributes, StoreTime, SubmissionRecord } from '../../fence/types.js';
import { checkFence } from '../../fence/verdict.js';
import { leaseFence, type Lease } from '../../lease.js';
import { toAttributes } from '../../validate.js';
import type { TableName } from './identifier.js';
import { decodePreImage, preImageJson } from './rows.js';
import { checkSubmissionInput, decodeSubmissionLookup, recordSubmissionCtes, submissionLookup } from './submissions.js';
import type { Session } from './session.js';
import { fenceHolds, fenceParams, LOCKED_NOW, lockedRow, PRE_IMAGE_WIDTH } from './statements.js';

/** Options of `store.fencedStatement`. */
export interface FencedStatementOptions {
  /** Attributes the grant must have been bound with, checked in the same statement. */
  readonly attributes?: LeaseAttributes;
  /**
   * Record this submission with the statement, once per run id, in the same statement (see
   * `SubmissionCommand`): its replay lookup comes before the fence; a run id recorded before is answered
   * `replayed` (same digest) or `replay-conflict`, and your statement then writes nothing.
   */
  readonly submission?: SubmissionCommand;
}

/**
 * The statement ran with the fence holding (`rowCount` may be 0; `submission`: the one recorded with it),
 * or the fence refused, or the submission was recorded before: nothing was written.
 */
export type FencedStatementOutcome<Row> =
  | {
      readonly ok: true;
      readonly rows: Row[];
      readonly rowCount: number;
      readonly token: bigint;
      readonly submission?: SubmissionRecord;
      readonly now: StoreTime;
    }
  | FenceRefusal
  | SubmissionReplayed
  | ReplayConflict;

const META = ['leasefence_lease', 'leasefence_written', 'leasefence_guard', 'leasefence_submission'] as const;
/** The fenced statement's column of the submission lookup (a scalar subquery: it is on no written row). */
const SUBMISSION_COLUMN = `
  (SELECT pre.leasefence_submission FROM leasefence_pre AS pre) AS leasefence_submission,`;
const GUARD_MESSAGE = 'leasefence: rows written although the fence did not hold';

/**
 * Wraps `write` (which uses $1..$offset) with the fence check, whose parameters follow at $offset+1..+6.
 * ATOMICITY: `leasefence_pre` locks the lease row FOR SHARE (a takeover waits until this statement's
 * transaction ends) and reads now after the lock (`lockedRow`: no separate clock CTE, two plan nodes fewer;
 * with no row, now is read in the final SELECT), `fence` has one row iff the fence holds,
 * and `leasefence_written` is your statement, which reads `fence`. The guard column makes the whole statement
 * fail (so nothing is applied) if your statement wrote rows although `fence` was empty, e.g. because it forgot
 * to read it. The pre-image is built once (an uncorrelated subquery) and repeated on each written row.
 */
export function fencedStatementSql(table: TableName, write: string, offset: number, submission = false): string {
  const param = (index: number) => `$${offset + index}`;
  // NOTE: with a submission (parameters 7 run id, 8 digest, 9 receipt), the row is locked FOR NO KEY UPDATE
  // and the run id looked up after the lock (submissions.ts); `fence` is empty when it was recorded before.
  const lookup = submission ? `, ${submissionLookup(table, 'locked.key', param(7))} AS leasefence_submission` : '';
  const notRecorded = submission
    ? `\n    AND pg_catalog.json_typeof(pre.leasefence_submission::json OPERATOR(pg_catalog.->) 1) OPERATOR(pg_catalog.=) 'null'`
    : '';
  const values = `SELECT f.key, (pre.leasefence_submission::json OPERATOR(pg_catalog.->>) 0)::bigint OPERATOR(pg_catalog.+) 1::bigint,
    ${param(7)}::text, ${param(8)}::text, f.token, ${param(4)}::text, f.now, ${param(9)}::text
  FROM fence AS f CROSS JOIN leasefence_pre AS pre`;
  const recording = submission ? `,\n${recordSubmissionCtes(table, values, `${param(1)}::text`)}` : '';
  // NOTE: every relation but `fence` has a leasefence_ name, so that none shadows a table your statement uses.
  return `WITH leasefence_pre AS MATERIALIZED (
  ${lockedRow(table, PRE_IMAGE_WIDTH.lockShared, submission ? 'NO KEY UPDATE' : 'SHARE', param(1), lookup)}
),
fence AS MATERIALIZED (
  SELECT pre.key AS key, pre.token AS token, pre.now AS now FROM leasefence_pre AS pre
  WHERE ${fenceHolds(param, 'pre.now')}${notRecorded}
),
leasefence_written AS (
${write}
)${recording}
SELECT${submission ? SUBMISSION_COLUMN : ''}
  (SELECT ${preImageJson(PRE_IMAGE_WIDTH.lockShared, 'pre.', LOCKED_NOW, 'EXISTS (SELECT 1 FROM fence)', `${param(3)}::text`)}
    FROM (SELECT) AS leasefence_none LEFT JOIN leasefence_pre AS pre ON true) AS leasefence_lease,
  (SELECT pg_catalog.count(*) FROM leasefence_written)::text AS leasefence_written,
  CASE WHEN NOT EXISTS (SELECT 1 FROM fence) AND EXISTS (SELECT 1 FROM leasefence_written)
    THEN ('${GUARD_MESSAGE}: ' OPERATOR(pg_catalog.||) (SELECT pg_catalog.count(*) FROM leasefence_written)::text)::int END AS leasefence_guard,
  written.*
FROM (SELECT) AS leasefence_one LEFT JOIN leasefence_written AS written ON true`;
}

/** Checks a user statement before any I/O; returns it without a trailing semicolon. */
function checkStatement(text: unknown, params: unknown): string {
  if (typeof text !== 'string' || text.trim() === '') throw new InvalidArgumentError('fencedStatement needs the SQL text of one statement');
  if (!Array.isArray(params)) throw new InvalidArgumentError('fencedStatement params must be an array');
  const statement = text.trim().replace(/;\s*$/, '');
  if (!/\bfence\b/i.test(statement)) {
    throw new InvalidArgumentError(
      'fencedStatement: the statement must read the relation "fence" (e.g. UPDATE t SET ... FROM fence WHERE ...), or it would not be fenced',
    );
  }
  if (!/\breturning\b/i.test(statement) && !/^\s*select\b/i.test(statement)) {
    throw new InvalidArgumentError(
      'fencedStatement: the statement needs a RETURNING clause (RETURNING 1 will do) so that its rows can be counted',
    );
  }
  for (const match of statement.matchAll(/\$(\d+)/g)) {
    const index = Number(match[1]);
    if (index < 1 || index > params.length) {
      throw new InvalidArgumentError(`fencedStatement: the statement uses $${index} but only ${params.length} parameter(s) were given`);
    }
  }
  return statement;
}

/** A checked and wrapped user statement, for one number of parameters. */
interface Wrapped {
  readonly paramCount: number;
  readonly sql: string;
}

/** How many user statement texts a store keeps wrapped (applications send a handful of fixed texts). */
const MAX_WRAPPED = 256;

/**
 * Checks and wraps user statements once per text: an application sends the same few texts again and
 * again, and the wrapped text, one object per user text, also keeps its prepared statement name.
 */
export function createStatementCache(table: TableName): (text: unknown, params: unknown, submission: boolean) => string {
  const plain = new Map<unknown, Wrapped>();
  const submitting = new Map<unknown, Wrapped>();
  return (text, params, submission) => {
    const wrapped = submission ? submitting : plain;
    const cached = wrapped.get(text);
    if (cached !== undefined && Array.isArray(params) && cached.paramCount === params.length) return cached.sql;
    const statement = checkStatement(text, params);
    const paramCount = (params as unknown[]).length;
    const sql = fencedStatementSql(table, statement, paramCount, submission);
    if (wrapped.size >= MAX_WRAPPED) wrapped.clear();
    wrapped.set(text, { paramCount, sql });
    return sql;
  };
}

export interface FencedStatementRun {
  readonly session: Session;
  readonly storeId: string;
  readonly lease: Lease;
  readonly text: string;
  readonly params: unknown[];
  readonly options: FencedStatementOptions;
  readonly checkFenceInput: (fence: Fence) => void;
  /** The store's `createStatementCache`. */
  readonly wrap: (text: unknown, params: unknown, submission: boolean) => string;
  /** Refuses a statement that would wait forever for an enclosing fenced write (fenced-transaction.ts). */
  readonly guard: (key: string) => void;
}

/** Runs a fenced statement and decides its outcome with `checkFence` on the returned pre-image. */
export async function runFencedStatement<Row>(run: FencedStatementRun): Promise<FencedStatementOutcome<Row>> {
  const held = leaseFence(run.lease, run.storeId);
  run.guard(held.key);
  const { submission } = run.options;
  if (submission !== undefined) checkSubmissionInput(submission);
  const sql = run.wrap(run.text, run.params, submission !== undefined);
  const fence: Fence = run.options.attributes === undefined ? held : { ...held, attributes: toAttributes(run.options.attributes) };
  run.checkFenceInput(fence);
  const params = [...run.params, ...fenceParams(fence)];
  if (submission !== undefined) params.push(submission.runId, submission.digest, submission.receiptJson);
  let rows: Record<string, unknown>[];
  try {
    rows = (await run.session.statement(sql, params, 'fencedStatement')) as Record<string, unknown>[];
  } catch (error) {
    const message = (error as { message?: unknown } | null)?.message;
    if (typeof message === 'string' && message.includes(GUARD_MESSAGE)) {
      throw new InvalidArgumentError(
        'fencedStatement: the statement wrote rows without reading "fence"; it was rolled back (nothing applied)',
      );
    }
    throw run.session.classifyFailure(error, 'statement', 'fencedStatement');
  }
  const first = rows[0];
  if (first === undefined) throw new Error('leasefence/postgres: fencedStatement returned no rows');
  const { now, applied, record } = decodePreImage(first['leasefence_lease'], fence.secret);
  let verdict: FenceRefusal | SubmissionReplayed | ReplayConflict | { readonly ok: true };
  let recorded: SubmissionRecord | undefined;
  if (submission === undefined) verdict = checkFence(record, fence, now);
  else {
    // NOTE: the replay lookup before the fence, on the submission the statement's lookup found (if any).
    const cell = first['leasefence_submission'];
    const found = cell === null || cell === undefined ? null : decodeSubmissionLookup(cell).found;
    const seen = record === null || found === null ? record : { ...record, submissions: [found] };
    verdict = transitions.checkSubmission(seen, fence, submission, now) ?? { ok: true };
    if (verdict.ok && record !== null) recorded = transitions.recordSubmission(record, fence, submission, now).submission;
  }
  if (verdict.ok !== applied) {
    throw new Error(`leasefence/postgres: fencedStatement disagrees with the core (core ok=${verdict.ok}, SQL fence=${applied})`);
  }
  if (!verdict.ok) return verdict;
  const rowCount = Number(first['leasefence_written']);
  const written =
    rowCount === 0
      ? []
      : rows.map((row) => {
          const copy = { ...row };
          for (const name of META) delete copy[name];
          return copy as Row;
        });
  return recorded === undefined
    ? { ok: true, rows: written, rowCount, token: fence.token, now }
    : { ok: true, rows: written, rowCount, token: fence.token, submission: recorded, now };
}
