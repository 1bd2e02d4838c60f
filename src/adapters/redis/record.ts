/**
 * Between Redis and the pure core: fences and claims as script arguments, and a script reply (the record's
 * pre-image and the server's clock) as a `LeaseRecord` the pure transitions can judge. The record layout
 * and the reply shape are described in `scripts.ts`.
 */
import { InvalidArgumentError } from '../../errors.js';
import type {
  CheckpointRecord,
  Ending,
  EndingKind,
  Fence,
  GrantState,
  KeyState,
  LeaseAttributes,
  LeaseRecord,
  QueuedWaiter,
  StateChange,
  StoreTime,
  SubmissionRecord,
} from '../../fence/types.js';
import type { ClaimQueue } from '../../fence/queue.js';
import { REPLY } from './scripts.js';

/** A lease script's reply, decoded. */
export interface LeaseReply {
  /** Whether the script changed the record. */
  readonly applied: boolean;
  /** The server's clock (`TIME`) when the script ran, in epoch ms. */
  readonly now: StoreTime;
  /** The same clock in epoch µs, as decimal text: the token floor (see `floorOf`). */
  readonly clock: string;
  /**
   * The record as it was before the script, as far as the script replied it (see `scripts.ts`): parts it
   * did not reply read as absent, and the grant's secret is replaced (see `recordOf`).
   */
  readonly record: LeaseRecord | null;
  /** The whole reply, for what a script appends after the record (`REPLY.extras`). */
  readonly raw: readonly unknown[];
}

/** The field separator inside stored values (NUL: no name contains it, see `assertNoSeparator`). */
export const SEP = '\u0000';

/** What a script replies in place of a stored secret that matches the presented one (see `scripts.ts`). */
const SECRET_MATCHED = '=';

/** Stands for a stored secret that differs from the presented one (no valid secret contains NUL). */
const OTHER_SECRET = '\u0000other';

const EMPTY: LeaseAttributes = Object.freeze({});
const NO_STATE: KeyState = Object.freeze({});
const NO_SUBMISSIONS: readonly SubmissionRecord[] = Object.freeze([]);
const NO_WAITERS: readonly QueuedWaiter[] = Object.freeze([]);

/** Text Redis would not store exactly (a lone surrogate becomes U+FFFD). */
const UNSTORABLE = /\p{Surrogate}/u;

/** Refuses text Redis would not store exactly (a lone surrogate becomes U+FFFD), before any I/O. */
export function assertStorable(what: string, text: string | null): void {
  if (text !== null && UNSTORABLE.test(text))
    throw new InvalidArgumentError(`${what} contains a lone UTF-16 surrogate, which Redis cannot store exactly`);
}

/**
 * Refuses NUL in a text the record joins with others by `SEP`, before any I/O. `leases.ts` refuses NUL
 * and lone surrogates in every name already; this keeps a direct `Store` caller from corrupting a record.
 */
export function assertNoSeparator(what: string, text: string | null): void {
  if (text?.includes(SEP)) throw new InvalidArgumentError(`${what} must not contain NUL characters`);
}

/** A TTL as a script argument: `''` for no expiry. */
export const ttlArg = (ttlMs: number | null): string => (ttlMs === null ? '' : String(ttlMs));

/** Attributes as stored: JSON text, `''` when there are none. */
export function attributesArg(attributes: LeaseAttributes): string {
  // NOTE: JSON text escapes NUL, so attributes need no separator check.
  for (const _ in attributes) return JSON.stringify(attributes);
  return '';
}

/** Who holds a grant, as stored in the lease field after token and secret: holder SEP run SEP. */
export function whoArg(holder: string, runId: string | null): string {
  assertNoSeparator('holder', holder);
  assertNoSeparator('run id', runId);
  return runId === null ? `${holder}${SEP}${SEP}` : `${holder}${SEP}=${runId}${SEP}`;
}

const NO_NAMES: readonly string[] = [];

/**
 * A fence as script arguments: token, secret, who, then the number of required attributes and their
 * name/value pairs (left out when there are none and nothing follows), then `extra`.
 */
export function fenceArgs(fence: Fence, extra?: readonly string[]): string[] {
  assertNoSeparator('secret', fence.secret);
  const args = [fence.token.toString(), fence.secret, whoArg(fence.holder, fence.runId)];
  const { attributes } = fence;
  const names = attributes === undefined ? NO_NAMES : Object.keys(attributes);
  if (names.length > 0 || extra !== undefined) args.push(String(names.length));
  for (const name of names) args.push(name, attributes?.[name] ?? '');
  if (extra !== undefined) for (const arg of extra) args.push(arg);
  return args;
}

