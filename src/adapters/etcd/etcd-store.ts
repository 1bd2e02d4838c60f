/**
 * The etcd lease store: one JSON record per lease key (with its key state and hold), changed only by
 * compare-and-swap transactions. The key's submissions live in a key of their own (see `record.ts`).
 *
 * ## Atomicity contract
 * - **One decision, one transaction.** etcd has no server-side scripting, so an operation is a READ of the
 *   lease record (one linearizable read) and, when the pure transition of the same name in
 *   `fence/transitions.ts` changes the record, ONE transaction that compares the record's `mod_revision`
 *   (and its live key's, see below) with the ones read and puts the new record (plus, for a fenced
 *   write, your puts and deletes; with a submission, the submissions key too: read by the same read, its mod
 *   revision compared and its new value put by the same transaction; no other operation reads or sends it).
 *   The compare makes the read and the write one atomic step: the transaction applies only if no other
 *   change of the key committed in between, so the outcome is exactly what the core decides for the
 *   record as it was when the change committed.
 * - **Round trips.** A refusal (also a fenced write's callback refusing itself, `refuse`: nothing is sent)
 *   or an `inspect` costs one round trip (the read: one linearizable read-only
 *   transaction of the record and its live key, true at a moment within the call). A change costs two
 *   (read + transaction; a waiting claim's refusal is a change: it queues or renews its waiters), and a claim or renew of a grant with a TTL one more (the etcd lease it gets),
 *   as does a `remove` (the etcd lease of its removal mark). `setKeyState` that ends a grant deletes the
 *   grant's live key in its transaction and revokes the etcd lease after, as a release or revoke does.
 *   When the compare loses (another change of the same key committed in between), the store reads again and decides afresh on
 *   the fresh record: one more read + transaction per lost compare, at most `MAX_ATTEMPTS` in all (then
 *   `OutcomeUnknownError`). A retry is still one decision on one state; nothing is applied by a lost compare.
 * - **Delivered twice.** The etcd3 client re-sends a call that failed on the network, so a transaction may
 *   commit although its caller saw a failure and the re-sent copy's compare lost. Each transaction puts
 *   its own id into the record (the last `APPLIED_KEPT`); after a lost compare the store finds its id in
 *   the record it reads again and returns the outcome of that transaction instead of deciding twice. When
 *   the record changed more than `APPLIED_KEPT` times before that read, so its id may have been pushed
 *   out, the store cannot tell and throws `OutcomeUnknownError` rather than decide again (a refusal there
 *   would deny a change that applied: the chaos run of seed 453983875 found one).
 *
 * ## Now and expiry
 * etcd's transactions have no clock. The store's now is, per key, `max(clock(), stamp)`: the deciding
 * client's clock (`options.clock`, the host's wall clock by default), never earlier than `stamp`, the now
 * of the record's last change (written by the transaction that made it), so a key's now never goes back
 * whichever client decides. A grant is expired at the FIRST of:
 * - that now reaching its `expiresAt` (strict: at `now === expiresAt` it is expired, as on every store);
 * - etcd's own timer: each grant with a TTL has a live key on an etcd lease of `ceil(ttl / 1 s) + 1`
 *   seconds (see `grant-lease.ts`); once etcd's leader has deleted it, the grant counts as expired (the
 *   now reported is then at least its `expiresAt`), whatever any client's clock says. Each transaction
 *   also compares the live key's mod revision, so an etcd expiry between a read and its commit makes the
 *   commit lose its compare.
 * WHO may write never depends on clocks: a takeover changes the record, so a write or renew decided on the
 * old record loses its compare. What the clocks decide is WHEN a grant counts as expired: a client whose
 * clock lags by `d` may act under a grant others already judge expired for at most `min(d, 2 s + one
 * round trip)` (etcd's bound: the lease starts after the decision and is rounded up to whole seconds + 1), and only while nobody took the key over. A new etcd leader extends every
 * etcd lease by its TTL: during an election that bound loosens; takeover never waits for it (the clock
 * rule expires grants by itself), it only waits for a leader to accept the claim.
 *
 * ## Tokens
 * A claim mints `max(previous + 1, R + 1)`, where `R` is the store revision its read saw (the read's
 * response header). The transaction that commits the grant commits at a revision > R, and any later claim
 * of the key reads after that commit, so its `R' >= ` that revision and its token is larger. etcd's revision
 * is Raft-ordered: it never goes back across leader changes, member loss or restarts (as long as the
 * cluster keeps its data), so tokens increase per key even after `remove` (or a record deleted by hand):
 * the floor is the revision, which outlives every record, with no clock floor and no counter kept. A record
 * that `setKeyState` creates starts at token 0; its first claim still mints above the revision. Every token
 * is at most the revision its claim committed at (< 2^63).
 *
 * ## Remove
 * `remove` replaces the record with a removal mark on a short etcd lease (see `record.ts`), deleting the
 * live key and the submissions in the same transaction. The mark keeps the removed record's `stamp` and
 * transaction ids: a remove delivered twice, or one that lost its compare to another remove, is then decided
 * as above (the ids say whether it applied), and the key's now does not go back. etcd deletes the mark
 * `REMOVAL_MARK_SECONDS` later; a claim or `setKeyState` in between puts the new record over it.
 */
