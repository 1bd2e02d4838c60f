/**
 * The Redis lease store: each Store method is one script (`scripts.ts`) whose reply, the record's
 * pre-image, is judged by the pure transition of the same name, so Redis and the core decide alike.
 */
import type { FencedWriteOutcome, StoreFencedWriteOptions, SubmissionCommand } from '../../fence/operations.js';
import * as transitions from '../../fence/transitions.js';
import type { Transition } from '../../fence/transitions.js';
import type { Fence, LeaseRecord, StoreTime } from '../../fence/types.js';
import { checkFence } from '../../fence/verdict.js';
import { newSecret } from '../../secret.js';
import type { Store } from '../../store.js';
import { InvalidArgumentError } from '../../errors.js';
import { writeRefused } from '../../write-refusal.js';
import { describe, readRequiredOptions } from '../../validate.js';
import { toConnection, type RedisClient } from './connection.js';
import { subscribeTimeoutOf } from '../freed-subscriptions.js';
import { createRedisFreed, type RedisSubscriberOption } from './freed-channel.js';
import { createFreedInterest } from './freed-interest.js';
import { DEFAULT_PREFIX, keyNames } from './keys.js';
import { createRedisList } from './list.js';
import { createRedisItems } from './redis-items.js';
import { PERMIT_CLAIM_SCRIPT, PERMIT_SET_KEY_STATE_SCRIPT } from './permit-scripts.js';
import { createRedisPermits, permitsSetOf } from './redis-permits.js';
import { replayWindowOf } from './replay-window.js';
import {
  assertNoSeparator,
  assertStorable,
  claimArgs,
  fenceArgs,
  floorOf,
  parseLeaseReply,
  stateArgs,
  submissionOf,
  ttlArg,
  waiterIdArgs,
  type LeaseReply,
} from './record.js';
import { CommandRecorder, type RedisWriteContext } from './recorder.js';
import { defineScript, runScript, type Script } from './runner.js';
import * as lua from './scripts.js';
import { FENCED_WRITE_SCRIPT, WRITTEN } from './write-scripts.js';

/** Options of `createRedisStore`. */
export interface RedisStoreOptions {
  /** Your ioredis or node-redis (v5) client, or a `RedisConnection` (see `fromIoredis`, `fromNodeRedis`). */
  readonly client: RedisClient;
  /**
   * Namespace of the adapter's keys (no braces: the lease key provides the hash tag).
   * @default 'leasefence:'
   */
  readonly prefix?: string;
  /**
   * How long the first reply of a fenced write, revoke, checkpoint, recover, remove or key-state change is
   * kept, so that a re-delivery of the same request (ioredis re-sends unanswered commands after a reconnect)
   * returns it instead of applying twice. Replies are kept inside the lease's own record, the last 8 per key
   * (no key per request). A re-delivery arriving after this window, or after 8 newer memoised operations on
   * the same key, is judged afresh: a fenced write whose grant still holds applies again (unless it carries a
   * submission, which its run id answers), a checkpoint is written again, a revoke revokes whatever grant
   * holds then (pass `expectedToken` to prevent that; likewise for `remove`). An integer
   * from 1 to 86,400,000 (one day).
   * @default 300_000
   */
  readonly replayWindowMs?: number;
  /**
   * A connection dedicated to pub/sub, for waiting claims woken at once by a release or revoke: your
   * client's `duplicate()` (ioredis), `await client.duplicate().connect()` (node-redis), or a function
   * that returns one (called when a wait needs it; the store closes that connection once nobody waits).
   * All waits of the store share it, one channel per waited key, subscribed while someone waits. You
   * close a connection you passed at shutdown. Without it the store has no
   * `watchFreed` and waiting claims retry on their schedule only (see docs/waiting.md).
   */
  readonly subscriber?: RedisSubscriberOption;
  /**
   * How long a wait waits for the subscriber connection to confirm its subscription before it gives up
   * on the wake-up (it then retries on its schedule only).
   * @default 2_000
   */
  readonly subscribeTimeoutMs?: number;
}

