/**
 * The fuzz property of issue 9 over every public method of `Leases` (and `withLease`'s arguments), for any
 * store: each call gets adversarial arguments (wrong types, NaN, ±Infinity, huge and fractional numbers,
 * forged and tampered handles, handles of another store, hostile objects, hostile strings) mixed with valid
 * ones, and must either throw INVALID_ARGUMENT with no I/O and every lease unchanged, or give a normal
 * result: an outcome (log-safe JSON without a secret) or, for the `...OrThrow` variants, their typed error.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import { isLeaseError } from '../../src/errors.js';
import type { TokenGate } from '../../src/gate.js';
import { Lease } from '../../src/lease.js';
import { toLoggable } from '../../src/loggable.js';
import type { Leases } from '../../src/leases-types.js';
import type { Store } from '../../src/store.js';
import { everyLogText } from './setup.js';

/** One store under fuzz: a counted API, an uncounted view, and how to count I/O. */
export interface FuzzTarget {
  /** Leases on the counted store. */
  readonly leases: Leases<Store>;
  /** Leases on an uncounted path to the same data (claims set up each run, state snapshots). */
  readonly setup: Leases<Store>;
  /** A handle granted by another store. */
  readonly foreign: Lease;
  /** A token gate in the same backend. */
  readonly gate: TokenGate<unknown>;
  /** How many I/O operations (store calls, statements, commands) `run` caused. */
  ioDuring(run: () => Promise<void>): Promise<number>;
  freshKey(): string;
  /**
   * The run's set name for its lease key (`$set`). Default `set:<key>`; Redis names a set after the hash tag its
   * items carry (its keys share one tag, so the run's keys are items the set may hold).
   */
  setName?(leaseKey: string): string;
  /** Whether `fencedWrite(..., { checkpoint })` is fuzzed. */
  readonly checkpointWithWrite: boolean;
}

const deep = (levels: number): unknown => {
  let value: unknown = 'bottom';
  for (let level = 0; level < levels; level += 1) value = { next: value };
  return value;
};

const throwingGetter = (name: string): object =>
  Object.defineProperty({}, name, {
    enumerable: true,
    get: () => {
      throw new TypeError(`getter ${name}`);
    },
  });

const throwingProxy = (): object =>
  new Proxy(
    {},
    {
      get: () => {
        throw new TypeError('proxy get');
      },
      ownKeys: () => {
        throw new TypeError('proxy ownKeys');
      },
      getPrototypeOf: () => {
        throw new TypeError('proxy getPrototypeOf');
      },
      has: () => {
        throw new TypeError('proxy has');
      },
    },
  );

// NOTE: Proxies and throwing getters are made when a call runs, not by fast-check (which probes and prints
// its values); a lazy recipe is recognised by identity (WeakSet.has runs no trap).
const LAZY = new WeakMap<object, () => unknown>();
export const lazy = (make: () => unknown): object => {
  const recipe = { lazy: make.name || 'hostile' };
  LAZY.set(recipe, make);
  return recipe;
};
/** `value` with lazy recipes made, at the top level and one level into plain objects (options records). */
const made = (value: unknown, depth = 0): unknown => {
  if (typeof value !== 'object' || value === null) return value;
  const make = LAZY.get(value);
  if (make !== undefined) return make();
  if (depth > 0 || Object.getPrototypeOf(value) !== Object.prototype) return value;
  const copy: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(value)) copy[name] = made(field, depth + 1);
  return copy;
};