import { OutcomeUnknownError, StoreUnavailableError } from '../../errors.js';
import type { DequeueOutcome, FencedWriteOutcome, StoreClaimOutcome, StoreFencedWriteOptions } from '../../fence/operations.js';
import * as transitions from '../../fence/transitions.js';
import type { Transition } from '../../fence/transitions.js';
import type { Fence, LeaseRecord, StoreTime, SubmissionRecord } from '../../fence/types.js';
import { checkFence } from '../../fence/verdict.js';
import { loggableCause } from '../../redact.js';
import { newSecret } from '../../secret.js';
import type { Store } from '../../store.js';
import { WriteRefusedSignal, writeRefused } from '../../write-refusal.js';
import type { EtcdCompare, EtcdRequestOp } from './client.js';
import { readFailure, txnFailure } from './failures.js';
import { createEtcdFreed } from './freed-watch.js';
import { createEtcdList } from './list.js';
import { liveKeyOf, liveKeyOperations, nowWithEtcdExpiry, type LiveKey } from './grant-lease.js';
import { hashedClaim, hashedFence } from './secret-hash.js';
import {
  APPLIED_KEPT,
  decodeRecord,
  decodeSubmissions,
  encodeRecord,
  encodeRemovalMark,
  encodeSubmissions,
  REMOVAL_MARK_SECONDS,
  type StoredRecord,
} from './record.js';
import { readEtcdStoreOptions, type EtcdStoreOptions } from './options.js';
import { WriteRecorder, type EtcdWriteContext } from './write-context.js';

/** How many read + compare-and-swap rounds one operation may take before it gives up. */
export const MAX_ATTEMPTS = 32;

// NOTE: the numbers of etcd's `Compare.CompareTarget.MOD` and `Compare.CompareResult.EQUAL`.
const MOD_REVISION = 2;
const EQUAL = 0;

/**
 * Whether the record now (`applied`: its last ids) shows that a transaction decided on a record whose last ids
 * were `after` did NOT apply (its id absent from `applied`). Such a transaction compares the record's mod
 * revision, so if it applied it was the very next change of the record, and its id would follow `after`'s
 * last one. Proven when the change after that id (or, from a record with no ids, the first one) is another
 * transaction's, or when no change carrying an id came since. Unknown when the ids kept no longer reach back
 * to `after` (more than `APPLIED_KEPT` changes since): the id may have been pushed out.
 */
function provedNotApplied(after: readonly string[], applied: readonly string[]): boolean {
  const last = after.at(-1);
  if (last === undefined) return applied.length < APPLIED_KEPT;
  return applied.includes(last);
}

