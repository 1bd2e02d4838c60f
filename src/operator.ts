/**
 * The operators' entry point: list, inspect and revoke leases, and inspect or reset token gates, without
 * being a worker (no holder id). Input is validated before any I/O, as everywhere in leasefence.
 */
import { InvalidArgumentError } from './errors.js';
import type {
  GateRecord,
  GateResetOptions,
  GateResetOutcome,
  RemoveOutcome,
  RevokeOutcome,
  SetKeyStateOutcome,
} from './fence/operations.js';
import type { StoreTime } from './fence/types.js';
import { createLeases } from './leases.js';
import type { AddItemsOutcome, RemoveItemsOutcome } from './fence/claim-next.js';
import type { AddItemsOptions, LeaseInspection, RemoveOptions, RevokeOptions, SetKeyStateOptions } from './leases-types.js';
import {
  DEFAULT_LIST_LIMIT,
  leaseState,
  matchesStates,
  toStateFilter,
  toStoreListQuery,
  type LeaseState,
  type ListedCheckpoint,
  type ListState,
} from './list.js';
import { readGateResetOptions, resetExpectationHolds } from './gate.js';
import type { Store } from './store.js';
import { assertName, describe, readOptions } from './validate.js';

/** The operator side of a token gate: what its `inspect` and `reset` take and give. */
export interface OperatorGate {
  /** The lease key and highest token that wrote `resource`. */
  inspect(resource: string): Promise<GateRecord>;
  /** Forgets `resource` (to re-key it) and says what it forgot; with an expectation, only if it still holds. */
  reset(resource: string, options?: GateResetOptions): Promise<GateResetOutcome>;
}

/** Options of `createOperator`. */
export interface OperatorOptions {
  /** A token gate to inspect and reset. */
  readonly gate?: OperatorGate;
  /**
   * Who revokes (or changes key state), recorded on every revoke and `setKeyState` unless the call says otherwise.
   * @default 'operator'
   */
  readonly by?: string;
}

/** A listing query. */
export interface ListQuery {
  /** Only keys that start with this text. @default '' (every key) */
  readonly prefix?: string;
  /** Only leases in one of these states (`recovery-required`: with a pending recovery). @default every state */
  readonly states?: readonly ListState[];
  /** How many records one call examines (1 to 1000): a page may return fewer. @default 100 */
  readonly limit?: number;
  /** The `cursor` of the previous page. @default null (from the start) */
  readonly cursor?: string | null;
}

/** A lease as listed: its inspection (no checkpoint body) and its state. */
export interface ListedLease {
  readonly key: string;
  readonly state: LeaseState;
  readonly token: bigint;
  readonly grant: LeaseInspection['grant'];
  readonly ending: LeaseInspection['ending'];
  /** The checkpoint's token, time and size (its JSON stays in the store: `inspect` the key to read it). */
  readonly checkpoint: ListedCheckpoint | null;
  readonly recoveryRequired: boolean;
  /** The key's state (`{}`: none; see `setKeyState`). */
  readonly keyState: LeaseInspection['state'];
  /** Claims are refused until this time (`null`: no hold, or it has passed). */
  readonly heldUntil: StoreTime | null;
  /** The store's now when this lease was read. */
  readonly now: StoreTime;
}

/** A page of leases. */
export interface ListPage {
  readonly leases: readonly ListedLease[];
  /** Pass it back as `cursor` for the next page; `null` when the listing is complete. */
  readonly cursor: string | null;
}

/** The operators' API on one store. */
export interface Operator {
  readonly store: Store;
  /**
   * One page of leases: in key order on memory, Postgres and SQLite; in `SCAN` order on Redis (sorted within the
   * page, and `limit` is `SCAN`'s `COUNT`, so a page may hold a few more). Each call examines about
   * `limit` records (O(limit)), so a filtered page may be short or empty while `cursor` is not `null`.
   * A key that exists throughout a listing is listed once; each listed lease was true at some moment of
   * its call.
   */
  list(query?: ListQuery): Promise<ListPage>;
  /** Every lease matching `query`, page after page. */
  listAll(query?: Omit<ListQuery, 'cursor'>): AsyncIterable<ListedLease>;
  /** Everything about `key` except the secret, with its checkpoint parsed. */
  inspect(key: string): Promise<LeaseInspection>;
  /** Force-releases `key`: the holder is fenced at once, the checkpoint kept for recovery. */
  revoke(key: string, options: RevokeOptions): Promise<RevokeOutcome>;
  /**
   * Deletes `key`'s record (grant, state, hold, checkpoint, submissions): refused `held` while a grant is live
   * unless `force`, `superseded` when `expectedToken` is not current, `missing` when there is none. The old
   * grant's holder is then told `missing`; a key created again never reissues an old token.
   */
  remove(key: string, options?: RemoveOptions): Promise<RemoveOutcome>;
  /** Sets values of `key`'s state (and its hold) as `Leases.setKeyState` does, `by` this operator by default. */
  setKeyState(key: string, values: Readonly<Record<string, string | null>>, options?: SetKeyStateOptions): Promise<SetKeyStateOutcome>;
  /**
   * Adds keys as items of `set` (a work queue), as `Leases.addItems` does: re-queue an item an operator took out,
   * or queue new work. Needs a store with sets (`UnsupportedOperationError` otherwise, before any I/O).
   */
  addItems(set: string, keys: readonly string[], options?: AddItemsOptions): Promise<AddItemsOutcome>;
  /** Takes keys out of `set` (their records, grants and state stay), as `Leases.removeItems` does. */
  removeItems(set: string, keys: readonly string[]): Promise<RemoveItemsOutcome>;
  /** What the gate remembers for `resource` (throws when no gate was given). */
  gateInspect(resource: string): Promise<GateRecord>;
  /**
   * Makes the gate forget `resource` (throws when no gate was given). With `expectedToken` (and
   * `expectedKey`), only if the gate still records what the operator saw: otherwise `superseded`, unchanged.
   */
  gateReset(resource: string, options?: GateResetOptions): Promise<GateResetOutcome>;
}

