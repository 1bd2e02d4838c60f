/**
 * Claim-next on the Redis store (issue 24, capability 1): `addItems`, `removeItems` and `claimNext`, one script
 * each (`item-scripts.ts`; layout and index in `item-index.ts`). As every Redis operation, `claimNext` judges the
 * script's pre-image with the pure core (`fence/claim-next.ts#claimNext`) and checks that the script applied a
 * change exactly when the core says so, and that the item granted was available since the score it had.
 *
 * **The tag rule.** A set `S` lives in the Cluster slot of `{S}`, and an item key of `S` must carry `S` as its
 * hash tag (`{S}:item-1`, or the key `S` itself): `hashTagOf(key)` must be `{S}`. Set names contain no braces.
 * Both are refused with `InvalidArgumentError` before any I/O on every Redis deployment, so that an app that
 * works on one node works on a Cluster. A set is one slot (one shard's throughput): split a big queue into sets
 * `orders-0`..`orders-15`. A key can then be an item only of the set its tag names, so `addItems` never answers
 * `in-another-set` on Redis: a key of another set's tag is refused as bad input instead.
 */
import {
  claimNext,
  type AddItemsCommand,
  type AddItemsOutcome,
  type ClaimNextCommand,
  type ClaimNextOutcome,
  type RemoveItemsCommand,
  type RemoveItemsOutcome,
} from '../../fence/claim-next.js';
import { InvalidArgumentError } from '../../errors.js';
import type { Store } from '../../store.js';
import { assertName, checkedItemKeys, checkedNotBefore, describe } from '../../validate.js';
import type { RedisConnection } from './connection.js';
import { hashTagOf, type KeyNames } from './keys.js';
import { claimArgs, floorOf, parseLeaseReply, SEP } from './record.js';
import { defineScript, runScript } from './runner.js';
import { REPLY } from './scripts.js';
import { ADD_ITEMS_SCRIPT, CLAIM_NEXT_SCRIPT, REMOVE_ITEMS_SCRIPT } from './item-scripts.js';
import { indexPermits } from './redis-permits.js';

/** How many index entries claim-next reads at a time while it passes items whose state does not match `expect`. */
const BATCH = '16';

const SCRIPTS = {
  addItems: defineScript('add items', ADD_ITEMS_SCRIPT),
  removeItems: defineScript('remove items', REMOVE_ITEMS_SCRIPT),
  claimNext: defineScript('claim next', CLAIM_NEXT_SCRIPT),
} as const;

/** What the item methods need of the Redis store they belong to. */
export interface RedisItemsHost {
  readonly connection: RedisConnection;
  readonly prefix: string;
  readonly names: KeyNames;
  readonly replayWindowMs: number;
}

/** A set name: a name without braces (its `{S}` is the set's hash tag). */
function checkedSet(set: unknown): string {
  assertName('set', set);
  if (set.includes('{') || set.includes('}'))
    throw new InvalidArgumentError(`a set name must not contain '{' or '}', got ${describe(set)}`);
  return set;
}

/** A non-empty list of distinct keys of `set`, each carrying the set's hash tag: `InvalidArgumentError` before any I/O. */
function checkedKeys(set: string, keys: unknown): readonly string[] {
  const checked = checkedItemKeys(set, keys);
  const tag = `{${set}}`;
  for (const key of checked)
    if (hashTagOf(key) !== tag)
      throw new InvalidArgumentError(
        `on Redis an item key of set ${describe(set)} must carry the set's hash tag ${tag} (e.g. '${tag}:item-1'), got ${describe(key)}`,
      );
  return checked;
}

/** The dueAt of an `item` field (dueAt SEP base SEP key). */
const dueOf = (item: unknown): number => {
  if (typeof item !== 'string')
    throw new Error(`leasefence redis: an item without its item field (${JSON.stringify(item)}); this is a bug`);
  return Number(item.slice(0, item.indexOf(SEP)));
};

/** The three set methods of a Redis store (`Store.addItems`, `removeItems`, `claimNext`). */
export type RedisItems = Required<Pick<Store, 'addItems' | 'removeItems' | 'claimNext'>>;

