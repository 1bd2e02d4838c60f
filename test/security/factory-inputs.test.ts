/**
 * Issue 29 item 20: every factory of every entry (leasefence, /memory, /postgres, /redis, /sqlite, /otel,
 * /testing, /election, whose `campaign` and `observe` options are fuzzed too) answers bad input alike: `InvalidArgumentError` (INVALID_ARGUMENT), before any call on the
 * client it was given, never a plain TypeError or a getter's own error. Each factory gets hostile
 * arguments, and each of its options a hostile value in an otherwise valid call; fast-check adds arbitrary
 * values on top.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as root from '../../src/index.js';
import * as memory from '../../src/adapters/memory/index.js';
import * as otel from '../../src/otel/index.js';
import * as postgres from '../../src/adapters/postgres/index.js';
import * as redis from '../../src/adapters/redis/index.js';
import * as sqlite from '../../src/adapters/sqlite/index.js';
import * as testing from '../../src/testing/index.js';
import * as election from '../../src/election-entry.js';
import { suiteOptions } from '../../src/testing/harness.js';
import { isLeaseError } from '../../src/errors.js';

/** Every method called on the fake clients and runners, in order: a factory must call none. */
const calls: string[] = [];
const recorded =
  (name: string) =>
  (..._args: unknown[]): Promise<never> => {
    calls.push(name);
    return new Promise<never>(() => undefined);
  };

const throwingProxy = (): object =>
  new Proxy(
    {},
    {
      get: () => {
        throw new Error('proxy get');
      },
      has: () => {
        throw new Error('proxy has');
      },
      ownKeys: () => {
        throw new Error('proxy ownKeys');
      },
      getPrototypeOf: () => {
        throw new Error('proxy getPrototypeOf');
      },
    },
  );
const throwingGetter = (name: string, fields: object): object =>
  Object.defineProperty({ ...fields }, name, {
    enumerable: true,
    get: () => {
      throw new Error(`getter ${name}`);
    },
  });

const pgPool = () => ({ query: recorded('pg.query'), connect: recorded('pg.connect') });
const ioredis = () => ({
  status: 'ready',
  call: recorded('redis.call'),
  once: recorded('redis.once'),
  removeListener: recorded('redis.removeListener'),
  connect: recorded('redis.connect'),
});
const sqliteDatabase = () => ({ prepare: recorded('sqlite.prepare'), exec: recorded('sqlite.exec') });
const runner = () => ({
  describe: recorded('runner.describe'),
  it: recorded('runner.it'),
  beforeAll: recorded('runner.beforeAll'),
  afterAll: recorded('runner.afterAll'),
});

/** One factory: how to call it with a first argument, and the valid options whose fields are fuzzed. */
interface Factory {
  readonly name: string;
  readonly call: (input: unknown) => unknown;
  /** A valid input; `undefined` when the factory takes no options object (only hostile inputs are tried). */
  readonly valid?: () => Record<string, unknown>;
  /** Option names that may be left out. */
  readonly optional?: readonly string[];
}

const memoryStore = () => memory.createMemoryStore();
/** A memory store whose every method call is recorded in `calls`: a refused election call must make none. */
const recordedStore = () =>
  new Proxy(memoryStore(), {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(`store.${String(property)}`);
        return (value as (...params: unknown[]) => unknown).apply(target, args);
      };
    },
  });
