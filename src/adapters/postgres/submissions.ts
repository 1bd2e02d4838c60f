/**
 * Submissions (a fenced write's `submission`) in a table of their own, `<table>_submissions`: one row per
 * recorded submission, numbered per key (`seq`, 1, 2, ...). The lease row never carries them, so claim,
 * renew, release and plain fenced writes neither read nor rewrite them.
 *
 * Retention is the window of the key's newest `SUBMISSION_RETENTION` (32) rows by `seq`: the lookup reads
 * only that window, so a row past it is forgotten whether or not it is deleted yet; recording one deletes
 * the rows it pushes out of the window (a one-statement fenced write, whose snapshot predates its lock,
 * may miss some that a concurrent write recorded just before; the next recording deletes them).
 *
 * ATOMICITY: a fenced write with a submission locks the lease row FOR NO KEY UPDATE (so writes of one key's
 * submissions queue), and looks the run id up with `<table>_submission_of`, a VOLATILE plpgsql function
 * called after the lock: its query takes a fresh snapshot (READ COMMITTED), which sees every submission
 * committed by the writes that held the row before; a statement's own snapshot, taken before its lock wait,
 * would not, and a retry racing the first try would write twice. The submission is then inserted with the
 * next `seq` in the same transaction as the write and the checkpoint. `remove` deletes a key's rows
 * (remove.ts).
 */
import { InvalidArgumentError } from '../../errors.js';
import type { SubmissionCommand } from '../../fence/operations.js';
import type { SubmissionRecord } from '../../fence/types.js';
import { describe } from '../../validate.js';
import { assertEncodable } from './encodable.js';
import { SUBMISSION_RETENTION } from '../../fence/types.js';
import type { TableName } from './identifier.js';
import { epochMs } from './rows.js';

/** The submissions table's suffix: `<table>_submissions`. */
export const SUBMISSIONS_SUFFIX = 'submissions';

/** The lookup function's suffix: `<table>_submission_of`. */
export const SUBMISSION_LOOKUP_SUFFIX = 'submission_of';

/** The submissions table's DDL. */
export function submissionsTableDdl(table: TableName): string {
  return `CREATE TABLE IF NOT EXISTS ${table.derive(SUBMISSIONS_SUFFIX)} (
  key text NOT NULL,
  seq bigint NOT NULL,
  run_id text NOT NULL,
  digest text NOT NULL,
  token bigint NOT NULL,
  holder text NOT NULL,
  at timestamptz(3) NOT NULL,
  receipt_json text,
  PRIMARY KEY (key, seq)
)`;
}

/**
 * The lookup function's DDL: `(key, run id)` -> JSON text `[last seq, found]`, where `found` is the run
 * id's submission among the key's newest `SUBMISSION_RETENTION` (`[seq, run id, digest, token, holder,
 * at ms, receipt]`) or null. NOTE: a run id appears at most once in the window: it is recorded again only
 * after it was forgotten, that is after `SUBMISSION_RETENTION` newer ones.
 */
export function submissionLookupDdl(table: TableName, schemaPrefix: string): string {
  const s = `${schemaPrefix}"${table.bare}_${SUBMISSIONS_SUFFIX}"`;
  return `CREATE OR REPLACE FUNCTION ${schemaPrefix}"${table.bare}_${SUBMISSION_LOOKUP_SUFFIX}"(p_key text, p_run_id text)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $leasefence$
DECLARE
  last_seq bigint;
  found_json json;
BEGIN
  SELECT s.seq INTO last_seq FROM ${s} AS s WHERE s.key = p_key ORDER BY s.seq DESC LIMIT 1;
  SELECT json_build_array(w.seq::text, w.run_id, w.digest, w.token::text, w.holder, ${epochMs('w.at')}, w.receipt_json)
    INTO found_json
    FROM (SELECT * FROM ${s} AS s WHERE s.key = p_key ORDER BY s.seq DESC LIMIT ${SUBMISSION_RETENTION}) AS w
    WHERE w.run_id = p_run_id;
  RETURN json_build_array(COALESCE(last_seq, 0)::text, found_json)::text;
END
$leasefence$`;
}