/** Values no parameter accepts, or that only some do. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    undefined,
    null,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    -0,
    0,
    -1,
    1.5,
    2 ** 31,
    2 ** 53 + 2,
    1e19,
    Number.MAX_VALUE,
    0n,
    -1n,
    10n,
    2n ** 63n,
    2n ** 64n + 1n,
    '',
    ' ',
    'a\u0000b',
    'job:\uD800',
    '\uDC00x',
    'k'.repeat(1025),
    '鍵'.repeat(342),
    '😀'.repeat(257),
    '__proto__',
    'constructor',
    'line\nforged\u001b[2J',
    'f'.repeat(32),
    true,
    false,
    Symbol('s'),
    () => 1,
    [],
    // biome-ignore lint/suspicious/noSparseArray: a hole is the input under test
    [1, , 3],
    Object.assign([1], { extra: 1 }),
    {},
    Object.create(null),
    new Date(0),
    new Map([[1, 2]]),
    { toJSON: () => 1n },
    deep(200),
  ),
  fc.constant(null).map(() => lazy(throwingProxy)),
  fc
    .constantFrom('ttlMs', 'runId', 'attributes', 'checkpoint', 'reason', 'by', 'expectedToken', 'recovering', 'key', 'token', 'secret')
    .map((name) => lazy(() => throwingGetter(name))),
  fc.anything({
    withBigInt: true,
    withNullPrototype: true,
    withSparseArray: true,
    withBoxedValues: true,
    withMap: true,
    withSet: true,
    withDate: true,
    withTypedArray: true,
    maxDepth: 3,
  }),
  fc.constant(null).map(() =>
    lazy(() => ({
      toString: () => {
        throw new Error('toString');
      },
    })),
  ), // prettier-ignore
  fc.constant(null).map(() => lazy(() => Object.defineProperty({ step: 1 }, 'toJSON', { value: () => ({ step: 2 }) }))), // a toJSON JSON.stringify would call
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.double(),
  fc.bigInt(),
);

/** Sometimes valid, often not. */
const mix = <T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 2, arbitrary: valid as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: hostileValue });

const ttl = mix(fc.oneof(fc.integer({ min: 1, max: 120_000 }), fc.constant(null)));
const name = mix(fc.oneof(fc.constantFrom('r1', 'r2', 'v1'), fc.string({ minLength: 1, maxLength: 12 })));
const attributes = mix(
  fc.oneof(
    fc.constant({ model: 'v1' }),
    fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ minLength: 1, maxLength: 8 }), { maxKeys: 3 }),
  ),
);
const checkpointValue = mix(fc.jsonValue({ maxDepth: 3 }));
/** Key-state values (and `expect`): strings or null, often hostile. */
const stateValues = mix(
  fc.oneof(
    fc.constant({ tier: '3' }),
    fc.dictionary(fc.constantFrom('tier', 'revision', 'model'), fc.option(fc.constantFrom('3', '4', 'r7')), { maxKeys: 3 }),
  ),
);
const holdMs = mix(fc.oneof(fc.integer({ min: 1, max: 120_000 }), fc.constantFrom(0, -1, 1.5, 366 * 24 * 3_600_000)));
const submission = mix(
  fc.record(
    {
      payload: checkpointValue,
      runId: name,
      receipt: checkpointValue,
      bindToGrant: mix(fc.boolean()),
    },
    { requiredKeys: [] },
  ),
);
const optionsOf = (fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 3, arbitrary: fc.record(fields, { requiredKeys: [] }) }, { weight: 1, arbitrary: hostileValue });

// NOTE: recipes are recognised by identity (WeakSet.has runs no trap), never by `in`, which a Proxy intercepts.
const HOSTILE_HANDLES = new WeakSet<object>();
const PATCHES = new WeakSet<object>();
/** A list of item keys, each a recipe (`$fresh` or a hostile value). */
const ITEM_LISTS = new WeakSet<object>();
const marked = <T extends object>(set: WeakSet<object>, value: T): T => {
  set.add(value);
  return value;
};

/** Which handle a call presents, resolved against the run's setup. */
type HandleChoice =
  | 'real'
  | 'restored'
  | 'forgedToken'
  | 'wrongSecret'
  | 'foreign'
  | 'protoForged'
  | 'proxy'
  | 'spread'
  | 'tamperedToken'
  | 'frozen'
  | 'released';
const handle: fc.Arbitrary<HandleChoice | { readonly hostile: unknown }> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom<HandleChoice>(
      'real',
      'restored',
      'forgedToken',
      'wrongSecret',
      'foreign',
      'protoForged',
      'proxy',
      'spread',
      'tamperedToken',
      'frozen',
      'released',
    ),
  },
  { weight: 1, arbitrary: hostileValue.map((hostile) => marked(HOSTILE_HANDLES, { hostile })) },
);
const key = fc.oneof(fc.constantFrom<unknown>('$lease', '$fresh'), hostileValue);
const write = fc.oneof({ weight: 3, arbitrary: fc.constant<unknown>('$write') }, { weight: 1, arbitrary: hostileValue });

/** A call: a method name and the argument recipes. */
export type Call = { readonly method: string; readonly args: readonly unknown[] };