const electionLeases = root.createLeases(recordedStore(), { holder: 'w' });
let electionKeys = 0;
/** An election on a key no earlier call used, so a valid campaign is elected at once. */
const anElection = () => {
  electionKeys += 1;
  return election.createElection(electionLeases, `election:${electionKeys}`);
};
const validTimers = () => ({ setTimeout: (callback: () => void, ms: number) => setTimeout(callback, ms), clearTimeout });
const factories: readonly Factory[] = [
  {
    name: 'createLeases',
    call: (input) => root.createLeases(memoryStore(), input as never),
    valid: () => ({ holder: 'w', ttlMs: 1000, maxCheckpointBytes: 10 }),
    optional: ['ttlMs', 'maxCheckpointBytes'],
  },
  { name: 'createLeases (store)', call: (input) => root.createLeases(input as never, { holder: 'w' }) },
  {
    name: 'createOperator',
    call: (input) => root.createOperator(memoryStore(), input as never),
    valid: () => ({ by: 'ops' }),
    optional: ['by'],
  },
  { name: 'createManualClock', call: (input) => memory.createManualClock(input as never) },
  {
    name: 'createMemoryStore',
    call: (input) => memory.createMemoryStore(input as never),
    valid: () => ({ clock: () => 0, tokenFloor: () => 0n }),
    optional: ['clock', 'tokenFloor'],
  },
  {
    name: 'createMemoryTokenGate',
    call: (input) => memory.createMemoryTokenGate(input as never),
    valid: () => ({ store: memoryStore() }),
    optional: ['store'],
  },
  {
    name: 'createPostgresStore',
    call: (input) => postgres.createPostgresStore(input as never),
    valid: () => ({ client: pgPool(), prepare: true, table: 'lf_leases', fencedTransactionMarginMs: 100, subscribeTimeoutMs: 1000 }),
    optional: ['prepare', 'table', 'fencedTransactionMarginMs', 'subscribeTimeoutMs'],
  },
  {
    name: 'createPostgresTokenGate',
    call: (input) => postgres.createPostgresTokenGate(input as never),
    valid: () => ({ client: pgPool(), table: 'lf_gate', leaseTable: 'lf_leases' }),
    optional: ['table', 'leaseTable'],
  },
  { name: 'fromPgClient', call: (input) => postgres.fromPgClient(input as never) },
  { name: 'fromPostgresJs', call: (input) => postgres.fromPostgresJs(input as never) },
  {
    name: 'createPostgresStore (fromPostgresJs)',
    call: (input) => postgres.createPostgresStore({ client: postgres.fromPostgresJs(input as never) }),
  },
  { name: 'postgresLeaseSchemaSql', call: (input) => postgres.postgresLeaseSchemaSql(input as never) },
  { name: 'postgresGateSchemaSql', call: (input) => postgres.postgresGateSchemaSql(input as never) },
  {
    name: 'createRedisStore',
    call: (input) => redis.createRedisStore(input as never),
    valid: () => ({ client: ioredis(), prefix: 'lf:', replayWindowMs: 1000, subscribeTimeoutMs: 1000 }),
    optional: ['prefix', 'replayWindowMs', 'subscribeTimeoutMs'],
  },
  {
    name: 'createRedisTokenGate',
    call: (input) => redis.createRedisTokenGate(input as never),
    valid: () => ({ client: ioredis(), prefix: 'lf:gate:', leasePrefix: 'lf:', replayWindowMs: 1000 }),
    optional: ['prefix', 'leasePrefix', 'replayWindowMs'],
  },
  { name: 'fromIoredis', call: (input) => redis.fromIoredis(input as never) },
  { name: 'fromIoredis (options)', call: (input) => redis.fromIoredis(ioredis() as never, input as never) },
  { name: 'fromNodeRedis', call: (input) => redis.fromNodeRedis(input as never) },
  { name: 'fromNodeRedisCluster', call: (input) => redis.fromNodeRedisCluster(input as never) },
  {
    name: 'createSqliteStore',
    call: (input) => sqlite.createSqliteStore(input as never),
    valid: () => ({ client: sqliteDatabase(), table: 'lf_leases', clock: () => 0, tokenFloor: () => 0n, busyTimeoutMs: 100 }),
    optional: ['table', 'clock', 'tokenFloor', 'busyTimeoutMs'],
  },
  {
    name: 'createSqliteTokenGate',
    call: (input) => sqlite.createSqliteTokenGate(input as never),
    valid: () => ({ client: sqliteDatabase(), table: 'lf_gate' }),
    optional: ['table'],
  },
  { name: 'sqliteLeaseSchemaSql', call: (input) => sqlite.sqliteLeaseSchemaSql(input as never) },
  { name: 'sqliteGateSchemaSql', call: (input) => sqlite.sqliteGateSchemaSql(input as never) },
  {
    name: 'instrumentLeasefence',
    call: (input) => otel.instrumentLeasefence(input as never).disable(),
    valid: () => ({ spans: false, maxHeldLeases: 10 }),
    optional: ['spans', 'maxHeldLeases', 'meter', 'tracer'],
  },
  {
    name: 'describeStoreSuites (runner)',
    call: (input) => testing.describeStoreSuites(input as never, 'store', testing.createMemoryHarness as never),
  },
  {
    name: 'describeStoreSuites (options)',
    call: (input) => testing.describeStoreSuites(runner() as never, 'store', testing.createMemoryHarness as never, input as never),
    valid: () => ({ modelRuns: 1, raceRuns: 1, workers: 1, seed: 1 }),
    optional: ['modelRuns', 'raceRuns', 'workers', 'seed'],
  },
  { name: 'describeStoreSuites (harness)', call: (input) => testing.describeStoreSuites(runner() as never, 'store', input as never) },
  {
    name: 'createElection',
    call: (input) => election.createElection(electionLeases, 'election:options', input as never),
    valid: () => ({ ttlMs: 1000, pollMs: 100, retryDelayMs: 100, timers: validTimers() }),
    optional: ['ttlMs', 'pollMs', 'retryDelayMs', 'timers'],
  },
  { name: 'createElection (leases)', call: (input) => election.createElection(input as never, 'election:leases') },
  { name: 'createElection (key)', call: (input) => election.createElection(electionLeases, input as never) },
  {
    name: 'campaign',
    call: async (input) => {
      const candidate = anElection();
      const running = candidate.campaign(input as never);
      // NOTE: a valid campaign is elected and leads until it resigns; a refused one has already rejected.
      await Promise.race([running, new Promise((resolve) => setImmediate(resolve))]);
      await candidate.resign();
      await running;
    },
    valid: () => ({ onElected: () => undefined, onDemoted: () => undefined, signal: new AbortController().signal }),
    optional: ['onDemoted', 'signal'],
  },
  {
    name: 'observe',
    call: async (input) => (await anElection().observe(() => undefined, input as never))(),
    valid: () => ({ signal: new AbortController().signal }),
    optional: ['signal'],
  },
  { name: 'observe (onChange)', call: async (input) => (await anElection().observe(input as never))() },
  { name: 'createMemoryHarness', call: (input) => testing.createMemoryHarness(input as never) },
  {
    name: 'suiteOptions',
    call: (input) => suiteOptions(input as never),
    valid: () => ({ modelRuns: 1, raceRuns: 1, workers: 1, seed: 1 }),
    optional: ['modelRuns', 'raceRuns', 'workers', 'seed'],
  },
];