/** Creates the claim-next methods of one Redis store. */
export function createRedisItems(host: RedisItemsHost): RedisItems {
  const { connection, prefix, names } = host;
  const base = (set: string): string => `${prefix}{${set}}:`;

  const addItems = async (command: AddItemsCommand): Promise<AddItemsOutcome> => {
    const set = checkedSet(command.set);
    const keys = checkedKeys(set, command.keys);
    const delay = checkedNotBefore(command.notBeforeMs);
    const records = keys.map((key) => names.record(key, 'lease'));
    // NOTE: a semaphore's permit key made an item enters its semaphore's index first (an index without a record
    // reads as no record), so that a record claim-next creates for it is one the next acquire reads.
    await indexPermits(connection, prefix, keys);
    const reply = (await runScript(
      connection,
      SCRIPTS.addItems,
      [`${base(set)}ready`, ...records],
      [base(set), String(delay), ...keys],
    )) as [string, string, string[]];
    const [status, due, added] = reply;
    return { ok: true, set, added, dueAt: Number(due), now: Number(status.slice(1, -3)) };
  };

  const removeItems = async (command: RemoveItemsCommand): Promise<RemoveItemsOutcome> => {
    const set = checkedSet(command.set);
    const keys = checkedKeys(set, command.keys);
    const records = keys.map((key) => names.record(key, 'lease'));
    const reply = (await runScript(
      connection,
      SCRIPTS.removeItems,
      [`${base(set)}ready`, `${base(set)}by-secret`, ...records],
      [String(host.replayWindowMs), '', ...keys],
    )) as [string, string[]];
    const [status, removed] = reply;
    return { ok: true, set, removed, now: Number(status.slice(1, -3)) };
  };

  const claimNextOnce = async (command: ClaimNextCommand): Promise<ClaimNextOutcome> => {
    const set = checkedSet(command.set);
    if (command.onExpired !== 'take-over' && command.onExpired !== 'record-first')
      throw new InvalidArgumentError(`onExpired must be 'take-over' or 'record-first', got ${describe(command.onExpired)}`);
    const { secret } = command;
    const args = [
      prefix,
      set,
      command.onExpired === 'record-first' ? '1' : '',
      BATCH,
      // NOTE: claim-next does not consult the queue of the item it grants (a documented choice): it jumps it.
      ...claimArgs(secret, command.holder, command.runId, command.ttlMs, command.attributes, false, command.expect, undefined, true),
    ];
    const raw = (await runScript(connection, SCRIPTS.claimNext, [`${base(set)}ready`, `${base(set)}by-secret`], args)) as unknown[];
    if (raw[0] === 'idle') {
      const status = raw[1] as string;
      const nextAt = raw[2];
      return {
        ok: false,
        reason: 'idle',
        set,
        nextAt: typeof nextAt === 'string' ? Number(nextAt) : null,
        now: Number(status.slice(1, -3)),
      };
    }
    const key = raw[2] as string;
    const item = { set, key, dueAt: dueOf(raw[raw[0] === 'again' ? 3 : 4]) };
    const reply = parseLeaseReply(raw[1], key, secret, 'free');
    const removed = reply.raw[REPLY.extras];
    const floor = typeof removed === 'string' && BigInt(removed) + 1n > floorOf(reply) ? BigInt(removed) + 1n : floorOf(reply);
    // NOTE: a claim's reply leaves out a hold that has passed (the grant clears it, as the core's claim does); it
    // is still an input of the item's availability: the record as it was has it.
    const hold = raw[0] === 'granted' ? raw[5] : null;
    const record =
      reply.record !== null && reply.record.heldUntil === null && typeof hold === 'string' && hold !== ''
        ? { ...reply.record, heldUntil: Number(hold) }
        : reply.record;
    const { transition } = claimNext([{ item, record, busy: false }], command, reply.now, floor);
    const { outcome } = transition;
    const score = raw[0] === 'again' ? null : Number(raw[3]);
    if (!outcome.ok || transition.changed !== reply.applied || (score !== null && outcome.availableSince !== score)) {
      throw new Error(
        `leasefence redis: the claim next script ${reply.applied ? 'granted' : 'answered'} ${key} (index score ${score}) where the pure core ` +
          `${transition.changed ? 'grants' : 'changes nothing'} (outcome ${outcome.ok ? `${outcome.key} available since ${outcome.availableSince}` : 'idle'}); this is a bug`,
      );
    }
    return outcome;
  };

  // NOTE: async functions: bad input rejects (before any I/O) rather than throws.
  return { addItems, removeItems, claimNext: claimNextOnce };
}