const SCRIPTS = {
  claim: defineScript('claim', lua.CLAIM_SCRIPT),
  renew: defineScript('renew', lua.RENEW_SCRIPT),
  checkpoint: defineScript('checkpoint', lua.CHECKPOINT_SCRIPT),
  release: defineScript('release', lua.RELEASE_SCRIPT),
  revoke: defineScript('revoke', lua.REVOKE_SCRIPT),
  recover: defineScript('recover', lua.RECOVER_SCRIPT),
  inspect: defineScript('inspect', lua.INSPECT_SCRIPT),
  setKeyState: defineScript('set key state', lua.SET_KEY_STATE_SCRIPT),
  remove: defineScript('remove', lua.REMOVE_SCRIPT),
  dequeue: defineScript('dequeue', lua.DEQUEUE_SCRIPT),
  fencedWrite: defineScript('fenced write', FENCED_WRITE_SCRIPT),
  // NOTE: on a permit key (fence/permits.ts), the same scripts that also enter the permit in its index.
  permitClaim: defineScript('claim', PERMIT_CLAIM_SCRIPT),
  permitSetKeyState: defineScript('set key state', PERMIT_SET_KEY_STATE_SCRIPT),
} as const;

const CLEAR: readonly string[] = ['clear'];
const NO_ARGS: string[] = [];
const NO_SUBMISSION: readonly string[] = [''];

/**
 * The longest hold a script is given: 2^52 ms, so that now + hold stays an exact Lua number (the stored
 * hold is written with `string.format('%d', ...)`).
 */
const MAX_HOLD_MS = 2 ** 52;

/** Checks a hold in ms (release `holdMs`, setKeyState `holdMs`) before any I/O and writes it as an argument. */
function holdArg(what: string, holdMs: unknown): string {
  if (typeof holdMs !== 'number' || !Number.isInteger(holdMs) || holdMs < 0 || holdMs > MAX_HOLD_MS)
    throw new InvalidArgumentError(`${what} must be an integer number of milliseconds from 0 to 2^52, got ${describe(holdMs)}`);
  return String(holdMs);
}

/** A release's extra arguments (see RELEASE_SCRIPT): the checkpoint decision, then the hold. */
function releaseArgs(checkpointJson: string | null | undefined, holdMs: number | undefined): readonly string[] | undefined {
  if (holdMs === undefined) return checkpointJson === undefined ? undefined : checkpointJson === null ? CLEAR : ['set', checkpointJson];
  const hold = holdArg('release holdMs', holdMs);
  return checkpointJson === undefined ? ['keep', '', hold] : checkpointJson === null ? ['clear', '', hold] : ['set', checkpointJson, hold];
}

/** A fenced write's submission as script arguments (see START): run id, digest, receipt ('' = none); `[]` for none. */
function submissionArgs(submission: SubmissionCommand | undefined): readonly string[] {
  if (submission === undefined) return NO_ARGS;
  const { runId, digest, receiptJson } = submission;
  if (typeof runId !== 'string' || runId === '')
    throw new InvalidArgumentError(`a submission's run id must be a non-empty string, got ${describe(runId)}`);
  assertNoSeparator('submission run id', runId);
  assertStorable('submission run id', runId);
  if (typeof digest !== 'string' || !/^[0-9a-f]{64}$/.test(digest))
    throw new InvalidArgumentError(`a submission's digest must be SHA-256 hex (64 characters), got ${describe(digest)}`);
  assertNoSeparator('submission receipt', receiptJson);
  assertStorable('submission receipt', receiptJson);
  return [runId, digest, receiptJson ?? ''];
}

/**
 * Checks that the script changed the record exactly when the pure core says the transition changes it.
 * A mismatch is a bug in a script: report it loudly rather than return an outcome the store may not hold.
 */
function agree<O>(script: Script, reply: LeaseReply, transition: Transition<O>): O {
  if (transition.changed !== reply.applied) {
    throw new Error(
      `leasefence redis: the ${script.name} script ${reply.applied ? 'applied' : 'refused'} a change that the pure core ` +
        `${transition.changed ? 'makes' : 'refuses'} (outcome ${JSON.stringify(transition.outcome, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))}); this is a bug`,
    );
  }
  return transition.outcome;
}