/** Names in code-unit order (not locale order), the order the pure core judges key state in. */
export const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** A key-state value as a script argument: `''` for `null` (absent), else `'='` .. value. */
export const stateValueArg = (value: string | null): string => (value === null ? '' : `=${value}`);

/**
 * Key-state values as script arguments: their count, then name and value (`stateValueArg`) pairs in code-unit
 * order of the names, so that a script's first difference is the core's. Refuses text Redis cannot store.
 */
export function stateArgs(values: Readonly<Record<string, string | null>>): string[] {
  if (typeof values !== 'object' || values === null || Array.isArray(values))
    throw new InvalidArgumentError('key-state values must be an object of names to strings (or null)');
  const names = Object.keys(values).sort(byCodeUnit);
  const args = [String(names.length)];
  for (const name of names) {
    const value = values[name] ?? null;
    if (typeof value !== 'string' && value !== null)
      throw new InvalidArgumentError(`the key-state value of ${JSON.stringify(name)} must be a string or null, got ${typeof value}`);
    assertStorable('a key-state name', name);
    assertStorable('a key-state value', value);
    args.push(name, stateValueArg(value));
  }
  return args;
}

/**
 * A claim as script arguments: secret, who, ttl, then attributes JSON and recovering ('1' or ''), left out
 * when empty / false and nothing follows, then the required key state (`stateArgs`; `''` when absent and the
 * queue mode follows, else left out), then the queue mode (`queueArgs`), left out for a plain claim.
 */
export function claimArgs(
  secret: string,
  holder: string,
  runId: string | null,
  ttlMs: number | null,
  attributes: LeaseAttributes,
  recovering: boolean,
  expect?: Readonly<Record<string, string | null>>,
  queue?: ClaimQueue,
  jumpQueue?: boolean,
): string[] {
  assertNoSeparator('secret', secret);
  const args = [secret, whoArg(holder, runId), ttlArg(ttlMs)];
  const json = attributesArg(attributes);
  const queued = queue !== undefined || jumpQueue === true;
  if (json !== '' || recovering || expect !== undefined || queued) args.push(json);
  if (recovering || expect !== undefined || queued) args.push(recovering ? '1' : '');
  if (expect !== undefined) for (const arg of stateArgs(expect)) args.push(arg);
  else if (queued) args.push('');
  if (queued) for (const arg of queueArgs(queue, jumpQueue === true)) args.push(arg);
  return args;
}

/**
 * The queue mode of a claim as script arguments (see CLAIM_SCRIPT): `'j'` for a claim that jumps the queue without
 * waiting; `'w'` (`'wj'` when it also jumps) for a waiting claim, then its place's TTL and its waiter ids. Refuses,
 * before any I/O, what the record could not store exactly: a waiter id with NUL or a lone surrogate, a TTL that is
 * not a positive safe integer.
 */
function queueArgs(queue: ClaimQueue | undefined, jumpQueue: boolean): string[] {
  if (queue === undefined) return ['j'];
  const { waiterIds, ttlMs } = queue;
  if (typeof ttlMs !== 'number' || !Number.isSafeInteger(ttlMs) || ttlMs <= 0)
    throw new InvalidArgumentError(`a claim's queue ttlMs must be a positive integer, got ${String(ttlMs)}`);
  const args = [jumpQueue ? 'wj' : 'w', String(ttlMs)];
  for (const waiterId of waiterIdArgs(waiterIds)) args.push(waiterId);
  return args;
}

/** Waiter ids as script arguments: strings without NUL (the queue's separator) that Redis stores exactly. */
export function waiterIdArgs(waiterIds: readonly string[]): readonly string[] {
  if (!Array.isArray(waiterIds)) throw new InvalidArgumentError('waiterIds must be an array of strings');
  for (const waiterId of waiterIds) {
    if (typeof waiterId !== 'string') throw new InvalidArgumentError(`a waiter id must be a string, got ${typeof waiterId}`);
    assertNoSeparator('a waiter id', waiterId);
    assertStorable('a waiter id', waiterId);
  }
  return waiterIds;
}

/** The token floor of a reply: its clock, in epoch µs. */
export const floorOf = (reply: LeaseReply): bigint => BigInt(reply.clock);

