/**
 * How the lease-only statements commit (store option `leaseCommit`). `'durable'` (the default): like any
 * statement, a claim, renew or release is acknowledged after its commit record is flushed to the WAL.
 * `'fast'`: those statements turn `synchronous_commit` off for their own implicit transaction, so the server
 * acknowledges them before the flush (the WAL writer flushes within `wal_writer_delay`, 200 ms by default); a
 * crash of the server (not of a client) in between forgets them, as Redis without AOF forgets its last writes.
 *
 * What it never touches: fenced writes (`fencedWrite`, `fencedStatement`, `gatedUpsert`) and every statement
 * that saves or clears a checkpoint (`checkpoint`, a release that replaces or clears it, a fenced write's
 * checkpoint), revoke, recover, key state, remove, claim-next and permits: they commit as the session's
 * setting says (durable unless you changed it).
 *
 * What stays guaranteed after a forgotten lease-only commit: tokens are clock-floored (token-floor.ts), so the
 * claim after a restart mints above the forgotten grant's token (test/adapters/postgres-lease-commit.test.ts),
 * and a fence check reads the row as recovered, so a forgotten grant's holder is refused, never let in beside
 * its successor. And a durable commit flushes the WAL up to its own record, so every lease commit before it
 * is durable too: a forgotten grant is one that no durable write (a fenced write of its holder) followed.
 */
import { InvalidArgumentError } from '../../errors.js';
import { describe } from '../../validate.js';

/** How the lease-only statements (claim, renew, a release that keeps the checkpoint, dequeue) commit. */
export type LeaseCommit = 'durable' | 'fast';

/** `leaseCommit` as given: `'durable'`, `'fast'` or undefined (durable), checked before any I/O. */
export function leaseCommitOf(given: unknown): LeaseCommit {
  if (given === undefined || given === 'durable' || given === 'fast') return given ?? 'durable';
  throw new InvalidArgumentError(`leaseCommit must be 'durable' or 'fast', got ${describe(given)}`);
}

/**
 * The one-row relation a lease statement's final SELECT joins its `pre` to (`FROM ${oneRow(commit)} AS one
 * LEFT JOIN pre ON true`). For `'fast'` it sets `synchronous_commit` off until the end of the statement's
 * transaction (`set_config(..., true)` is SET LOCAL; outside a transaction block that is the statement's own
 * implicit transaction, and the commit reads the setting before it is reset). NOTE: a volatile function in a
 * subquery's target list keeps the subquery from being pulled up or its column dropped, so it runs once per
 * execution, whether or not the statement changes anything (a statement that writes nothing commits nothing).
 */
export function oneRow(commit: LeaseCommit): string {
  return commit === 'durable' ? '(SELECT)' : `(SELECT pg_catalog.set_config('synchronous_commit', 'off', true) AS lease_commit)`;
}
