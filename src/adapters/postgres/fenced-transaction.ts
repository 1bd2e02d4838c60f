/**
 * The transaction form of a Postgres fenced write: BEGIN; lock the lease row and check the fence (bounding
 * the transaction by the grant; with a submission, its replay lookup first); your statements; save the
 * checkpoint if one was given; record the submission if one was given; COMMIT.
 *
 * ATOMICITY: the first statement locks the lease row FOR SHARE (or FOR NO KEY UPDATE when the write saves a
 * checkpoint or records a submission: two such writes of one lease then queue instead of deadlocking on a
 * SHARE -> UPDATE upgrade, and two submissions of one key are looked up and recorded one after the other),
 * which holds off every takeover (claim, revoke, setKeyState, remove) until the transaction ends, so the
 * write commits before any newer grant exists. The checkpoint and the submission are saved after your
 * callback returned, in the same transaction: the write, the checkpoint and the submission commit together
 * or not at all. A callback that refuses itself (`context.refuse`) rolls all of it back.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { monotonicClock } from '../../clock.js';
import { InvalidArgumentError, isLeaseError } from '../../errors.js';
import type { FencedWriteOutcome, StoreFencedWriteOptions } from '../../fence/operations.js';
import * as transitions from '../../fence/transitions.js';
import type { Fence, FenceRefusal, LeaseRecord, StoreTime } from '../../fence/types.js';
import { checkFence } from '../../fence/verdict.js';
import type { PostgresClient, PostgresQueryable } from './client.js';
import { classifyFailure, ownStatementFailure } from './failures.js';
import { decodePreImage } from './rows.js';
import { decodeSubmissionLookup, type SubmissionLookup } from './submissions.js';
import { refuseWrite, WriteRefusedSignal, writeRefused } from '../../write-refusal.js';
import { secretHash } from './secret-hash.js';
import type { Session } from './session.js';
import type { LeaseStatements } from './statements.js';

/** What a Postgres fenced write's callback receives: a client bound to the fenced transaction. */
export interface PostgresWriteContext {
  /**
   * Runs a statement inside the fenced transaction (bind parameters `$1`, `$2`, ...). Refuses (with the
   * fenced write then refused as `expired`) once the grant's time, measured from when the fence check was
   * sent, has run out.
   */
  query<Row = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ rows: Row[] }>;
  /**
   * The transaction's connection as the driver gave it: a pg `PoolClient`, a PGlite `Transaction`, the pg
   * `Client` of `fromPgClient`, or for `fromPostgresJs` a wrapper whose `sql` is postgres.js's transaction.
   * Statements sent on it directly are not checked against the grant's deadline.
   */
  readonly connection: PostgresQueryable;
  readonly key: string;
  /** The token of the grant the write runs under. */
  readonly token: bigint;
  /** The store's now when the fence was checked (the lease row stays locked until COMMIT). */
  readonly now: StoreTime;
  /**
   * Refuses the write from inside the callback, after reading your own data in the fenced transaction (for
   * example "the owner account became inactive"): throws, and the store rolls the whole transaction back
   * (every statement the callback sent, the checkpoint, the submission) and answers
   * `{ ok: false, reason: 'write-refused', code, detail }`. `code` is 1-100 letters, digits or `_ . : -`
   * (starting with a letter or digit), `detail` at most 1,000 characters; a bad one fails the write with
   * INVALID_ARGUMENT (also rolled back). Do not catch what it throws.
   *
   * ```ts
   * await leases.fencedWrite(lease, async (tx) => {
   *   const { rows } = await tx.query('SELECT active FROM accounts WHERE id = $1', [owner]);
   *   if (!rows[0]?.active) tx.refuse('owner-inactive', `account ${owner} is inactive`);
   *   await tx.query('INSERT INTO results (id, value) VALUES ($1, $2)', [id, value]);
   * });
   * ```
   */
  refuse(code: string, detail?: string): never;
}

