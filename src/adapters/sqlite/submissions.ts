/**
 * Submissions recorded by fenced writes, in the lease table's `<table>_submissions` (schema.ts): looked up by
 * `(key, run_id)` and recorded only by a fenced write that carries a submission, so the hot path (claim, renew,
 * release, a plain fenced write) never reads or rewrites them. Each statement runs inside the fenced write's
 * (or remove's) `BEGIN IMMEDIATE` transaction.
 */
import { SUBMISSION_RETENTION, type SubmissionRecord } from '../../store-entry.js';
import type { SqliteClient } from './client.js';
import type { TableName } from './identifier.js';
import { submissionsTable } from './schema.js';
import { statementFor } from './statement-cache.js';

interface SubmissionRow {
  readonly run_id: string;
  readonly digest: string;
  readonly token: string;
  readonly holder: string;
  readonly at: number | bigint;
  readonly receipt_json: string | null;
}

/** The statements of one lease table's submissions. */
export interface SubmissionStatements {
  /** The submission `runId` recorded for `key`, or `null`. */
  find(key: string, runId: string): SubmissionRecord | null;
  /** Records `submission` for `key` as its newest, forgetting the oldest past `SUBMISSION_RETENTION`. */
  record(key: string, submission: SubmissionRecord): void;
  /** Forgets every submission of `key` (its record was removed). */
  removeAll(key: string): void;
}

/** The submissions of `table` on `client` (statements prepared on first use: the table may not exist yet). */
export function submissionStatements(client: SqliteClient, table: TableName): SubmissionStatements {
  const { quoted } = submissionsTable(table);
  // ATOMICITY: every statement below runs inside the calling operation's BEGIN IMMEDIATE transaction.
  const findSql = `SELECT run_id, digest, CAST(token AS TEXT) AS token, holder, at, receipt_json FROM ${quoted} WHERE key = ? AND run_id = ?`;
  const insertSql = `INSERT INTO ${quoted} (key, run_id, seq, digest, token, holder, at, receipt_json)
VALUES (?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM ${quoted} WHERE key = ?), ?, ?, ?, ?, ?)`;
  // NOTE: after the insert, the newest SUBMISSION_RETENTION (the new one included) are kept, as recordSubmission keeps them.
  const trimSql = `DELETE FROM ${quoted} WHERE key = ? AND seq <= (SELECT max(seq) FROM ${quoted} WHERE key = ?) - ${SUBMISSION_RETENTION}`;
  const removeSql = `DELETE FROM ${quoted} WHERE key = ?`;
  return {
    find(key, runId) {
      const row = statementFor(client, findSql).get(key, runId) as SubmissionRow | undefined;
      if (row === undefined) return null;
      return {
        runId: row.run_id,
        digest: row.digest,
        token: BigInt(row.token),
        holder: row.holder,
        at: Number(row.at),
        receiptJson: row.receipt_json,
      };
    },
    record(key, submission) {
      const { runId, digest, token, holder, at, receiptJson } = submission;
      statementFor(client, insertSql).run(key, runId, key, digest, token, holder, at, receiptJson);
      statementFor(client, trimSql).run(key, key);
    },
    removeAll(key) {
      statementFor(client, removeSql).run(key);
    },
  };
}