/**
 * A fenced write the script did not let through, judged by the core on the replied pre-image: the fence's
 * refusal, or with a submission whose run id the script found (at `REPLY.extras`), `replayed`,
 * `replay-conflict` or the fence's refusal (`transitions.checkSubmission`). The recorded commands' replies
 * are rejected: none ran.
 */
function refusedWrite<T>(
  recorder: CommandRecorder,
  reply: LeaseReply,
  fence: Fence,
  submission: SubmissionCommand | undefined,
): FencedWriteOutcome<T> {
  const { record, now, raw } = reply;
  if (submission === undefined) {
    const verdict = checkFence(record, fence, now);
    if (verdict.ok) throw new Error('leasefence redis: the fenced write script refused a fence the pure core accepts; this is a bug');
    recorder.refuse(verdict);
    return verdict;
  }
  const found = raw[lua.REPLY.extras];
  const withFound =
    record !== null && typeof found === 'string' ? { ...record, submissions: [submissionOf(submission.runId, found)] } : record;
  const outcome = transitions.checkSubmission(withFound, fence, submission, now);
  if (outcome === null)
    throw new Error('leasefence redis: the fenced write script refused a submission the pure core accepts; this is a bug');
  if (outcome.reason === 'replayed' || outcome.reason === 'replay-conflict') {
    recorder.fail(
      new Error(`leasefence redis: the write's commands did not run: its submission's run id was recorded before (${outcome.reason})`),
    );
  } else recorder.refuse(outcome);
  return outcome;
}

/** A Redis lease store: the `Store` contract, with a `RedisWriteContext` for fenced writes. */
export type RedisStore = Store<RedisWriteContext>;

/**
 * Creates a lease store on Redis (5 or newer; tested on 7.0). Each operation is one Lua script, one round
 * trip (EVALSHA; plus one EVAL after the server lost its script cache), judged on the server's clock
 * (`TIME`); fenced writes run your Redis commands inside the script that checks the fence.
 *
 * **Tokens** are `max(last token + 1, TIME in microseconds)`, exact decimal strings in Redis and bigints
 * here. So they keep increasing even when redis-server restarts without persistence (or evicts the
 * record, or fails over to a replica that missed it): the next token still exceeds every earlier one,
 * ASSUMING the server clock never goes back and a key is not granted more than once per microsecond (a
 * script takes longer than that). With AOF (`appendfsync always`) the record itself survives restarts.
 * `remove` leaves the key's highest token behind (a tombstone, for the replay window or until `TIME` passes
 * it), so a key removed and claimed again, even within the same microsecond, gets a larger token.
 *
 * **Key state, holds and submissions** (`setKeyState`, claim `expect`, release `holdMs`, fenced writes with a
 * `submission`): one script each, like the rest; the key state and the hold are fields of the record that
 * the hot path does not read, submissions a hash of their own next to it (same hash tag), read only by a
 * fenced write that carries one. A fenced write refuses itself with `tx.refuseUnless` (a condition on your
 * data, judged inside the script after the fence and before any command) or `tx.refuse`: see
 * `RedisWriteContext`.
 *
 * **Fair waiting** (`claim` with `queue` / `jumpQueue`, `dequeue`): a key's queue of waiting claims is one more field
 * of its record (`waiters`, absent when nobody waits), judged and written by the claim's own script; a dequeue that
 * leaves the key to the next waiter publishes on the freed channel as a release does. Claim-next and `acquirePermit`
 * do not consult a key's queue (they jump it) and keep it.
 *
 * **Redis Cluster**: a lease's keys share the slot of its hash tag; put your fenced-write keys there
 * too with `hashTagOf(key)` (see `keys.ts`).
 *
 * **Claim-next** (`addItems`, `removeItems`, `claimNext`): a set `S` is one slot, a sorted set of its items by
 * the time each became claimable; an item key of `S` must carry `S` as its hash tag (`{S}:item-1`), or it is
 * refused before any I/O (see `redis-items.ts`).
 *
 * **Semaphores** (`acquirePermit`): permit i of semaphore `N` is the ordinary lease key `{N}:permit-<i>`, and the
 * semaphore keeps a set of its permits' indexes, `{N}:permits`: all in the slot of `{N}`. One script per acquire
 * reads every permit of the semaphore and grants one (see `permit-scripts.ts`); every other operation on a permit is
 * the ordinary one on its key.
 *
 * **Lost replies**: every operation is safe to deliver twice (ioredis re-sends unanswered commands after
 * a reconnect): a re-delivered claim is recognised by its secret; fenced writes, revokes, removes, key-state
 * changes, checkpoints and recovers by a request id whose first reply is kept in the lease record (the last 8
 * per key, within `replayWindowMs`; a removed record's tombstone keeps them), a submission also by its run id
 * after that; the rest compare before they change anything.
 *
 * **Secrets** are stored as their SHA1 (hashed inside the script): reading the record, a dump, a replica
 * (which receives the script's effects) or its MONITOR does not let anyone act as the holder, and no reply
 * carries a stored secret or hash. MONITOR on the primary itself still shows each command's arguments,
 * the presented secret among them: restrict it (ACL) to operators you would trust with the leases.
 *
 * **Fenced writes** are all or nothing as far as Redis can tell before running them (see `RedisWriteContext`
 * and `RedisCommandError`): the callback finishes (an `async` one is awaited) before one script checks
 * the fence, checks every command, runs them and saves the checkpoint you pass. A reply lost for good
 * is an `OutcomeUnknownError`; a command that could not be sent, a `StoreUnavailableError`.
 *
 * ```ts
 * import { Redis } from 'ioredis';
 * import { createLeases } from 'leasefence';
 * import { createRedisStore, hashTagOf } from 'leasefence/redis';
 *
 * const leases = createLeases(createRedisStore({ client: new Redis(url) }), { holder: 'worker-1' });
 * const lease = await leases.claimOrThrow('job:42');
 * await leases.fencedWriteOrThrow(lease, (tx) => tx.call('SET', `${hashTagOf('job:42')}:result`, 'done'));
 * ```
 */
