/**
 * What a store's test file hands to the shared conformance, model-based and race suites.
 * Every adapter (memory, Postgres via pg / postgres.js / PGlite, Redis via ioredis / node-redis, SQLite, or
 * yours) provides one `StoreHarness` factory; the suites never know which backend they run against.
 */
import type { FencedWriteOutcome, StoreFencedWriteOptions } from '../fence/operations.js';
import type { Fence } from '../fence/types.js';
import type { Lease } from '../lease.js';
import type { FencedWriteOptions, Leases } from '../leases-types.js';
import type { Store } from '../store.js';
import { InvalidArgumentError } from '../errors.js';
import { describe, readOptions } from '../validate.js';
import type { TestRunner } from './runner.js';

/** A store under test and the test hooks the suites drive it with. */
export interface StoreHarness<S extends Store = Store> {
  /** The store under test. Several `createLeases` instances (one per simulated worker) share it. */
  readonly store: S;
  /**
   * A second (third, ...) store instance on the same backend but its own connection(s), for race suites
   * that need several real connections at once. The memory harness returns `store` itself.
   */
  connect(): Promise<S>;
  /**
   * Appends `entry` to the ledger of `lease.key` inside the store, as a fenced write: applied only if the
   * lease is current, atomically with the check (Postgres: a row inserted in the fenced transaction; Redis:
   * an RPUSH inside the fence script; memory: an array push in the callback).
   * With `options` (a checkpoint), it goes through `leases.fencedWrite(lease, write, options)`, so the entry
   * and the checkpoint are saved in the same atomic step (a statement-only form must not drop the checkpoint).
   */
  appendUnderFence(leases: Leases<S>, lease: Lease, entry: string, options?: FencedWriteOptions): Promise<FencedWriteOutcome<unknown>>;
  /**
   * The same append as a fenced write on the store itself (`store.fencedWrite(fence, write, options)`, not
   * through `Leases`), with the store-level options: a checkpoint's JSON text, a submission. With `refuse`, the
   * callback reads the key's ledger in the fenced step and then refuses itself with that code and detail through
   * its write context (memory: `context.refuse(code, detail)`), so the store must answer `write-refused` and
   * apply nothing. A store that rolls back writes appends `entry` before refusing; one that does not
   * (`rollsBackWrites: false`) refuses before appending.
   */
  fencedAppend(
    fence: Fence,
    entry: string,
    options?: StoreFencedWriteOptions,
    refuse?: { readonly code: string; readonly detail?: string },
  ): Promise<FencedWriteOutcome<unknown>>;
  /** The ledger of `key` in append order (entries applied by `appendUnderFence` and `fencedAppend`). */
  readLedger(key: string): Promise<string[]>;
  /**
   * Makes the current grant of `key` expire now on the store's clock (test hook: Postgres sets expires_at to
   * clock_timestamp(), Redis rewrites the stored expiry, memory advances its clock to the grant's expires-at).
   * Afterwards, by the store's clock, the grant is expired.
   */
  expireNow(key: string): Promise<void>;
  /**
   * Advances the store's clock by `ms`, only for stores whose clock the test controls (memory). `null` for
   * real servers, whose suites use `expireNow` and real waiting instead.
   * Non-null also tells the race suite that the store lives in this process and applies each request
   * within a few microtasks of receiving it, so the order its answers arrive in is its apply order.
   */
  readonly advanceClock: ((ms: number) => void) | null;
  /**
   * Capability: whether a fenced write whose callback throws after writing leaves nothing of that write in
   * the backend (the write is rolled back together with the fence check, as in a SQL transaction or a
   * script that runs the recorded commands only after the callback returned). Declare `false` when the
   * callback writes data the store cannot undo (the memory store's callback pushes to a plain JS array):
   * the spec "applies neither when the write callback throws" then checks only the checkpoint half, which
   * is the store's to keep either way.
   * @default true
   */
  readonly rollsBackWrites?: boolean;
  /** A key no earlier test used: every property run takes fresh keys instead of truncating tables. */
  freshKey(label?: string): string;
  /** Closes every connection this harness (and `connect()`) opened. */
  close(): Promise<void>;
}

/** Opens a harness on a fresh store; each suite opens one before its tests and closes it after them. */
export type MakeStoreHarness<S extends Store = Store> = () => Promise<StoreHarness<S>>;

/** Per-store tuning of the shared suites (real servers run fewer, slower property runs). */
export interface SuiteOptions {
  /**
   * fast-check runs of the model-based suite (one run: up to 40 random operations on a fresh key).
   * @default 100
   */
  readonly modelRuns?: number;
  /**
   * fast-check runs of the race suite (one run: every worker's random program on one fresh key).
   * @default 100
   */
  readonly raceRuns?: number;
  /**
   * Concurrent workers in the race suite, each on its own store from `connect()`.
   * @default 3
   */
  readonly workers?: number;
  /**
   * fast-check seed of the model-based and race properties, to replay a failure (its report prints it).
   * @default fast-check's: random, or the seed set with `fc.configureGlobal`
   */
  readonly seed?: number;
}

/**
 * Refuses what the suites cannot run with (before registering anything): a runner without `describe`, `it`,
 * `beforeAll` and `afterAll`, an empty name, a harness factory that is no function, bad options.
 */
export function assertSuiteArguments(runner: TestRunner, name: string, makeHarness: unknown, options: SuiteOptions | undefined): void {
  let usable: boolean;
  try {
    usable =
      typeof runner === 'object' &&
      runner !== null &&
      (['describe', 'it', 'beforeAll', 'afterAll'] as const).every((method) => typeof runner[method] === 'function');
  } catch {
    usable = false;
  }
  if (!usable) throw new InvalidArgumentError("the runner must have describe, it, beforeAll and afterAll (your test framework's)");
  if (typeof name !== 'string' || name === '')
    throw new InvalidArgumentError(`the suite name must be a non-empty string, got ${describe(name)}`);
  if (typeof makeHarness !== 'function')
    throw new InvalidArgumentError(`makeHarness must be a function returning a StoreHarness, got ${describe(makeHarness)}`);
  suiteOptions(options);
}

/** `options` with every default filled in (`seed` stays optional). */
export function suiteOptions(given: SuiteOptions | undefined): Required<Omit<SuiteOptions, 'seed'>> & Pick<SuiteOptions, 'seed'> {
  const options = readOptions('suite options', given, ['modelRuns', 'raceRuns', 'workers', 'seed']) as SuiteOptions;
  // NOTE: 0 runs leaves a suite out.
  for (const [name, least] of [
    ['modelRuns', 0],
    ['raceRuns', 0],
    ['workers', 1],
  ] as const) {
    const value = options[name];
    if (value !== undefined && (typeof value !== 'number' || !Number.isSafeInteger(value) || value < least))
      throw new InvalidArgumentError(`${name} must be an integer of at least ${least}, got ${describe(value)}`);
  }
  if (options.seed !== undefined && (typeof options.seed !== 'number' || !Number.isSafeInteger(options.seed)))
    throw new InvalidArgumentError(`seed must be an integer, got ${describe(options.seed)}`);
  return {
    modelRuns: options.modelRuns ?? 100,
    raceRuns: options.raceRuns ?? 100,
    workers: options.workers ?? 3,
    ...(options.seed === undefined ? {} : { seed: options.seed }),
  };
}