/** Values no factory or option accepts (or only some do: then it must work). */
const hostileValues = (): unknown[] => [null, 5, -1, 1.5, Number.NaN, '', 'x', true, [], {}, () => 1, 10n, Symbol('s'), throwingProxy()];

/** Runs `call(input)`: it returns, or throws INVALID_ARGUMENT having called no client method. */
async function answerOf(factory: Factory, input: unknown): Promise<'ok' | 'invalid'> {
  calls.length = 0;
  let answer: 'ok' | 'invalid' = 'ok';
  try {
    await factory.call(input);
  } catch (error) {
    if (!isLeaseError(error, 'INVALID_ARGUMENT')) {
      throw new Error(
        `${factory.name}(${describeInput(input)}) threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`,
        { cause: error },
      );
    }
    answer = 'invalid';
    // NOTE: a valid call may set its connection up (SQLite's busy timeout); a refused one touched nothing.
    expect(calls, `${factory.name}(${describeInput(input)}) called its client before refusing`).toEqual([]);
  }
  return answer;
}

function describeInput(input: unknown): string {
  try {
    return typeof input === 'object' && input !== null
      ? `{ ${Object.keys(input).join(', ')} }`
      : typeof input === 'symbol'
        ? 'a symbol'
        : String(input);
  } catch {
    return 'a hostile object';
  }
}

describe('every factory of every entry refuses bad input with INVALID_ARGUMENT before any I/O', () => {
  it.each(factories.map((factory) => [factory.name, factory] as const))(
    '%s: hostile arguments, and each option hostile in a valid call',
    async (_name, factory) => {
      for (const input of [undefined, ...hostileValues()]) await answerOf(factory, input);
      if (factory.valid === undefined) return;
      expect(await answerOf(factory, factory.valid())).toBe('ok');
      for (const name of Object.keys(factory.valid())) {
        await answerOf(factory, throwingGetter(name, factory.valid()));
        for (const value of hostileValues()) await answerOf(factory, { ...factory.valid(), [name]: value });
        if (!(factory.optional ?? []).includes(name)) {
          const { [name]: _left, ...without } = factory.valid();
          expect(await answerOf(factory, without), `${factory.name} without ${name}`).toBe('invalid');
        }
      }
    },
  );

  it('arbitrary values as arguments and as options', async () => {
    const anything = fc.anything({
      withBigInt: true,
      withNullPrototype: true,
      withBoxedValues: true,
      withMap: true,
      withDate: true,
      maxDepth: 2,
    });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...factories), anything, fc.boolean(), fc.nat(), async (factory, value, asOption, pick) => {
        const valid = factory.valid?.();
        if (!asOption || valid === undefined) return void (await answerOf(factory, value));
        const names = Object.keys(valid);
        await answerOf(factory, { ...valid, [names[pick % names.length]!]: value });
      }),
      { numRuns: 500 },
    );
  });
});
