/**
 * THE boundary between leasefence and a storage backend. Adapters (memory, Postgres, Redis, or your own)
 * implement `Store`; `leases.ts` validates input and calls it; `fence/` defines what every method decides.
 *
 * ## The contract every adapter keeps
 * - **Atomic.** Each method is applied atomically in the store: no other operation on the same key can
 *   observe or interleave with a half-applied one. A fenced write's check and the user's write commit
 *   together or not at all.
 * - **One round trip.** Each method costs one request/response to the backend (one SQL statement, one
 *   Lua script), except `fencedWrite` in a Postgres transaction, which is one transaction.
 * - **The store's clock.** "Now" is the backend's clock at the moment of applying (Postgres
 *   `clock_timestamp()`, Redis `TIME` inside the script, an injected clock in memory), never the caller's.
 *   Every outcome reports that `now`. Expiry is strict: at `now === expiresAt` a grant is expired.
 * - **Same decisions as the pure core.** The outcome of each method equals what the pure transition of the
 *   same name in `fence/transitions.ts` returns for the record as it was at apply time. Refusals carry
 *   the expected-vs-found detail of `fence/verdict.ts#checkFence`. The conformance suite checks this.
 * - **Tokens never go backwards.** Per key, each grant's token is greater than every token the store ever
 *   issued for that key, across release, revoke, expiry, deletion of the holder and restart of the
 *   process. Across a restart of the backend, as far as the backend keeps data (adapters document how).
 * - **Input is already valid.** `leases.ts` validates keys, TTLs, attributes and checkpoint JSON before any
 *   call; adapters still pass every value as a bind parameter / script argument, never spliced into code.
 * - **Failures are typed.** A backend that cannot be reached before sending throws
 *   `StoreUnavailableError` (nothing was applied); a request that may have been applied but whose reply
 *   was lost throws `OutcomeUnknownError`. Every operation is safe to deliver twice (a replay of the
 *   same command with the same secret decides the same way or changes nothing).
 */
import type {
  CheckpointCommand,
  CheckpointOutcome,
  ClaimCommand,
  StoreClaimOutcome,
  StoreFencedWriteOptions,
  FencedWriteOutcome,
  StoreInspection,
  RecoverCommand,
  RecoverOutcome,
  ReleaseCommand,
  ReleaseOutcome,
  RenewCommand,
  RenewOutcome,
  RemoveCommand,
  RemoveOutcome,
  RevokeCommand,
  RevokeOutcome,
  SetKeyStateCommand,
  SetKeyStateOutcome,
  DequeueCommand,
  DequeueOutcome,
} from './fence/operations.js';
import type {
  AddItemsCommand,
  AddItemsOutcome,
  ClaimNextCommand,
  ClaimNextOutcome,
  RemoveItemsCommand,
  RemoveItemsOutcome,
} from './fence/claim-next.js';
import type { AcquirePermitCommand, AcquirePermitOutcome } from './fence/permits.js';
import type { Fence } from './fence/types.js';
import type { StoreListPage, StoreListQuery } from './list.js';

/**
 * A lease store. `WriteContext` is what a fenced write's callback receives: the memory store gives the
 * grant's token and the store's now, the Postgres store a transaction-bound client, the Redis store a
 * command recorder whose commands run inside the fence-checking script.
 */
export interface Store<WriteContext = unknown> {
  /**
   * Identifies the backend and namespace (for example `postgres:leasefence_leases`), so that a lease
   * handle from one store is refused by another before any I/O.
   */
  readonly id: string;

  /** Grants the key if it is new, released, revoked or expired at the store's now; mints the next token atomically. */
  claim(command: ClaimCommand): Promise<StoreClaimOutcome>;

  /** Extends the current live grant to `now + ttlMs`. A stale, ended or expired grant changes nothing. */
  renew(command: RenewCommand): Promise<RenewOutcome>;

  /** Saves the grant's progress (JSON text), stamped with its token, if the fence holds. */
  checkpoint(command: CheckpointCommand): Promise<CheckpointOutcome>;

  /**
   * Runs `write` under the fence: the write is applied only if the grant is current at the store's
   * clock, atomically with that check. When the fence does not hold, nothing is applied and (where the
   * adapter can tell before running it) `write` is not called. With `options.checkpointJson`, the
   * checkpoint is saved (as `checkpoint` would, resolving a pending recovery) in the same atomic step:
   * the write and the checkpoint both apply or neither does. With `options.submission`, the replay lookup
   * (`transitions.checkSubmission`) comes before the fence and the submission is recorded in the same atomic
   * step (`transitions.recordSubmission`). A callback that refuses itself (it throws `WriteRefusedSignal`,
   * which the store's write context's `refuse` does) applies nothing and is answered `write-refused`.
   */
  fencedWrite<T>(
    fence: Fence,
    write: (context: WriteContext) => T | Promise<T>,
    options?: StoreFencedWriteOptions,
  ): Promise<FencedWriteOutcome<T>>;

  /** Ends the current grant; idempotent for the same grant; a stale grant cannot release a newer one. */
  release(command: ReleaseCommand): Promise<ReleaseOutcome>;

  /** An operator's force-release: ends the current grant (live or expired) and moves the token on. */
  revoke(command: RevokeCommand): Promise<RevokeOutcome>;

  /** The current grant resolves the inherited checkpoint: resume (adopt) or discard. */
  recover(command: RecoverCommand): Promise<RecoverOutcome>;

