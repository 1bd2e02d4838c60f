/**
 * An idempotent submission's command, made before any I/O: the payload read once and checked like a
 * checkpoint (no cycles, BigInt, undefined, functions, non-finite numbers, class instances; size-limited), its
 * digest the SHA-256 (hex) of its canonical JSON (object keys sorted at every depth, in code-unit order), so
 * an equal payload with keys in another order is the same submission.
 */
import { createHash } from 'node:crypto';
import { InvalidArgumentError } from './errors.js';
import type { SubmissionCommand } from './fence/operations.js';
import { assertName, readOptions, serializeCheckpoint } from './validate.js';

const SUBMISSION_OPTIONS = ['payload', 'runId', 'receipt', 'bindToGrant'] as const;

/** JSON text with object keys sorted at every depth (code-unit order): one text per JSON value. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const names = Object.keys(value).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${names.map((name) => `${JSON.stringify(name)}:${canonicalJson((value as Record<string, unknown>)[name])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** SHA-256 (lowercase hex) of the canonical JSON of a payload already checked to be JSON. */
export function submissionDigest(payload: unknown, maxBytes: number): string {
  // NOTE: the checked copy (read once, getters and Proxies cannot change it), parsed back: plain data only.
  const json = serializeCheckpoint(payload, maxBytes, 'submission payload');
  return createHash('sha256')
    .update(canonicalJson(JSON.parse(json)))
    .digest('hex');
}

/** The store command of `options.submission`; `leaseRunId` is the replay key when none is given. */
export function toSubmissionCommand(submission: unknown, leaseRunId: string | null, maxBytes: number): SubmissionCommand {
  if (submission === null || typeof submission !== 'object') throw new InvalidArgumentError('submission must be an object with a payload');
  const given = readOptions('submission', submission, SUBMISSION_OPTIONS);
  if (given.payload === undefined) throw new InvalidArgumentError('submission needs a payload (any JSON value)');
  const runId = given.runId ?? leaseRunId;
  if (runId === null) throw new InvalidArgumentError('submission needs a runId: the lease has none, pass submission.runId');
  assertName('submission runId', runId);
  const { bindToGrant } = given;
  if (bindToGrant !== undefined && typeof bindToGrant !== 'boolean')
    throw new InvalidArgumentError('submission bindToGrant must be a boolean');
  const digest = submissionDigest(given.payload, maxBytes);
  const receiptJson = given.receipt === undefined ? null : serializeCheckpoint(given.receipt, maxBytes, 'submission receipt');
  return { runId, digest, receiptJson, bindToGrant: bindToGrant === true };
}