const call = (method: string, ...args: fc.Arbitrary<unknown>[]): fc.Arbitrary<Call> =>
  fc.tuple(...args).map((values) => ({ method, args: values }));

/** A set's name (one per run, `$set`) and its keys (`$items`: the run's two keys; `$repeated`: one twice). */
const setName = fc.oneof({ weight: 3, arbitrary: fc.constant<unknown>('$set') }, { weight: 1, arbitrary: hostileValue });
const itemKeys = fc.oneof(
  { weight: 3, arbitrary: fc.constant<unknown>('$items') },
  { weight: 1, arbitrary: fc.constant<unknown>('$repeated') },
  { weight: 1, arbitrary: hostileValue },
  {
    weight: 1,
    arbitrary: fc
      .array(fc.oneof(fc.constant<unknown>('$fresh'), hostileValue), { maxLength: 3 })
      .map((keys) => marked(ITEM_LISTS, { $keys: keys })),
  },
);

/** The calls of claim-next's operations, for a store with sets. */
const setCalls = (): fc.Arbitrary<Call>[] => {
  const claimNextOptions = optionsOf({
    ttlMs: ttl,
    runId: name,
    attributes,
    expect: stateValues,
    onExpired: mix(fc.constantFrom('take-over', 'record-first')),
    wait: mix(
      fc.record(
        { timeoutMs: fc.integer({ min: 0, max: 20 }), pollMs: mix(fc.integer({ min: 1, max: 10 })) },
        { requiredKeys: ['timeoutMs'] },
      ),
    ),
  });
  return [
    call('addItems', setName, itemKeys, optionsOf({ notBeforeMs: mix(fc.integer({ min: 0, max: 120_000 })) })),
    call('removeItems', setName, itemKeys),
    call('claimNext', setName, claimNextOptions),
  ];
};

/** Every public method's calls; `sets`: also claim-next's (the store offers sets). */
export const calls = (checkpointWithWrite: boolean, sets = false): fc.Arbitrary<Call> => {
  const fenceOptions = optionsOf({ attributes });
  const writeOptions = checkpointWithWrite
    ? optionsOf({ attributes, checkpoint: checkpointValue, submission })
    : optionsOf({ attributes, submission });
  const claimOptions = optionsOf({ ttlMs: ttl, runId: name, attributes, recovering: mix(fc.boolean()), expect: stateValues });
  return fc.oneof(
    call('claim', key, claimOptions),
    call('claimOrThrow', key, claimOptions),
    call('renew', handle, optionsOf({ ttlMs: ttl })),
    call('renewOrThrow', handle, optionsOf({ ttlMs: ttl })),
    call('checkpoint', handle, checkpointValue, fenceOptions),
    call('checkpointOrThrow', handle, checkpointValue, fenceOptions),
    call('fencedWrite', handle, write, writeOptions),
    call('fencedWriteOrThrow', handle, write, writeOptions),
    call('release', handle, optionsOf({ checkpoint: fc.oneof(checkpointValue, fc.constant(null)), holdMs })),
    call('check', handle, optionsOf({ minTtlMs: mix(fc.integer({ min: 0, max: 120_000 })), attributes })),
    call('checkOrThrow', handle, optionsOf({ minTtlMs: mix(fc.integer({ min: 0, max: 120_000 })), attributes })),
    call('setKeyState', key, stateValues, optionsOf({ holdMs: fc.oneof(holdMs, fc.constant(null)), by: name })),
    call('remove', key, optionsOf({ force: mix(fc.boolean()), expectedToken: mix(fc.bigInt({ min: 1n, max: 5n })) })),
    call(
      'revoke',
      key,
      optionsOf({ reason: name, by: name, requireRecovery: mix(fc.boolean()), expectedToken: mix(fc.bigInt({ min: 1n, max: 5n })) }),
    ),
    call('recover', handle, mix(fc.constantFrom('resume', 'discard'))),
    call('inspect', key),
    call('gateWrite', fc.constantFrom<unknown>('$gate', '$gate', null, {}, { write: 1 }), key, handle, write),
    call('gateWriteOrThrow', fc.constant<unknown>('$gate'), key, handle, write),
    call(
      'restore',
      fc.oneof(
        fc.constant<unknown>('$export'),
        fc.constant<unknown>('$json'),
        hostileValue,
        fc.record({ token: hostileValue }).map((patch) => marked(PATCHES, { $patch: patch })),
      ),
    ),
    call('withLease', key, fc.oneof(fc.constant<unknown>('$fn'), hostileValue), claimOptions),
    ...(sets ? setCalls() : []),
  );
};