  /**
   * Sets values of the key's state (and its hold), needing no lease; a change of any value ends the grant that
   * holds the key (`transitions.setKeyState`). Tells release watchers when it ended a grant.
   */
  setKeyState(command: SetKeyStateCommand): Promise<SetKeyStateOutcome>;

  /**
   * An operator deletes the key's record (`transitions.remove`). Tokens minted after stay above every token of
   * the removed record: the store's token floor must outlive records (a clock floor, or a store-wide counter).
   * Tells release watchers.
   */
  remove(command: RemoveCommand): Promise<RemoveOutcome>;

  /**
   * Takes waiters that stopped waiting out of the key's queue (`transitions.dequeue`); best effort for the caller
   * (their entries expire anyway). Tells release watchers when the key is left to the next waiter (`freed`).
   */
  dequeue(command: DequeueCommand): Promise<DequeueOutcome>;

  /** Everything about the key except the secret, with the store's now. */
  inspect(key: string): Promise<StoreInspection>;

  /**
   * OPTIONAL, with `removeItems` and `claimNext` (a store offers all three or none; see `fence/claim-next.ts` and
   * docs/design/claim-next.md): adds keys to a named set of items, due `notBeforeMs` after the store's now. A key
   * is an item of at most one set (`in-another-set`, nothing added); adding an item again changes nothing.
   */
  addItems?(command: AddItemsCommand): Promise<AddItemsOutcome>;

  /** OPTIONAL (claim-next): takes keys out of a set; their records (grants, state, checkpoints) stay as they are. */
  removeItems?(command: RemoveItemsCommand): Promise<RemoveItemsOutcome>;

  /**
   * OPTIONAL (claim-next): in one atomic step, grants the set's claimable item (`fence/claim-next.ts#claimNext`)
   * that has been available longest (`availableSince`, then key), skipping live grants, keys blocked for
   * recovery, held back, not yet due, busy in another operation or whose state does not match `expect`; `idle`
   * (with the earliest time one becomes claimable, if known) when none qualifies. An expired grant is taken over
   * (`onExpired: 'take-over'`) or taken over with the key requiring recovery (`'record-first'`). A store keeping an
   * index of availability must keep it equal to `availableSince` of each item's record: it updates the index in
   * every operation that changes a record of an item key or an item (expiry needs no write). Delivered twice with
   * the same secret, it answers the grant it made. A server store reads O(limit) index entries per call, never
   * every key (the memory store, which keeps no index, judges every item of the set).
   */
  claimNext?(command: ClaimNextCommand): Promise<ClaimNextOutcome>;

  /**
   * OPTIONAL (semaphores, see `fence/permits.ts`): in one atomic step over every permit record of
   * `command.semaphore` (the keys `permitKey(semaphore, index)`), grants a permit when fewer than `command.limit`
   * are live (`fence/permits.ts#acquirePermit`): the free permit up to the limit available longest, with a token
   * above every token of every permit of the semaphore; `full` otherwise. Never more than `limit` live grants of
   * the semaphore result from acquires with that limit, however many run at once (a store serialises the acquires
   * of one semaphore, or checks the count under a lock). Every other operation on a permit is the ordinary one on
   * its key. Delivered twice with the same secret, it answers the grant it made. Permits are not items of any set.
   */
  acquirePermit?(command: AcquirePermitCommand): Promise<AcquirePermitOutcome>;

  /**
   * OPTIONAL (operators' listing, see `list.ts`): the records whose key starts with `query.prefix`, from
   * where `query.cursor` stopped, examining at most `query.limit` records (O(limit) per call). Every key
   * that exists throughout a listing is returned once; each returned lease was true at some moment of its
   * call. Never reads or returns secrets.
   */
  list?(query: StoreListQuery): Promise<StoreListPage>;

  /**
   * OPTIONAL (waiting claims): calls `onFreed` whenever a release or a revoke of `key` commits in the
   * store, so a waiting claim retries at once instead of at its next scheduled attempt. Expiry sends no
   * message: waiters schedule that attempt from the `expiresAt` and `now` a `held` refusal carries.
   *
   * - The returned promise resolves once the subscription is live: a release that commits after it
   *   resolves is heard (waiters subscribe first, then claim, so no release falls in between).
   * - Best effort: a message lost to a reconnect or a dropped notification connection only delays a
   *   waiter to its next scheduled attempt; correctness never depends on a message.
   * - The resolved function ends this subscription: idempotent, synchronous for the caller, and it leaves
   *   nothing behind (no listener; the backend subscription is dropped a second after the key's last one
   *   ends, so runs one after another share it).
   * - A store without a notification channel (for example a Redis store created without a subscriber
   *   connection) leaves this method out; waiting then relies on scheduled attempts alone.
   */
  watchFreed?(key: string, onFreed: () => void): Promise<() => void>;

  /**
   * OPTIONAL (revoke notices for holders): calls `onRevoked` when a message says a revoke of `key` may have
   * committed, so a running `withLease` checks its grant at once (one renew) instead of at its next
   * renewal. A hint, never proof: a message may be forged (notification channels are unauthenticated),
   * late, or about another grant of the key; the holder acts only on what the store answers. Live once the
   * promise resolves; the resolved function ends it (idempotent, synchronous). Unlike `watchFreed` it tells
   * the store of no waiter (a Postgres release stays silent); a store may tell releases too.
   */
  watchRevoked?(key: string, onRevoked: () => void): Promise<() => void>;
}

/** The fenced-write context type of a store. */
export type WriteContextOf<S> = S extends Store<infer C> ? C : never;