const isSet = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** A stored run id: `''` for none, else `'='` + run. */
const runOf = (text: string | undefined): string | null => (text === undefined || text === '' ? null : text.slice(1));

/** The grant in a lease field split at SEP, from `from`: token, secret, holder, run, expires, acquired, attributes. */
function grantOf(token: bigint, parts: readonly string[], from: number, presentedSecret: string): GrantState {
  const expires = parts[from + 4] ?? '';
  const attributes = parts[from + 6] ?? '';
  return {
    token,
    holder: parts[from + 2] ?? '',
    runId: runOf(parts[from + 3]),
    // NOTE: scripts never reply a stored secret (or its hash), only '=' when it matches the presented one.
    secret: parts[from + 1] === SECRET_MATCHED ? presentedSecret : OTHER_SECRET,
    acquiredAt: Number(parts[from + 5]),
    expiresAt: expires === '' ? null : Number(expires),
    // NOTE: JSON text never contains a raw NUL, so the attributes are the whole last part.
    attributes: attributes === '' ? EMPTY : Object.freeze(JSON.parse(attributes) as Record<string, string>),
  };
}

/** The change a `state-changed` ending records: cjson's `{ n = name, f = from, t = to }` (an absent value: no member). */
function changeOf(json: string): StateChange {
  const { n, f, t } = JSON.parse(json) as { n: string; f?: string; t?: string };
  return { name: n, from: f ?? null, to: t ?? null };
}

/**
 * An ending split at SEP from `from`: kind, token, holder, run, at, by, reason (which may contain SEP: the
 * rest); for `state-changed`, an empty reason and then the change as JSON (no raw NUL in it).
 */
function endingOf(parts: readonly string[], from: number): Ending | null {
  const kind = parts[from];
  if (kind === undefined || kind === '') return null;
  const changed = kind === 'state-changed';
  const reason = changed ? '' : parts.length > from + 7 ? parts.slice(from + 6).join(SEP) : (parts[from + 6] ?? '');
  const by = parts[from + 5] ?? '';
  const ending: Ending = {
    kind: kind as EndingKind,
    token: BigInt(parts[from + 1] ?? '0'),
    holder: parts[from + 2] ?? '',
    runId: runOf(parts[from + 3]),
    at: Number(parts[from + 4]),
    reason: reason === '' ? null : reason,
    by: by === '' ? null : by,
  };
  return changed ? { ...ending, change: changeOf(parts.slice(from + 7).join(SEP)) } : ending;
}

/** The stored key state (cjson's encoding of a table of strings, `''` or absent for none). */
export const stateOf = (stored: unknown): KeyState =>
  isSet(stored) ? Object.freeze(JSON.parse(stored) as Record<string, string>) : NO_STATE;

/** A stored hold (epoch ms as decimal text, `''` or absent for none). */
const holdOf = (stored: unknown): StoreTime | null => (isSet(stored) ? Number(stored) : null);

/**
 * A stored submission of `runId`: digest SEP token SEP holder SEP run SEP at SEP receipt JSON (the rest; `''`
 * for none). See `scripts.ts`.
 */
export function submissionOf(runId: string, stored: string): SubmissionRecord {
  const parts = stored.split(SEP);
  const receipt = parts.slice(5).join(SEP);
  return {
    runId,
    digest: parts[0] ?? '',
    token: BigInt(parts[1] ?? '0'),
    holder: parts[2] ?? '',
    at: Number(parts[4]),
    receiptJson: receipt === '' ? null : receipt,
  };
}

/** A checkpoint from its token, writtenAt and JSON text (`null` when the token is empty: none). */
const checkpointOf = (token: string | undefined, writtenAt: string | undefined, json: string | undefined): CheckpointRecord | null =>
  token === undefined || token === '' ? null : { json: json ?? '', token: BigInt(token), writtenAt: Number(writtenAt) };

/**
 * Builds the record from a lease field split at SEP (from `from`; a grant follows the token when `held`).
 * The grant's `secret` is the presented secret when the reply carries it (it does only when they are
 * equal), else a value no fence can present: the core only ever compares secrets.
 */