/** What the store holds for `keys`, without `now` (so time passing is no change). */
async function snapshot(setup: Leases<Store>, keys: readonly string[]): Promise<unknown[]> {
  return Promise.all(
    keys.map(async (one) => {
      const { now: _now, ...rest } = await setup.inspect(one);
      return toLoggable(rest);
    }),
  );
}

function expectNoSecret(text: string, secrets: readonly string[], what: string): void {
  for (const secret of secrets) expect(text.includes(secret), `${what} shows a lease secret`).toBe(false);
}

/** Thrown by the `...OrThrow` variants (and `withLease`'s claim) after I/O: normal results. */
const TYPED_OUTCOMES = new Set([
  'LEASE_BUSY',
  'LEASE_LOST',
  'RECOVERY_REQUIRED',
  'GATE_REFUSED',
  'KEY_HELD_BACK',
  'STATE_MISMATCH',
  'RUN_ALREADY_ACQUIRED',
  'WRITE_REFUSED',
  'SUBMISSION_REPLAYED',
  'REPLAY_CONFLICT',
  'TTL_INSUFFICIENT',
  'SEMAPHORE_FULL',
]);

/** How a call ended, and what it answered: `invalid`, the typed error's code, or the result's `ok` / `reason`. */
export interface CallAnswer {
  readonly kind: 'invalid' | 'result' | 'typed';
  readonly answer: string;
}

/** Runs one call against a fresh lease and checks the property; returns how the call ended. */
export async function runCall(target: FuzzTarget, recipe: Call): Promise<'invalid' | 'result' | 'typed'> {
  return (await answerCall(target, recipe)).kind;
}