/** The lease record as read, with the revisions the store needs to change it. */
interface ReadRecord {
  readonly stored: StoredRecord;
  /** The record key's mod revision ('0': absent), compared by the transaction. */
  readonly modRevision: string;
  /** The grant's live key (see `grant-lease.ts`). */
  readonly live: LiveKey;
  /** The store revision the read saw. */
  readonly revision: bigint;
  /** The submissions key's mod revision ('0': absent), when the read included it (compared then). */
  readonly submissionsRevision: string | null;
}

/**
 * What one decision asks the store to write: the new record (`null`: nothing, unless `remove`), the key's
 * submissions (only a fenced write with a submission, whose read included them) and your operations.
 */
interface Decision<O> {
  readonly outcome: O;
  readonly record: LeaseRecord | null;
  /** Remove the record (`transitions.remove`): replaced by its removal mark, its live key and submissions deleted. */
  readonly remove?: true;
  readonly submissions?: readonly SubmissionRecord[];
  readonly operations?: readonly EtcdRequestOp[];
  /** Whether the put frees the key for release watchers, when its grant alone cannot say (record.ts `wake`). */
  readonly wake?: boolean;
}

const decided = <O>({ outcome, changed, record }: Transition<O>): Decision<O> =>
  changed && record === null ? { outcome, record: null, remove: true } : { outcome, record: changed ? record : null };

/**
 * A claim's decision. NOTE: a waiting claim's refusal puts the record with its queue changed and no grant of its own:
 * it must not wake the key's release watchers (they would all claim again, each refusal waking them all once more).
 */
const claimDecided = (transition: Transition<StoreClaimOutcome>): Decision<StoreClaimOutcome> =>
  transition.changed && !transition.outcome.ok ? { ...decided(transition), wake: false } : decided(transition);

/** A dequeue's decision: its put wakes the release watchers exactly when the first waiter left a claimable key. */
const dequeueDecided = (transition: Transition<DequeueOutcome>): Decision<DequeueOutcome> => ({
  ...decided(transition),
  wake: transition.outcome.freed,
});

const FENCE_HOLDS = { ok: true } as const;

/** The etcd lease store. */
export interface EtcdStore extends Store<EtcdWriteContext> {
  /** The key prefix of the lease records (`<prefix>lease/<key>`). */
  readonly prefix: string;
}

/**
 * Creates a lease store on etcd (v3 API; tested on etcd 3.4) with your `etcd3` client: leases whose grants
 * and fenced writes are Raft-replicated, so an acknowledged grant or write survives the loss of any
 * minority of the cluster. See the contract at the top of this file for what now, expiry and tokens mean.
 *
 * Give the client a deadline per call (`defaultCallOptions`, below): without one, a call to a frozen
 * member (a stalled VM, SIGSTOP) waits for ever; with one, it fails (`StoreUnavailableError` on a read,
 * `OutcomeUnknownError` on a transaction) and the etcd3 client retries it on another member. Every
 * outcome is safe to retry.
 *
 * ```ts
 * import { Etcd3 } from 'etcd3';
 * import { createLeases } from 'leasefence';
 * import { createEtcdStore } from 'leasefence/etcd';
 *
 * const client = new Etcd3({
 *   hosts: ['http://10.0.0.1:2379', 'http://10.0.0.2:2379', 'http://10.0.0.3:2379'],
 *   defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + 5_000 }),
 * });
 * const leases = createLeases(createEtcdStore({ client }), { holder: 'worker-1' });
 * const lease = await leases.claimOrThrow('job:42');
 * await leases.fencedWriteOrThrow(lease, (tx) => tx.put('jobs/42/result', 'done'));
 * ```
 */