const LIST_QUERY = ['prefix', 'states', 'limit', 'cursor'] as const;
const REVOKE_OPTIONS = ['reason', 'by', 'requireRecovery', 'expectedToken'] as const;

/** The `gate` option: absent, or an object with `inspect` and `reset` methods (checked when the operator is made). */
function toOperatorGate(gate: unknown): OperatorGate | undefined {
  if (gate === undefined) return undefined;
  let methods: boolean;
  try {
    methods =
      typeof gate === 'object' &&
      gate !== null &&
      typeof (gate as OperatorGate).inspect === 'function' &&
      typeof (gate as OperatorGate).reset === 'function';
  } catch {
    methods = false;
  }
  if (!methods) throw new InvalidArgumentError(`gate must be a token gate with inspect and reset methods, got ${describe(gate)}`);
  return gate as OperatorGate;
}

/**
 * Creates the operators' API on a store (and optionally a token gate).
 *
 * ```ts
 * const operator = createOperator(store, { by: 'ops:alice' });
 * for await (const lease of operator.listAll({ prefix: 'job:', states: ['live'] })) console.log(lease.key, lease.grant?.holder);
 * await operator.revoke('job:42', { reason: 'stuck since 03:00', requireRecovery: true });
 * ```
 */
export function createOperator(store: Store, options?: OperatorOptions): Operator {
  // NOTE: the holder id is never used: an operator only inspects and revokes, which record `by` instead.
  const leases = createLeases(store, { holder: 'leasefence-operator' });
  const given = readOptions('createOperator options', options, ['gate', 'by']);
  const by = given.by ?? 'operator';
  assertName('by', by);
  const gate = toOperatorGate(given.gate);

  const requireGate = (): OperatorGate => {
    if (gate === undefined) throw new InvalidArgumentError('this operator has no token gate (pass `gate` to createOperator)');
    return gate;
  };

  const operator: Operator = {
    store,

    async list(query) {
      const given = readOptions('list query', query, LIST_QUERY);
      const storeQuery = toStoreListQuery(given.prefix ?? '', given.limit ?? DEFAULT_LIST_LIMIT, given.cursor ?? null);
      const states = toStateFilter(given.states);
      if (store.list === undefined) throw new InvalidArgumentError(`the store ${store.id} cannot list leases (it has no \`list\`)`);
      const page = await store.list(storeQuery);
      const listed: ListedLease[] = [];
      for (const inspection of page.leases) {
        if (!inspection.exists || !matchesStates(inspection, states)) continue;
        const { key, token, grant, ending, checkpoint, recoveryRequired, now } = inspection;
        // NOTE: a store's listing may predate key state (a store not yet ported): read as none.
        const keyState = inspection.state ?? {};
        const heldUntil = inspection.heldUntil ?? null;
        listed.push({
          key,
          state: leaseState(inspection),
          token,
          grant,
          ending,
          checkpoint: checkpoint === null ? null : { token: checkpoint.token, writtenAt: checkpoint.writtenAt, bytes: checkpoint.bytes },
          recoveryRequired,
          keyState,
          heldUntil: heldUntil !== null && now < heldUntil ? heldUntil : null,
          now,
        });
      }
      return { leases: listed, cursor: page.cursor };
    },

    async *listAll(query) {
      // NOTE: read once: every page gets the same query, whatever a getter would answer later.
      const { prefix, states, limit } = readOptions('listAll query', query, LIST_QUERY);
      let cursor: string | null = null;
      do {
        const page: ListPage = await operator.list({ prefix, states, limit, cursor } as ListQuery);
        yield* page.leases;
        cursor = page.cursor;
      } while (cursor !== null);
    },

    inspect: (key) => leases.inspect(key),

    async revoke(key, revokeOptions) {
      if (revokeOptions === undefined) throw new InvalidArgumentError('revoke needs options with a reason');
      const given = readOptions('revoke options', revokeOptions, REVOKE_OPTIONS);
      return leases.revoke(key, { ...given, by: given.by ?? by } as RevokeOptions);
    },

    remove: (key, removeOptions) => leases.remove(key, removeOptions),

    async setKeyState(key, values, stateOptions) {
      const given = readOptions('setKeyState options', stateOptions, ['holdMs', 'by']);
      return leases.setKeyState(key, values, { ...given, by: given.by ?? by } as SetKeyStateOptions);
    },

    addItems: (set, keys, addOptions) => leases.addItems(set, keys, addOptions),

    removeItems: (set, keys) => leases.removeItems(set, keys),

    async gateInspect(resource) {
      assertName('resource', resource);
      return requireGate().inspect(resource);
    },

    async gateReset(resource, resetOptions) {
      assertName('resource', resource);
      const expected = readGateResetOptions(resetOptions);
      const gate = requireGate();
      if (expected === null) return gate.reset(resource);
      const outcome = await gate.reset(resource, {
        expectedToken: expected.token,
        ...(expected.key === null ? {} : { expectedKey: expected.key }),
      });
      // NOTE: a gate written before reset took an expectation would forget whatever it records: say so loudly.
      if (outcome.ok && !resetExpectationHolds(expected, outcome.found)) {
        throw new Error(
          `the token gate forgot ${resource} although it recorded ${outcome.found === null ? 'nothing' : `token ${outcome.found.token}`}, not the expected token ${expected.token}: its reset ignores expectedToken`,
        );
      }
      return outcome;
    },
  };
  return operator;
}