export function createRedisStore(given: RedisStoreOptions): RedisStore {
  const options = readRequiredOptions('createRedisStore options', given, [
    'client',
    'prefix',
    'replayWindowMs',
    'subscriber',
    'subscribeTimeoutMs',
  ]) as RedisStoreOptions;
  if (options.subscribeTimeoutMs !== undefined) subscribeTimeoutOf(options.subscribeTimeoutMs);
  const connection = toConnection(options.client);
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const names = keyNames(prefix);
  const replayWindowMs = replayWindowOf(options.replayWindowMs);
  const interest = createFreedInterest(connection);
  const watchFreed =
    options.subscriber === undefined
      ? undefined
      : createRedisFreed({ subscriber: options.subscriber, subscribeTimeoutMs: subscribeTimeoutOf(options.subscribeTimeoutMs) });

  /**
   * Runs a fenced operation's script (ARGV: the fence, then `extra`) and judges its pre-image with the
   * operation's pure transition.
   */
  const fenced = async <C extends { readonly fence: Fence }, O>(
    script: Script,
    command: C,
    extra: readonly string[] | undefined,
    transition: (record: LeaseRecord | null, command: C, now: StoreTime) => Transition<O>,
    memoised = false,
  ): Promise<O> => {
    const { fence } = command;
    const record = names.record(fence.key, 'lease');
    const args = fenceArgs(fence, memoised ? [newSecret(), String(replayWindowMs), ...(extra ?? [])] : extra);
    const reply = parseLeaseReply(await runScript(connection, script, [record], args), fence.key, fence.secret);
    return agree(script, reply, transition(reply.record, command, reply.now));
  };

  return {
    id: `redis:${prefix}`,
    async claim(command) {
      const { key, secret } = command;
      const args = claimArgs(
        secret,
        command.holder,
        command.runId,
        command.ttlMs,
        command.attributes,
        command.recovering,
        command.expect,
        command.queue,
        command.jumpQueue,
      );
      const permits = permitsSetOf(prefix, key);
      const sent =
        permits === null
          ? runScript(connection, SCRIPTS.claim, [names.record(key, 'lease')], args)
          : runScript(connection, SCRIPTS.permitClaim, [names.record(key, 'lease'), permits], args);
      const reply = parseLeaseReply(await sent, key, secret, 'free', true);
      const { record, now } = reply;
      const grant = record?.grant;
      if (record !== null && grant !== undefined && grant !== null && grant.secret === secret && !reply.applied) {
        // NOTE: a re-delivery of this very claim (same secret) after its reply was lost: report the grant it made.
        const { token, acquiredAt, expiresAt } = grant;
        return { ok: true, key, token, acquiredAt, expiresAt, previous: record.ending, checkpoint: record.checkpoint, now };
      }
      // NOTE: over a removed record the script minted above its floor (the highest token it issued), as the core must.
      const removed = reply.raw[lua.REPLY.extras];
      const floor = typeof removed === 'string' && BigInt(removed) + 1n > floorOf(reply) ? BigInt(removed) + 1n : floorOf(reply);
      return agree(SCRIPTS.claim, reply, transitions.claim(record, command, now, floor));
    },

    renew: (command) => fenced(SCRIPTS.renew, command, [ttlArg(command.ttlMs)], transitions.renew),

    // NOTE: checkpoint and recover are memoised per request: see CHECKPOINT_SCRIPT.
    checkpoint: (command) => fenced(SCRIPTS.checkpoint, command, [command.json], transitions.checkpoint, true),

    // NOTE: async, so that a bad holdMs rejects (before any I/O) rather than throws.
    release: async (command) => fenced(SCRIPTS.release, command, releaseArgs(command.checkpointJson, command.holdMs), transitions.release),

    recover: (command) => fenced(SCRIPTS.recover, command, [command.action], transitions.recover, true),

    async revoke(command) {
      const { key } = command;
      assertNoSeparator('revoked by', command.by);
      const args = [
        command.reason,
        command.by,
        command.requireRecovery ? '1' : '0',
        command.expectedToken?.toString() ?? '',
        newSecret(),
        String(replayWindowMs),
      ];
      const reply = parseLeaseReply(await runScript(connection, SCRIPTS.revoke, [names.record(key, 'lease')], args), key, '');
      return agree(SCRIPTS.revoke, reply, transitions.revoke(reply.record, command, reply.now));
    },

    async setKeyState(command) {
      const { key } = command;
      assertNoSeparator('state changed by', command.by);
      assertStorable('state changed by', command.by);
      const hold = command.holdMs === undefined ? 'k' : command.holdMs === null ? 'c' : holdArg('setKeyState holdMs', command.holdMs);
      const args = [command.by, hold, newSecret(), String(replayWindowMs), ...stateArgs(command.values)];
      const permits = permitsSetOf(prefix, key);
      const sent =
        permits === null
          ? runScript(connection, SCRIPTS.setKeyState, [names.record(key, 'lease')], args)
          : runScript(connection, SCRIPTS.permitSetKeyState, [names.record(key, 'lease'), permits], args);
      const reply = parseLeaseReply(await sent, key, '');
      return agree(SCRIPTS.setKeyState, reply, transitions.setKeyState(reply.record, command, reply.now));
    },

    async remove(command) {
      const { key } = command;
      const args = [command.force ? '1' : '', command.expectedToken?.toString() ?? '', newSecret(), String(replayWindowMs)];
      const keys = [names.record(key, 'lease'), names.submissions(key)];
      const reply = parseLeaseReply(await runScript(connection, SCRIPTS.remove, keys, args), key, '');
      return agree(SCRIPTS.remove, reply, transitions.remove(reply.record, command, reply.now));
    },

    async inspect(key) {
      const reply = parseLeaseReply(
        await runScript(connection, SCRIPTS.inspect, [names.record(key, 'lease')], NO_ARGS),
        key,
        '',
        'held',
        true,
      );
      return transitions.inspect(reply.record, key, reply.now);
    },

    // NOTE: a dequeue that leaves the key to the next waiter publishes on the freed channel in its script (DEQUEUE_SCRIPT).
    async dequeue(command) {
      const { key } = command;
      const args = waiterIdArgs(command.waiterIds) as string[];
      const reply = parseLeaseReply(
        await runScript(connection, SCRIPTS.dequeue, [names.record(key, 'lease')], args),
        key,
        '',
        'held',
        true,
      );
      return agree(SCRIPTS.dequeue, reply, transitions.dequeue(reply.record, command, reply.now));
    },

    list: createRedisList(options.client, connection, prefix),

    ...createRedisItems({ connection, prefix, names, replayWindowMs }),

    ...createRedisPermits({ connection, prefix, names }),

    ...(watchFreed === undefined
      ? {}
      : {
          // NOTE: subscribed first, then marked: a release publishes only while the record says someone watches
          // (freed-interest.ts), and the watch resolves only once both are done.
          watchFreed: async (key: string, onFreed: () => void) => {
            const record = names.record(key, 'lease');
            const unsubscribe = await watchFreed(record, onFreed);
            let unmark: () => void;
            try {
              unmark = await interest.mark(record);
            } catch (error) {
              unsubscribe();
              throw error;
            }
            return () => {
              unmark();
              unsubscribe();
            };
          },
          // NOTE: the same channel: while a holder holds, only what ends its grant publishes on it (freed-channel.ts):
          // REVOKE, SET_KEY_STATE changing a value, REMOVE with force.
          watchRevoked: (key: string, onRevoked: () => void) => watchFreed(names.record(key, 'lease'), onRevoked),
        }),

    async fencedWrite<T>(
      fence: Fence,
      write: (context: RedisWriteContext) => T | Promise<T>,
      writeOptions: StoreFencedWriteOptions = {},
    ): Promise<FencedWriteOutcome<T>> {
      const { checkpointJson, submission } = writeOptions;
      const recorder = new CommandRecorder(true);
      const submitted = submissionArgs(submission);
      const fenceArguments = fenceArgs(fence, [newSecret(), String(replayWindowMs), checkpointJson ?? '']);
      const recording = recorder.run(write, fence.token);
      // NOTE: a synchronous callback's recording is not a promise: no await, no extra microtasks.
      const { value, keys: declared, args, conditions } = recording instanceof Promise ? await recording : recording;
      // NOTE: the submission and the conditions follow the commands, and only when there is one or the other:
      // the hot path's ARGV is what it was (see START in write-scripts.ts).
      if (submitted.length > 0 || conditions.length > 0) {
        for (const arg of submitted.length > 0 ? submitted : NO_SUBMISSION) args.push(arg);
        for (const arg of conditions) args.push(arg);
      }
      const record = names.record(fence.key, 'lease');
      const keys = submission === undefined ? [record, ...declared] : [record, names.submissions(fence.key), ...declared];
      let reply: LeaseReply;
      try {
        for (const arg of args) fenceArguments.push(arg);
        reply = parseLeaseReply(await runScript(connection, SCRIPTS.fencedWrite, keys, fenceArguments), fence.key, fence.secret);
      } catch (error) {
        recorder.fail(error);
        throw error;
      }
      const { raw, now } = reply;
      if (!reply.applied) {
        // NOTE: an applied write replies no pre-image (its script proved the fence); a refusal does, and the core explains it.
        return refusedWrite(recorder, reply, fence, submission);
      }
      const refused = raw[WRITTEN.refused];
      if (refused !== undefined && refused !== null) {
        const refusal = recorder.refusal(refused);
        recorder.refused(refusal.code, refusal.detail);
        return writeRefused(fence, refusal, now);
      }
      const failure = recorder.settle(raw[WRITTEN.replies], raw[WRITTEN.failed], raw[WRITTEN.error], raw[WRITTEN.applied]);
      if (failure !== null) throw failure;
      const checkpoint = checkpointJson === undefined ? null : { json: checkpointJson, token: fence.token, writtenAt: now };
      if (submission === undefined) return { ok: true, value: await value, token: fence.token, checkpoint, now };
      const recorded = transitions.recordSubmission(transitions.emptyRecord(fence.key), fence, submission, now).submission;
      return { ok: true, value: await value, token: fence.token, checkpoint, submission: recorded, now };
    },
  };
}