/** An open fenced transaction, as seen from code its callback runs. */
interface OpenTransaction {
  readonly client: PostgresClient;
  readonly table: string;
  readonly key: string;
  /** The client has one connection: any other statement would queue behind the transaction. */
  readonly exclusive: boolean;
}

const openTransactions = new AsyncLocalStorage<OpenTransaction>();

/**
 * Throws `InvalidArgumentError` (before any I/O) when `operation` on `key` is called from inside a fenced
 * write's callback that it would wait for forever: an operation that locks the same lease row (the
 * transaction holds it until the callback returns), or any statement on a single-connection client.
 */
export function refuseInsideFencedWrite(client: PostgresClient, table: string, key: string | null, operation: string): void {
  const open = openTransactions.getStore();
  if (open === undefined || open.client !== client) return;
  if (open.exclusive) {
    throw new InvalidArgumentError(
      `${operation} inside a fenced write's callback would wait forever: the client has one connection, held by the fenced transaction. Use the callback's tx.query, or call ${operation} after fencedWrite returns`,
    );
  }
  if (open.table === table && open.key === key) {
    throw new InvalidArgumentError(
      `${operation} of ${JSON.stringify(key)} inside its own fenced write's callback would wait forever for the lease row the transaction holds: pass the checkpoint to the write (leases.fencedWrite(lease, write, { checkpoint })), or call ${operation} after fencedWrite returns`,
    );
  }
}

/** Thrown by the write context's `query` once the grant's local deadline has passed. */
class GrantDeadlinePassed extends Error {}

export interface FencedTransactionRun<T> {
  readonly session: Session;
  readonly client: PostgresClient;
  readonly exclusive: boolean;
  readonly table: string;
  readonly statements: LeaseStatements;
  /** Added to the grant's remaining time to bound the transaction on the server (ms). */
  readonly marginMs: number;
  readonly fence: Fence;
  readonly write: (context: PostgresWriteContext) => T | Promise<T>;
  readonly options: StoreFencedWriteOptions;
}

/** The pre-image in the single row a lease statement returns. */
function recordOf(rows: unknown[], presented: string): { now: StoreTime; record: LeaseRecord | null } {
  const row = rows[0] as { r?: unknown } | undefined;
  if (rows.length !== 1 || typeof row !== 'object' || row === null)
    throw new Error(`leasefence/postgres: fencedWrite returned ${rows.length} rows, expected exactly 1`);
  return decodePreImage(row.r, presented);
}

/** The refusal of a grant that ran out of time during its fenced transaction: `expired` at its expiry. */
function expiredVerdict(record: LeaseRecord, fence: Fence): FenceRefusal {
  const verdict = checkFence(record, fence, record.grant?.expiresAt ?? 0);
  if (verdict.ok) throw new Error('leasefence/postgres: a grant past its deadline passed the fence check');
  return verdict;
}

/** The lookup in a `lockForSubmission` result (none when there was no row: the lookup runs on a locked row only). */
function lookupOf(rows: unknown[]): SubmissionLookup {
  const cell = (rows[0] as { submission?: unknown } | undefined)?.submission;
  return cell === null || cell === undefined ? { lastSeq: 0n, found: null } : decodeSubmissionLookup(cell);
}