function recordOf(
  key: string,
  parts: readonly string[],
  from: number,
  held: boolean,
  ending: Ending | null,
  checkpoint: CheckpointRecord | null,
  recovery: unknown,
  secret: string,
  state: KeyState = NO_STATE,
  heldUntil: StoreTime | null = null,
  waiters: readonly QueuedWaiter[] = NO_WAITERS,
): LeaseRecord | null {
  const stored = parts[from];
  if (stored === undefined || stored === '') return null;
  const token = BigInt(stored);
  const grant = held ? grantOf(token, parts, from, secret) : null;
  // NOTE: submissions live in a key of their own, which only a fenced write with a submission reads: a
  // record replied by a script has none (see `redis-store.ts`, which adds the one a lookup found).
  return {
    key,
    token,
    grant,
    ending,
    checkpoint,
    recoveryRequired: recovery === '1',
    state,
    heldUntil,
    submissions: NO_SUBMISSIONS,
    waiters,
  };
}

/**
 * A stored queue (the `waiters` field, see `queue-parts.ts`): entries of waiterId SEP holder SEP arrivedAt SEP
 * expiresAt SEP, oldest first, as stored (expired entries too: the core keeps the live ones); `''` or absent for none.
 */
export function waitersOf(stored: unknown): readonly QueuedWaiter[] {
  if (!isSet(stored)) return NO_WAITERS;
  const parts = stored.split(SEP);
  const waiters: QueuedWaiter[] = [];
  // NOTE: the field ends with SEP, so the split ends with an empty part.
  for (let at = 0; at + 4 < parts.length; at += 4) {
    waiters.push({
      waiterId: parts[at] as string,
      holder: parts[at + 1] as string,
      arrivedAt: Number(parts[at + 2]),
      expiresAt: Number(parts[at + 3]),
    });
  }
  return waiters;
}

/**
 * The record in a table reply `{ status, lease, ending, checkpoint, recovery, state, hold }`, and its queue at
 * `REPLY.waiters` when the script replies one there (`withWaiters`).
 */
function fromTable(key: string, reply: readonly unknown[], secret: string, withWaiters: boolean): LeaseRecord | null {
  const lease = reply[REPLY.lease];
  if (typeof lease !== 'string') return null;
  const ending = reply[REPLY.ending];
  const checkpoint = reply[REPLY.checkpoint];
  let stored: CheckpointRecord | null = null;
  if (isSet(checkpoint)) {
    // token SEP writtenAt SEP json
    const first = checkpoint.indexOf(SEP);
    const second = checkpoint.indexOf(SEP, first + 1);
    stored = checkpointOf(checkpoint.slice(0, first), checkpoint.slice(first + 1, second), checkpoint.slice(second + 1));
  }
  const parts = lease.split(SEP);
  return recordOf(
    key,
    parts,
    0,
    parts.length > 1,
    isSet(ending) ? endingOf(ending.split(SEP), 0) : null,
    stored,
    reply[REPLY.recovery],
    secret,
    stateOf(reply[REPLY.state]),
    holdOf(reply[REPLY.hold]),
    withWaiters ? waitersOf(reply[REPLY.waiters]) : NO_WAITERS,
  );
}

/** Which string shape a script replies when it replies a string (see `scripts.ts`). */
export type StringShape = 'held' | 'free';

/**
 * Decodes a lease script's reply (see `scripts.ts`): a table, or a string of the script's `shape`. `withWaiters`:
 * the script replies the record's queue at `REPLY.waiters` (claim, inspect, list, dequeue); other scripts put
 * their own results there.
 */
export function parseLeaseReply(
  reply: unknown,
  key: string,
  presentedSecret: string,
  shape: StringShape = 'held',
  withWaiters = false,
): LeaseReply {
  let status: unknown;
  let record: LeaseRecord | null = null;
  if (typeof reply === 'string') {
    const parts = reply.split(SEP);
    status = parts[0];
    record =
      shape === 'held'
        ? // status SEP lease (with its grant)
          recordOf(key, parts, 1, true, null, null, '', presentedSecret)
        : // status SEP recovery SEP checkpoint (token SEP writtenAt SEP json) SEP token SEP ending
          recordOf(key, parts, 5, false, endingOf(parts, 6), checkpointOf(parts[2], parts[3], parts[4]), parts[1], presentedSecret);
  } else if (Array.isArray(reply)) {
    status = reply[REPLY.status];
    record = fromTable(key, reply, presentedSecret, withWaiters);
  }
  if (typeof status !== 'string' || (status[0] !== '+' && status[0] !== '-')) {
    throw new Error(`leasefence redis: unexpected script reply ${JSON.stringify(reply)}`);
  }
  const clock = status.slice(1);
  return { applied: status[0] === '+', now: Number(clock.slice(0, -3)), clock, record, raw: Array.isArray(reply) ? reply : [] };
}