/** `runCall`, also saying what the call answered (to compare stores). */
export async function answerCall(target: FuzzTarget, recipe: Call): Promise<CallAnswer> {
  const { leases, setup } = target;
  const leaseKey = target.freshKey();
  const claimed = await setup.claimOrThrow(leaseKey, { runId: 'r1', attributes: { model: 'v1' }, ttlMs: 60_000 });
  await setup.checkpoint(claimed, { step: 1 });
  const exported = claimed.export();
  const real = leases.restore(exported);
  const freshKey = target.freshKey();
  const runSet = target.setName?.(leaseKey) ?? `set:${leaseKey}`;
  // NOTE: values travel boxed: an async function returning a Proxy would make the promise read its `then`.
  const resolveHandle = async (choice: unknown): Promise<[unknown]> => [await handleOf(choice)];
  const handleOf = async (choice: unknown): Promise<unknown> => {
    if (typeof choice === 'object' && choice !== null && HOSTILE_HANDLES.has(choice)) return null;
    switch (choice as HandleChoice) {
      case 'real':
        return real;
      case 'restored':
        return leases.restore(exported);
      case 'forgedToken':
        return leases.restore({ ...exported, token: String(claimed.token + 5n) });
      case 'wrongSecret':
        return leases.restore({ ...exported, secret: 'f'.repeat(32) });
      case 'foreign':
        return target.foreign;
      case 'protoForged':
        return Object.create(Lease.prototype) as unknown;
      case 'proxy':
        return new Proxy(real, {});
      case 'spread':
        return { ...real };
      case 'tamperedToken':
        return Object.defineProperty(leases.restore(exported), 'token', { value: 2n ** 64n });
      case 'frozen':
        return Object.freeze(leases.restore(exported));
      case 'released': {
        const other = await setup.claimOrThrow(target.freshKey());
        await setup.release(other);
        return leases.restore(other.export());
      }
    }
  };
  const resolve = (arg: unknown): unknown => {
    if (arg === '$lease') return leaseKey;
    if (arg === '$fresh') return freshKey;
    if (arg === '$write') return () => 'written';
    if (arg === '$fn') return async () => 'done';
    if (arg === '$gate') return target.gate;
    if (arg === '$set') return runSet;
    if (arg === '$items') return [leaseKey, freshKey];
    if (arg === '$repeated') return [freshKey, freshKey];
    if (typeof arg === 'object' && arg !== null && ITEM_LISTS.has(arg)) return (arg as { $keys: unknown[] }).$keys.map(resolve);
    if (arg === '$export') return exported;
    if (arg === '$json') return JSON.parse(JSON.stringify(claimed)) as unknown;
    if (typeof arg === 'object' && arg !== null && PATCHES.has(arg))
      return { ...exported, ...(made((arg as { $patch: object }).$patch) as object) };
    return made(arg);
  };
  const handleAt = new Set([
    'renew',
    'renewOrThrow',
    'checkpoint',
    'checkpointOrThrow',
    'fencedWrite',
    'fencedWriteOrThrow',
    'release',
    'recover',
    'check',
    'checkOrThrow',
  ]);
  const args: unknown[] = [];
  for (const [index, arg] of recipe.args.entries()) {
    const isHandle = (handleAt.has(recipe.method) && index === 0) || (recipe.method.startsWith('gateWrite') && index === 2);
    if (!isHandle) args.push(resolve(arg));
    else if (typeof arg === 'object' && arg !== null && HOSTILE_HANDLES.has(arg)) args.push(made((arg as { hostile: unknown }).hostile));
    else args.push((await resolveHandle(arg))[0]);
  }
  // NOTE: a claim-next finds the run's set with an item in it (the fresh key), so it can grant, not only idle.
  if (recipe.method === 'claimNext' && typeof setup.store.claimNext === 'function') await setup.addItems(runSet, [freshKey]);
  const keys = [leaseKey, freshKey];
  const before = await snapshot(setup, keys);
  let result: unknown;
  let error: unknown;
  let threw = false;
  const io = await target.ioDuring(async () => {
    try {
      result = await (leases as unknown as Record<string, (...params: unknown[]) => unknown>)[recipe.method]!(...args);
    } catch (caught) {
      threw = true;
      error = caught;
    }
  });
  const after = await snapshot(setup, keys);
  if (threw) {
    // NOTE: every way a logger could print it (JSON, util.inspect with hidden fields, String, the stack).
    expectNoSecret(everyLogText(error), [exported.secret], `${recipe.method}'s error`);
    if (isLeaseError(error, 'INVALID_ARGUMENT')) {
      expect(io, `${recipe.method} refused its input after ${io} I/O operations`).toBe(0);
      expect(after, `${recipe.method} refused its input but changed a lease`).toEqual(before);
      return { kind: 'invalid', answer: 'INVALID_ARGUMENT' };
    }
    if (isLeaseError(error) && TYPED_OUTCOMES.has(error.code) && (recipe.method.endsWith('OrThrow') || recipe.method === 'withLease')) {
      return { kind: 'typed', answer: error.code };
    }
    throw new Error(`${recipe.method} threw ${isLeaseError(error) ? error.code : 'an untyped'} error: ${String(error)}`, { cause: error });
  }
  if (recipe.method === 'restore') {
    expect(io).toBe(0);
    expect(result).toBeInstanceOf(Lease);
    return { kind: 'result', answer: 'restored' };
  }
  // NOTE: a claim's or withLease's result carries a handle with its own, new secret.
  const granted = (result as { lease?: unknown } | null)?.lease;
  const secrets = granted instanceof Lease ? [exported.secret, granted.export().secret] : [exported.secret];
  expectNoSecret(everyLogText(result), secrets, `${recipe.method}'s result`);
  if (typeof result === 'object' && result !== null && 'ok' in result) {
    expect(typeof result.ok).toBe('boolean');
    return { kind: 'result', answer: result.ok === true ? 'ok' : String((result as { reason?: unknown }).reason) };
  }
  return { kind: 'result', answer: typeof result };
}

/** Runs the property on `runs` sampled calls against `target`, and checks the mix reached both sides of it. */
export async function assertFuzzProperty(target: FuzzTarget, runs: number): Promise<void> {
  const endings = { invalid: 0, result: 0, typed: 0 };
  await fc.assert(
    fc.asyncProperty(calls(target.checkpointWithWrite, typeof target.leases.store.claimNext === 'function'), async (recipe) => {
      endings[await runCall(target, recipe)] += 1;
    }),
    { numRuns: runs },
  );
  // NOTE: the mix must reach both sides of the property, or it proves little.
  expect(endings.invalid).toBeGreaterThan(runs / 10);
  expect(endings.result).toBeGreaterThan(runs / 10);
}