/** The lookup of run id `runId` (an SQL expression) for the key `key`, as a call (one column of a locking query's projection). */
export function submissionLookup(table: TableName, key: string, runId: string): string {
  return `${table.derive(SUBMISSION_LOOKUP_SUFFIX)}(${key}, ${runId}::text)`;
}

/** The columns a submission row is inserted with, in order. */
const INSERTED = '(key, seq, run_id, digest, token, holder, at, receipt_json)';

/**
 * CTEs that insert the submission (`values`: an SQL row source of the INSERTED columns) and delete the rows
 * it pushes out of the key's window; `recorded` returns the new row's seq.
 */
export function recordSubmissionCtes(table: TableName, values: string, key: string): string {
  const s = table.derive(SUBMISSIONS_SUFFIX);
  return `leasefence_recorded AS (
  INSERT INTO ${s} ${INSERTED}
  ${values}
  RETURNING seq
),
leasefence_trimmed AS (
  DELETE FROM ${s} AS s USING leasefence_recorded AS r
  WHERE s.key = ${key} AND s.seq OPERATOR(pg_catalog.<=) (r.seq OPERATOR(pg_catalog.-) ${SUBMISSION_RETENTION}::bigint)
  RETURNING 1
)`;
}

/**
 * Records a submission in a fenced transaction, after its write: $1 key, $2 seq, $3 run id, $4 digest,
 * $5 token, $6 holder, $7 at (epoch ms), $8 receipt JSON text. Returns one row.
 */
export function recordSubmissionStatement(table: TableName): string {
  const values = `VALUES ($1::text, $2::bigint, $3::text, $4::text, $5::bigint, $6::text,
    pg_catalog.to_timestamp($7::float8 OPERATOR(pg_catalog./) 1000::float8), $8::text)`;
  return `WITH ${recordSubmissionCtes(table, values, '$1::text')}
SELECT leasefence_recorded.seq::text AS seq FROM leasefence_recorded`;
}

/** A decoded lookup: the key's last seq (0: none) and the run id's submission in the window, if any. */
export interface SubmissionLookup {
  readonly lastSeq: bigint;
  readonly found: SubmissionRecord | null;
}

/** Decodes the lookup function's result. */
export function decodeSubmissionLookup(text: unknown): SubmissionLookup {
  if (typeof text !== 'string') throw new Error(`leasefence/postgres: expected the submission lookup as JSON text, got ${typeof text}`);
  const [lastSeq, found] = JSON.parse(text) as [string, [string, string, string, string, string, number, string | null] | null];
  if (found === null) return { lastSeq: BigInt(lastSeq), found: null };
  const [, runId, digest, token, holder, at, receiptJson] = found;
  return { lastSeq: BigInt(lastSeq), found: { runId, digest, token: BigInt(token), holder, at, receiptJson } };
}

const DIGEST = /^[0-9a-f]{64}$/;

/**
 * Checks a submission command before any I/O (a store called directly, not through `createLeases`, which
 * builds it): a non-empty storable run id, a SHA-256 hex digest, a storable receipt or null, a boolean.
 */
export function checkSubmissionInput(submission: SubmissionCommand): void {
  if (typeof submission !== 'object' || submission === null)
    throw new InvalidArgumentError(`submission must be an object, got ${describe(submission)}`);
  const { runId, digest, receiptJson, bindToGrant } = submission;
  if (typeof runId !== 'string' || runId === '')
    throw new InvalidArgumentError(`submission runId must be a non-empty string, got ${describe(runId)}`);
  assertEncodable('submission runId', runId);
  if (typeof digest !== 'string' || !DIGEST.test(digest))
    throw new InvalidArgumentError(`submission digest must be a SHA-256 digest in lowercase hex, got ${describe(digest)}`);
  if (receiptJson !== null && typeof receiptJson !== 'string')
    throw new InvalidArgumentError(`submission receiptJson must be JSON text or null, got ${describe(receiptJson)}`);
  assertEncodable('submission receipt', receiptJson);
  if (typeof bindToGrant !== 'boolean')
    throw new InvalidArgumentError(`submission bindToGrant must be a boolean, got ${describe(bindToGrant)}`);
}