/** Runs a fenced write in a transaction on its own connection; see the module comment. */
export function runFencedTransaction<T>(run: FencedTransactionRun<T>): Promise<FencedWriteOutcome<T>> {
  const { session, statements, fence, options } = run;
  const { checkpointJson, submission } = options;
  const lock =
    submission !== undefined
      ? statements.lockForSubmission
      : checkpointJson === undefined
        ? statements.lockShared
        : statements.lockForCheckpoint;
  const lockParams = [fence.key, run.marginMs.toString(), secretHash(fence.secret)];
  if (submission !== undefined) lockParams.push(submission.runId);
  return session.transaction(async (tx, control): Promise<FencedWriteOutcome<T>> => {
    const sentAt = monotonicClock();
    let rows: unknown[];
    try {
      rows = (await session.run(tx, lock, lockParams)).rows;
    } catch (error) {
      throw ownStatementFailure(session.classifyFailure(error, 'before-commit', 'fencedWrite'), 'fencedWrite');
    }
    const { now, record } = recordOf(rows, fence.secret);
    const lookup = submission === undefined ? null : lookupOf(rows);
    // NOTE: with a submission, the replay lookup comes before the fence (transitions.checkSubmission); the
    // record's submissions are the one the lookup found in the key's window, all `checkSubmission` reads.
    const found = lookup?.found ?? null;
    const verdict =
      submission === undefined
        ? checkFence(record, fence, now)
        : (transitions.checkSubmission(
            record === null || found === null ? record : { ...record, submissions: [found] },
            fence,
            submission,
            now,
          ) ?? {
            ok: true as const,
          });
    if (!verdict.ok) return control.rollbackWith(verdict);
    const granted = record as LeaseRecord;
    const expiresAt = granted.grant?.expiresAt ?? null;
    // NOTE: measured from when the check was SENT, so the local deadline is never later than the store's.
    const deadline = expiresAt === null ? Infinity : sentAt + (expiresAt - now);
    const query = async (text: string, params?: unknown[]) => {
      if (monotonicClock() >= deadline) throw new GrantDeadlinePassed();
      return tx.query(text, params);
    };
    const context: PostgresWriteContext = {
      query: query as PostgresWriteContext['query'],
      connection: tx,
      key: fence.key,
      token: fence.token,
      now,
      refuse: refuseWrite,
    };
    let value: T;
    try {
      value = await openTransactions.run({ client: run.client, table: run.table, key: fence.key, exclusive: run.exclusive }, () =>
        run.write(context),
      );
    } catch (error) {
      if (error instanceof GrantDeadlinePassed) return control.rollbackWith(expiredVerdict(granted, fence));
      if (error instanceof WriteRefusedSignal) {
        return control.rollbackWith(writeRefused(fence, error, now));
      }
      // NOTE: a driver failure inside the transaction (the bound's timeouts 57014 / 25P03, a lost
      // connection, a pool error) rolled it back: nothing was applied. Your own SQL errors pass unchanged.
      throw isLeaseError(error) ? error : classifyFailure(error, 'before-commit', 'fencedWrite');
    }
    if (monotonicClock() >= deadline) return control.rollbackWith(expiredVerdict(granted, fence));
    const ownStatement = async (text: string, params: unknown[]): Promise<unknown[]> => {
      try {
        return (await session.run(tx, text, params)).rows;
      } catch (error) {
        throw ownStatementFailure(session.classifyFailure(error, 'before-commit', 'fencedWrite'), 'fencedWrite');
      }
    };
    let checkpoint = null;
    if (checkpointJson !== undefined) {
      // NOTE: the same checkpoint transition at the same now as the memory store: the row is locked, unchanged.
      const { outcome } = transitions.checkpoint(granted, { fence, json: checkpointJson }, now);
      if (!outcome.ok) throw new Error('leasefence/postgres: the checkpoint transition refused a fence that holds');
      const saved = await ownStatement(statements.saveCheckpoint, [fence.key, fence.token.toString(), checkpointJson, now]);
      if (saved.length !== 1) throw new Error('leasefence/postgres: the fenced write could not save its checkpoint on the row it locked');
      checkpoint = outcome.checkpoint;
    }
    if (submission === undefined || lookup === null) return { ok: true, value, token: fence.token, checkpoint, now };
    const recorded = transitions.recordSubmission(granted, fence, submission, now).submission;
    const seq = (lookup.lastSeq + 1n).toString();
    const params = [fence.key, seq, recorded.runId, recorded.digest, recorded.token.toString(), recorded.holder, now, recorded.receiptJson];
    const inserted = await ownStatement(statements.recordSubmission, params);
    if (inserted.length !== 1) throw new Error('leasefence/postgres: the fenced write could not record its submission');
    return { ok: true, value, token: fence.token, checkpoint, submission: recorded, now };
  }, 'fencedWrite');
}