export function createEtcdStore(options: EtcdStoreOptions): EtcdStore {
  const { client, prefix, clock, subscribeTimeoutMs } = readEtcdStoreOptions(options);
  const { kv } = client;
  const watch = typeof client.watch === 'function' ? client.watch.bind(client) : undefined;
  const prefixBytes = Buffer.from(prefix, 'utf8');
  const recordKey = (key: string): Buffer => Buffer.concat([prefixBytes, Buffer.from(`lease/${key}`, 'utf8')]);

  const liveKey = (key: string): Buffer => Buffer.concat([prefixBytes, Buffer.from(`live/${key}`, 'utf8')]);
  const submissionsKey = (key: string): Buffer => Buffer.concat([prefixBytes, Buffer.from(`submissions/${key}`, 'utf8')]);

  /**
   * The record (or its removal mark, see `record.ts`) and its live key, and with `withSubmissions` its
   * submissions, in one linearizable read-only transaction (all at one revision).
   */
  const read = async (key: string, operation: string, withSubmissions: boolean): Promise<ReadRecord> => {
    let response;
    try {
      response = await kv.txn({
        compare: [],
        success: [
          { request_range: { key: recordKey(key) } },
          { request_range: { key: liveKey(key) } },
          ...(withSubmissions ? [{ request_range: { key: submissionsKey(key) } }] : []),
        ],
        failure: [],
      });
    } catch (error) {
      throw readFailure(error, operation);
    }
    const found = response.responses?.[0]?.response_range?.kvs[0];
    const live = liveKeyOf(response.responses?.[1]?.response_range?.kvs[0]);
    const stored = decodeRecord(key, found?.value);
    const submissions = withSubmissions ? response.responses?.[2]?.response_range?.kvs[0] : undefined;
    return {
      stored:
        submissions === undefined || stored.record === null
          ? stored
          : { ...stored, record: { ...stored.record, submissions: decodeSubmissions(key, submissions.value) } },
      modRevision: found?.mod_revision ?? '0',
      live,
      revision: BigInt(response.header.revision),
      submissionsRevision: withSubmissions ? (submissions?.mod_revision ?? '0') : null,
    };
  };

  /** The key's now as read: the clock, never before the last change, at least the expiry etcd enforced. */
  const nowOf = ({ stored, live }: ReadRecord): StoreTime => nowWithEtcdExpiry(stored.record, live, Math.max(clock(), stored.stamp));

  /**
   * A decision's operations, if the compares of the record's and the live key's mod revisions (and the
   * submissions key's, when the read included it) hold: `true` when it committed.
   */
  const commit = async (key: string, before: ReadRecord, operations: readonly EtcdRequestOp[], operation: string): Promise<boolean> => {
    const compare: EtcdCompare[] = [
      { key: recordKey(key), target: MOD_REVISION, result: EQUAL, mod_revision: before.modRevision },
      { key: liveKey(key), target: MOD_REVISION, result: EQUAL, mod_revision: before.live.modRevision },
    ];
    if (before.submissionsRevision !== null)
      compare.push({ key: submissionsKey(key), target: MOD_REVISION, result: EQUAL, mod_revision: before.submissionsRevision });
    try {
      const response = await kv.txn({ compare, success: [...operations], failure: [] });
      return response.succeeded;
    } catch (error) {
      throw txnFailure(error, operation);
    }
  };

  /** The etcd lease of a removal mark (see `record.ts`). */
  const markLease = async (operation: string): Promise<string> => {
    try {
      return (await client.leaseClient.leaseGrant({ TTL: REMOVAL_MARK_SECONDS })).ID;
    } catch (error) {
      // NOTE: an etcd lease alone changes no record; nothing of the operation was applied.
      throw new StoreUnavailableError(
        `etcd ${operation}: granting the etcd lease of the removal mark failed: ${error instanceof Error ? error.message : String(error)}`,
        { cause: loggableCause(error) },
      );
    }
  };

  /**
   * What a decision sends (decided at `now` on `before`, as transaction `id`) and the etcd lease to revoke
   * once it committed: the record put with its live-key operations (and the submissions, if the decision
   * carries them), or for a remove the record replaced by its removal mark, the live key and submissions deleted.
   */
  const changeOf = async (
    key: string,
    before: ReadRecord,
    decision: Decision<unknown>,
    now: StoreTime,
    id: string,
    operation: string,
  ): Promise<{ operations: EtcdRequestOp[]; staleLease: string | null }> => {
    const { stored } = before;
    if (decision.record === null) {
      const lease = await markLease(operation);
      return {
        operations: [
          { request_put: { key: recordKey(key), value: Buffer.from(encodeRemovalMark(key, now, stored.applied, id), 'utf8'), lease } },
          ...(before.live.modRevision === '0' ? [] : [{ request_delete_range: { key: liveKey(key) } }]),
          { request_delete_range: { key: submissionsKey(key) } },
        ],
        staleLease: before.live.lease === '0' ? null : before.live.lease,
      };
    }
    const live = await liveKeyOperations(client.leaseClient, liveKey(key), stored.record, decision.record, before.live, now, operation);
    const { submissions } = decision;
    return {
      operations: [
        {
          request_put: {
            key: recordKey(key),
            value: Buffer.from(encodeRecord(decision.record, now, stored.applied, id, decision.wake), 'utf8'),
          },
        },
        ...live.operations,
        ...(submissions !== undefined
          ? [{ request_put: { key: submissionsKey(key), value: Buffer.from(encodeSubmissions(key, submissions), 'utf8') } }]
          : stored.record === null
            ? // NOTE: a record created afresh starts with no submissions, also where one was deleted by hand.
              [{ request_delete_range: { key: submissionsKey(key) } }]
            : []),
        ...(decision.operations ?? []),
      ],
      staleLease: live.staleLease,
    };
  };

  /** Ends an etcd lease the live key left; best effort (it runs out by itself anyway). */
  const revokeStale = (lease: string | null): void => {
    if (lease !== null) void client.leaseClient.leaseRevoke({ ID: lease }).catch(() => undefined);
  };

  /**
   * Reads, decides with `decide` at the key's now, and commits the decision under compares of the
   * record's and the live key's mod revisions; on a lost compare, reads and decides again (see the contract).
   */
  const transact = async <O>(
    key: string,
    operation: string,
    decide: (record: LeaseRecord | null, now: StoreTime, floor: bigint) => Decision<O> | Promise<Decision<O>>,
    withSubmissions = false,
  ): Promise<O> => {
    const sent = new Map<string, O>();
    /** The transaction that lost its compare last: its id and the ids of the record it was decided on. */
    let lost: { readonly id: string; readonly after: readonly string[] } | null = null;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt += 1) {
      const before = await read(key, operation, withSubmissions);
      const { stored } = before;
      for (const id of stored.applied) if (sent.has(id)) return sent.get(id) as O;
      if (lost !== null && !provedNotApplied(lost.after, stored.applied)) {
        throw new OutcomeUnknownError(
          `etcd ${operation} on ${JSON.stringify(key)}: a transaction lost its compare (it may have been delivered twice) and the record changed more than ${APPLIED_KEPT} times before it was read again; it may have applied`,
        );
      }
      const now = nowOf(before);
      const decision = await decide(stored.record, now, before.revision + 1n);
      if (decision.record === null && decision.remove !== true) return decision.outcome;
      const id = newSecret();
      const change = await changeOf(key, before, decision, now, id, operation);
      sent.set(id, decision.outcome);
      lost = { id, after: stored.applied };
      if (await commit(key, before, change.operations, operation)) {
        revokeStale(change.staleLease);
        return decision.outcome;
      }
      // NOTE: an etcd lease the lost transaction carried is not revoked: an earlier copy of the transaction
      // (delivered twice) may have committed with it. It runs out by itself.
    }
    throw new OutcomeUnknownError(
      `etcd ${operation}: ${MAX_ATTEMPTS} compare-and-swap rounds on ${JSON.stringify(key)} lost to concurrent changes; the last one may have applied`,
    );
  };

  return {
    id: `etcd:${prefix}`,
    prefix,

    claim: (command) =>
      transact(command.key, 'claim', (record, now, floor) => claimDecided(transitions.claim(record, hashedClaim(command), now, floor))),
    dequeue: (command) => transact(command.key, 'dequeue', (record, now) => dequeueDecided(transitions.dequeue(record, command, now))),
    renew: (command) =>
      transact(command.fence.key, 'renew', (record, now) =>
        decided(transitions.renew(record, { ...command, fence: hashedFence(command.fence) }, now)),
      ),
    checkpoint: (command) =>
      transact(command.fence.key, 'checkpoint', (record, now) =>
        decided(transitions.checkpoint(record, { ...command, fence: hashedFence(command.fence) }, now)),
      ),
    release: (command) =>
      transact(command.fence.key, 'release', (record, now) =>
        decided(transitions.release(record, { ...command, fence: hashedFence(command.fence) }, now)),
      ),
    revoke: (command) => transact(command.key, 'revoke', (record, now) => decided(transitions.revoke(record, command, now))),
    recover: (command) =>
      transact(command.fence.key, 'recover', (record, now) =>
        decided(transitions.recover(record, { ...command, fence: hashedFence(command.fence) }, now)),
      ),

    list: createEtcdList(kv, recordKey(''), liveKey(''), clock),

    ...(watch === undefined ? {} : { watchFreed: createEtcdFreed(watch, recordKey, subscribeTimeoutMs) }),

    setKeyState: (command) =>
      transact(command.key, 'set key state', (record, now) => decided(transitions.setKeyState(record, command, now))),
    remove: (command) => transact(command.key, 'remove', (record, now) => decided(transitions.remove(record, command, now))),

    async inspect(key) {
      const before = await read(key, 'inspect', false);
      return transitions.inspect(before.stored.record, key, nowOf(before));
    },

    fencedWrite<T>(
      fence: Fence,
      write: (context: EtcdWriteContext) => T | Promise<T>,
      { checkpointJson, submission }: StoreFencedWriteOptions = {},
    ): Promise<FencedWriteOutcome<T>> {
      const stored = hashedFence(fence);
      const recorder = new WriteRecorder(prefixBytes);
      let written: { readonly value: T } | null = null;
      const decide = async (record: LeaseRecord | null, now: StoreTime): Promise<Decision<FencedWriteOutcome<T>>> => {
        // NOTE: with a submission, its replay lookup comes before the fence (a retry after the grant ended learns it landed).
        const verdict =
          submission === undefined
            ? checkFence(record, stored, now)
            : (transitions.checkSubmission(record, stored, submission, now) ?? FENCE_HOLDS);
        if (!verdict.ok || record === null) return { outcome: verdict as FencedWriteOutcome<T>, record: null };
        if (written === null) {
          // NOTE: the callback runs once, on the first fence that holds; a lost compare re-sends its operations under a fresh check.
          try {
            written = { value: await write(recorder.context(fence.key, fence.token, now)) };
          } catch (error) {
            if (!(error instanceof WriteRefusedSignal)) throw error;
            // NOTE: nothing was sent: the recorded operations are dropped with the decision.
            return {
              outcome: writeRefused(fence, error, now),
              record: null,
            };
          } finally {
            recorder.close();
          }
        }
        const { value } = written;
        let next = record;
        let checkpoint = null;
        if (checkpointJson !== undefined) {
          // NOTE: the same checkpoint transition at the same now, on the same record: it holds since the fence does.
          const saved = transitions.checkpoint(record, { fence: stored, json: checkpointJson }, now);
          if (!saved.outcome.ok || saved.record === null) return { outcome: saved.outcome as FencedWriteOutcome<T>, record: null };
          next = saved.record;
          checkpoint = saved.outcome.checkpoint;
        }
        if (submission === undefined)
          return { outcome: { ok: true, value, token: fence.token, checkpoint, now }, record: next, operations: recorder.operations };
        const recorded = transitions.recordSubmission(next, stored, submission, now);
        return {
          outcome: { ok: true, value, token: fence.token, checkpoint, submission: recorded.submission, now },
          record: recorded.record,
          submissions: recorded.record.submissions,
          operations: recorder.operations,
        };
      };
      return transact<FencedWriteOutcome<T>>(fence.key, 'fenced write', decide, submission !== undefined);
    },
  };
}
