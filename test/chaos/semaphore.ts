/**
 * The semaphore workload (`npm run chaos -- --workload semaphore`): workers acquire permits of one semaphore
 * (`Store.acquirePermit`, limit 3, now and then an acquire with limit 2 to exercise a shrinking semaphore), work a
 * little, append an entry (their token) to the permit key's ledger with a fenced write, and release. The harness
 * injects lost replies (it records the store's true answer and drops it for the worker; a lost acquire reply is
 * sometimes re-sent with the same secret, a re-delivery), crashes (no release: the permit expires and is taken
 * over), pauses past the TTL followed by a stale fenced write, an operator revoking a live permit, and on
 * PostgreSQL and Redis a nemesis cutting every worker connection (a driver error: the outcome is unknown). After
 * the fault phase the workers finish without faults for two TTLs; once every grant has expired, `limit` acquires in
 * a row must each be granted (no permit lost); semaphore-checker.ts checks the history and the permit keys' ledgers.
 *
 * A store without `acquirePermit` (the method is optional) is reported unsupported and skipped. Everything talks to
 * the Store contract directly, as the queue workload does.
 */
import { randomBytes } from 'node:crypto';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import type { PostgresWriteContext } from '../../src/adapters/postgres/index.js';
import type { RedisWriteContext } from '../../src/adapters/redis/index.js';
import type { SqliteWriteContext } from '../../src/adapters/sqlite/index.js';
import type { FencedWriteOutcome } from '../../src/fence/operations.js';
import { permitKey, type AcquirePermitCommand, type AcquirePermitOutcome } from '../../src/fence/permits.js';
import type { Fence } from '../../src/fence/types.js';
import type { Store } from '../../src/store.js';
import { CLIENTS, type ClientKind, type StoreAdmin, type StoreKind } from './backend.js';
import { ledgerKey } from './backend-redis.js';
import { createAdmin, createBackend } from './backends.js';
import { decodeEntry, encodeEntry } from './history.js';
import { delegatingStore } from './mutants.js';
import { createRandom, type Random } from './prng.js';
import {
  checkSemaphore,
  semaphoreFigures,
  type PermitEnding,
  type PermitGrant,
  type PermitUnsureEnding,
  type PermitWriteAttempt,
  type SemaphoreFigures,
  type SemaphoreViolation,
} from './semaphore-checker.js';

/** The stores the semaphore workload runs on (those without `acquirePermit` are reported and skipped). */
export type SemaphoreStore = 'memory' | Extract<StoreKind, 'postgres' | 'redis' | 'sqlite'>;
export const SEMAPHORE_STORES: readonly SemaphoreStore[] = ['memory', 'postgres', 'redis', 'sqlite'];

/**
 * Planted bugs the checker must catch: `over-limit` ignores the limit when the store answers full (a `claim` of the
 * next permit key past the limit that is not live: its token is its own key's, too); `uncounted-above-limit` counts
 * only the live permits 1..limit (a semaphore shrunk while permits above the new limit live grants too many: the
 * store's own acquire, asked again with the limit raised by the live permits above it, so tokens stay right);
 * `unfenced-write` applies a write whose fence no longer holds (memory: the write runs after the refusal; the
 * server stores: test/chaos/mutants.ts's); `racy-acquire` counts the live permits 1..limit (`inspect`) and then
 * claims a free one in a second step (acquirers racing both see `limit - 1` live; tokens are each key's own): it
 * needs no `acquirePermit` of the store, so it runs the whole workload on a store that has none yet.
 */
export type SemaphoreVariant = 'over-limit' | 'uncounted-above-limit' | 'unfenced-write' | 'racy-acquire';
export const SEMAPHORE_VARIANTS: readonly SemaphoreVariant[] = ['over-limit', 'uncounted-above-limit', 'unfenced-write', 'racy-acquire'];

export interface SemaphoreRunOptions {
  readonly store: SemaphoreStore;
  /** The server's URL (a database file for SQLite); ignored for memory. */
  readonly url: string | null;
  readonly seed: number;
  /** The fault phase; two TTLs without faults come after it. */
  readonly durationMs: number;
  readonly variant: SemaphoreVariant | null;
  readonly clients?: readonly ClientKind[];
  /** @default 8 */
  readonly workers?: number;
  /** @default 3 */
  readonly limit?: number;
  /** @default 300 */
  readonly ttlMs?: number;
  readonly log?: (line: string) => void;
  /** The memory store to run on (a test's store without semaphores); default `createMemoryStore()`. */
  readonly makeMemoryStore?: () => Store;
}

export interface SemaphoreRunResult {
  readonly store: SemaphoreStore;
  readonly seed: number;
  /** `false`: the store has no `acquirePermit`; nothing ran. */
  readonly supported: boolean;
  readonly violations: readonly SemaphoreViolation[];
  readonly figures: SemaphoreFigures | null;
  /** Acquires answered full (the worker backed off). */
  readonly full: number;
  /** Acquires re-sent after a lost reply that the store answered with the grant it had made (a re-delivery). */
  readonly redelivered: number;
  /** Store calls a driver error answered (their outcome unknown; not the harness's lost replies). */
  readonly driverUnknowns: number;
  /** Worker connections the nemesis cut (PostgreSQL, Redis). */
  readonly connectionKills: number;
}

const FENCE_REASONS = new Set(['missing', 'not-held', 'expired', 'superseded', 'released', 'revoked', 'state-changed']);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
type LedgerWrite = (context: unknown, key: string, entry: string) => unknown;

/** The ledger write inside the fenced step, per store (the tables and lists the queue workload uses). */
function ledgerWriter(store: SemaphoreStore, memoryLedgers: Map<string, string[]>): LedgerWrite {
  if (store === 'postgres')
    return (context, key, entry) =>
      (context as PostgresWriteContext).query('INSERT INTO chaos_ledger (key, entry) VALUES ($1, $2)', [key, entry]);
  if (store === 'redis')
    return (context, key, entry) => {
      void (context as RedisWriteContext).call('RPUSH', ledgerKey(key), entry);
    };
  if (store === 'sqlite')
    return (context, key, entry) => (context as SqliteWriteContext).run('INSERT INTO chaos_ledger (key, entry) VALUES (?, ?)', key, entry);
  return (_context, key, entry) => {
    const ledger = memoryLedgers.get(key) ?? [];
    ledger.push(entry);
    memoryLedgers.set(key, ledger);
  };
}

/** `store` with the planted bug `variant` (a server store's `unfenced-write` comes from its backend instead). */
export function plantedSemaphoreBug(store: Store, variant: SemaphoreVariant | null, isMemory: boolean): Store {
  if (variant === null || (variant === 'unfenced-write' && !isMemory)) return store;
  if (variant === 'racy-acquire') return { ...delegatingStore(store), acquirePermit: (command) => racyAcquire(store, command) };
  const acquire = store.acquirePermit?.bind(store);
  if (acquire === undefined) return store;
  const mutant: Store = { ...delegatingStore(store), acquirePermit: acquire };
  if (variant === 'over-limit') {
    mutant.acquirePermit = async (command) => {
      const outcome = await acquire(command);
      if (outcome.ok) return outcome;
      // NOTE: the bug: full, so it claims the first permit past the limit that is not live, as if uncounted.
      const live = new Set(outcome.live.map((holder) => holder.index));
      let index = command.limit + 1;
      while (live.has(index)) index += 1;
      const { semaphore, limit, ...fields } = command;
      const claimed = await store.claim({ ...fields, key: permitKey(semaphore, index) });
      if (!claimed.ok) return outcome;
      return { ...claimed, semaphore, index, limit, live: outcome.live.length + 1 };
    };
  } else if (variant === 'uncounted-above-limit') {
    mutant.acquirePermit = async (command) => {
      const outcome = await acquire(command);
      const above = outcome.ok ? 0 : outcome.live.filter((holder) => holder.index > command.limit).length;
      if (outcome.ok || above === 0) return outcome;
      // NOTE: the bug: the live permits above the limit are not counted (they are let in as extra room).
      const again = await acquire({ ...command, limit: command.limit + above });
      return again.ok ? { ...again, limit: command.limit } : outcome;
    };
  } else {
    // NOTE: memory's write context is plain data; the bug runs the write although the fence refused it.
    mutant.fencedWrite = async <T>(
      fence: Fence,
      write: (context: unknown) => T | Promise<T>,
      options?: Parameters<Store['fencedWrite']>[2],
    ) => {
      const outcome = await store.fencedWrite(fence, write, options);
      if (outcome.ok || !FENCE_REASONS.has(outcome.reason)) return outcome;
      const value = await write({ token: fence.token, now: outcome.now, refuse: () => undefined });
      return { ok: true, value, token: fence.token, checkpoint: null, now: outcome.now } as FencedWriteOutcome<T>;
    };
  }
  return mutant;
}

/** The planted bug `racy-acquire`: count (one `inspect` per permit up to the limit), then `claim` a free permit. */
async function racyAcquire(store: Store, command: AcquirePermitCommand): Promise<AcquirePermitOutcome> {
  const { semaphore, limit, ...fields } = command;
  const indexes = Array.from({ length: limit }, (_, i) => i + 1);
  const inspections = await Promise.all(indexes.map((index) => store.inspect(permitKey(semaphore, index))));
  const live = inspections.filter((inspection) => inspection.grant?.live === true);
  const free = indexes.find((index) => inspections[index - 1]?.grant?.live !== true);
  const now = inspections[0]?.now ?? 0;
  const full: AcquirePermitOutcome = { ok: false, reason: 'full', semaphore, limit, live: [], unavailable: [], nextAt: null, now };
  if (live.length >= limit || free === undefined) return full;
  // NOTE: the window between the count and the grant, where another acquirer counts the same permits.
  await sleep(1);
  const claimed = await store.claim({ ...fields, key: permitKey(semaphore, free) });
  return claimed.ok ? { ...claimed, semaphore, index: free, limit, live: live.length + 1 } : full;
}

interface Recorder {
  readonly grants: PermitGrant[];
  readonly writes: PermitWriteAttempt[];
  readonly endings: PermitEnding[];
  readonly unsureEndings: PermitUnsureEnding[];
  /** Grants the workers learned and have not ended, by `key#token` (the operator revokes one of these). */
  readonly held: Map<string, PermitGrant>;
  full: number;
  redelivered: number;
  driverUnknowns: number;
}

interface Faults {
  on: boolean;
  /** The semaphore is shrunk for now: most acquires give the lower limit (live grants above it run on). */
  shrunk: boolean;
}

interface WorkerSetup {
  readonly proc: string;
  readonly store: Store;
  readonly acquire: (command: AcquirePermitCommand) => Promise<AcquirePermitOutcome>;
  readonly random: Random;
  readonly semaphore: string;
  readonly limit: number;
  readonly ttlMs: number;
  readonly write: LedgerWrite;
  readonly recorder: Recorder;
  readonly faults: Faults;
  stopped(): boolean;
}

/** Runs the workload on one store and checks it. */
export async function runSemaphoreWorkload(options: SemaphoreRunOptions): Promise<SemaphoreRunResult> {
  const log = options.log ?? (() => undefined);
  const random = createRandom(options.seed);
  const ttlMs = options.ttlMs ?? 300;
  const limit = options.limit ?? 3;
  const workerCount = options.workers ?? 8;
  const memoryLedgers = new Map<string, string[]>();
  const write = ledgerWriter(options.store, memoryLedgers);
  const semaphore = `sem${options.seed.toString(36)}${randomBytes(3).toString('hex')}`;

  // Connections: memory shares one store; a server store gets up to 4 worker connections over its drivers.
  let admin: StoreAdmin | null = null;
  const closers: Array<() => Promise<void>> = [];
  const stores: Store[] = [];
  const closeAll = async (): Promise<void> => {
    for (const close of closers) await close().catch(() => undefined);
    await admin?.close().catch(() => undefined);
  };
  if (options.store === 'memory') {
    stores.push(plantedSemaphoreBug((options.makeMemoryStore ?? createMemoryStore)(), options.variant, true));
  } else {
    const url = options.url;
    if (url === null) throw new Error(`the semaphore workload on ${options.store} needs a server URL`);
    admin = await createAdmin(options.store, url);
    const drivers = options.clients?.filter((client) => CLIENTS[options.store as StoreKind].includes(client)) ?? [];
    const serverVariant = options.variant === 'unfenced-write' ? 'unfenced-write' : null;
    // NOTE: the server stores' planted bugs wrap the store's first driver only (test/chaos/mutants.ts).
    const mix = serverVariant !== null ? CLIENTS[options.store].slice(0, 1) : drivers.length > 0 ? drivers : CLIENTS[options.store];
    for (let i = 0; i < Math.min(4, workerCount); i += 1) {
      const backend = await createBackend(options.store, url, mix[i % mix.length] as ClientKind, serverVariant, `ws${i}`);
      closers.push(() => backend.close());
      stores.push(plantedSemaphoreBug(backend.store, options.variant, false));
    }
  }
  try {
    const unsupported = stores.find((store) => store.acquirePermit === undefined);
    if (unsupported !== undefined) {
      log(`    ${options.store} has no acquirePermit (Store.acquirePermit is optional): unsupported, skipped`);
      return {
        store: options.store,
        seed: options.seed,
        supported: false,
        violations: [],
        figures: null,
        full: 0,
        redelivered: 0,
        driverUnknowns: 0,
        connectionKills: 0,
      };
    }

    const recorder: Recorder = {
      grants: [],
      writes: [],
      endings: [],
      unsureEndings: [],
      held: new Map(),
      full: 0,
      redelivered: 0,
      driverUnknowns: 0,
    };
    const faults: Faults = { on: true, shrunk: false };
    let stopped = false;
    const workers = Array.from({ length: workerCount }, (_, i) => {
      const store = stores[i % stores.length] as Store;
      return runWorker({
        proc: `w${i}`,
        store,
        acquire: (store.acquirePermit as NonNullable<Store['acquirePermit']>).bind(store),
        random: random.fork(`worker-${i}`),
        semaphore,
        limit,
        ttlMs,
        write,
        recorder,
        faults,
        stopped: () => stopped,
      });
    });
    // The operator: now and then revokes a live permit (as a dashboard showed it: with its token expected).
    const operator = (async () => {
      const operatorRandom = random.fork('operator');
      while (faults.on) {
        await sleep(operatorRandom.int(100, 400));
        const held = [...recorder.held.values()];
        if (!faults.on || held.length === 0) continue;
        await revokeOne(stores[0] as Store, operatorRandom.pick(held), recorder);
      }
    })();
    // NOTE: windows in which the semaphore is shrunk: grants under the higher limit are live when they start, so the
    // lower limit's acquires are refused until enough of them end (a lone lower-limit acquire rarely gets a permit).
    const shrinker = (async () => {
      const shrinkRandom = random.fork('shrinker');
      while (faults.on) {
        await sleep(shrinkRandom.int(200, 800));
        faults.shrunk = faults.on && !faults.shrunk;
      }
      faults.shrunk = false;
    })();
    // NOTE: the server stores' nemesis: every worker connection cut now and then (real unknown outcomes).
    let connectionKills = 0;
    const nemesis = (async () => {
      const nemesisRandom = random.fork('nemesis');
      while (admin !== null && faults.on) {
        await sleep(nemesisRandom.int(300, 1500));
        if (faults.on) connectionKills += await admin.killConnections().catch(() => 0);
      }
    })();
    await sleep(options.durationMs);
    faults.on = false;
    await operator;
    await shrinker;
    await nemesis;
    // NOTE: two TTLs without faults: every grant of the fault phase has ended, and the workers still get permits.
    await sleep(2 * ttlMs);
    stopped = true;
    await bounded(Promise.all(workers), 'the workers to stop');
    // NOTE: once every grant has expired, the semaphore must grant `limit` permits at once: none was lost.
    await sleep(ttlMs + 50);
    const stuck = await bounded(acquireAll(stores[0] as Store, semaphore, limit, ttlMs, recorder), 'the final acquires');

    // The final ledgers of every permit key any grant was made on, in apply order.
    const keys = [...new Set(recorder.grants.map((grant) => grant.key))];
    const entries = async (key: string): Promise<Array<{ reqId: string; token: string }>> => {
      if (admin === null) return (memoryLedgers.get(key) ?? []).map(decodeEntry);
      return [...((await admin.readFinal([key]))[0]?.ledger ?? [])];
    };
    const ledgers = new Map<string, Array<{ writeId: string; token: string }>>();
    for (const key of keys)
      ledgers.set(
        key,
        (await entries(key)).map((entry) => ({ writeId: entry.reqId, token: entry.token })),
      );
    const history = {
      semaphore,
      grants: recorder.grants,
      writes: recorder.writes,
      endings: recorder.endings,
      unsureEndings: recorder.unsureEndings,
      ledgers,
    };
    return {
      store: options.store,
      seed: options.seed,
      supported: true,
      violations: [...checkSemaphore(history), ...stuck],
      figures: semaphoreFigures(history),
      full: recorder.full,
      redelivered: recorder.redelivered,
      driverUnknowns: recorder.driverUnknowns,
      connectionKills,
    };
  } finally {
    await closeAll();
  }
}

/**
 * After every grant ended: `limit` acquires in a row, each must be granted (recorded as grants, left to expire);
 * a `stuck` violation for each answered full (a permit the store never frees).
 */
async function acquireAll(
  store: Store,
  semaphore: string,
  limit: number,
  ttlMs: number,
  recorder: Recorder,
): Promise<SemaphoreViolation[]> {
  const violations: SemaphoreViolation[] = [];
  const acquire = store.acquirePermit as NonNullable<Store['acquirePermit']>;
  for (let i = 1; i <= limit; i += 1) {
    const runId = `final-${i}`;
    const secret = randomBytes(16).toString('hex');
    const outcome = await acquire.call(store, {
      semaphore,
      limit,
      holder: 'final',
      runId,
      secret,
      ttlMs,
      attributes: {},
      recovering: false,
    });
    if (!outcome.ok) {
      violations.push({
        rule: 'stuck',
        key: permitKey(semaphore, i),
        detail: `acquire ${i} of ${limit} answered full after every grant ended: live ${outcome.live.map((holder) => `${holder.key}@${holder.token}`).join(', ') || 'none'}, unavailable ${outcome.unavailable.join(', ') || 'none'}`,
      });
      continue;
    }
    recorder.grants.push({
      key: outcome.key,
      token: outcome.token.toString(),
      runId,
      limit,
      acquiredAt: outcome.acquiredAt,
      expiresAt: outcome.expiresAt,
    });
  }
  return violations;
}

/** `work`, or an error after 30 s: a store call that never settles would otherwise hang the round silently. */
async function bounded<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stuck = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`waited 30 s for ${what} (a store call that never settles)`)), 30_000);
  });
  try {
    return await Promise.race([work, stuck]);
  } finally {
    clearTimeout(timer);
  }
}

/** An operator's revoke of `grant` (expected token: a grant that ended meanwhile is not revoked); recorded. */
async function revokeOne(store: Store, grant: PermitGrant, recorder: Recorder): Promise<void> {
  try {
    const outcome = await store.revoke({
      key: grant.key,
      reason: 'chaos operator',
      by: 'operator',
      requireRecovery: false,
      expectedToken: BigInt(grant.token),
    });
    if (outcome.ok) {
      recorder.endings.push({ key: grant.key, token: outcome.revoked.token.toString(), kind: 'revoked', now: outcome.now });
      recorder.held.delete(`${grant.key}#${outcome.revoked.token}`);
    }
  } catch {
    recorder.driverUnknowns += 1;
    // NOTE: the operator knows no store time within the grant but its start: it may have ended any time since.
    recorder.unsureEndings.push({ key: grant.key, token: grant.token, after: grant.acquiredAt });
  }
}

/** One worker: acquire, work, fenced write, release, until stopped. */
async function runWorker(setup: WorkerSetup): Promise<void> {
  const { random, recorder, faults, ttlMs } = setup;
  let runs = 0;
  while (!setup.stopped()) {
    runs += 1;
    const runId = `${setup.proc}-r${runs}`;
    let acquired: { grant: PermitGrant; fence: Fence } | null;
    try {
      acquired = await acquireOne(setup, runId);
    } catch {
      recorder.driverUnknowns += 1;
      await sleep(random.int(5, 20));
      continue;
    }
    if (acquired === null) {
      await sleep(random.int(5, 25));
      continue;
    }
    const { grant, fence } = acquired;
    recorder.held.set(`${grant.key}#${grant.token}`, grant);
    await sleep(random.int(2, 15));
    if (faults.on && random.chance(0.08)) {
      recorder.held.delete(`${grant.key}#${grant.token}`);
      continue; // crashed: no write, no release; the permit expires and is taken over
    }
    if (faults.on && random.chance(0.08)) await sleep(random.int(ttlMs, 2 * ttlMs)); // paused past the TTL: a stale write follows
    const latest = await writeEntry(setup, fence, `${runId}-x1`);
    await releaseGrant(setup, fence, latest ?? grant.acquiredAt);
    recorder.held.delete(`${grant.key}#${grant.token}`);
  }
}

/**
 * Acquires a permit: records the store's answer (a grant, even when its reply is lost on the way back); a lost reply
 * is re-sent with the same secret now and then (a re-delivery answers the same grant). Returns the grant the worker
 * learned and its fence, `null` when none (full, or the reply lost).
 */
async function acquireOne(setup: WorkerSetup, runId: string): Promise<{ grant: PermitGrant; fence: Fence } | null> {
  const { random, recorder, faults } = setup;
  // NOTE: a lower limit now and then, and mostly while the semaphore is shrunk (grants under the higher one live on).
  const lower = random.chance(faults.shrunk ? 0.8 : 0.05);
  const limit = lower ? Math.max(1, setup.limit - 1) : setup.limit;
  const command: AcquirePermitCommand = {
    semaphore: setup.semaphore,
    limit,
    holder: setup.proc,
    runId,
    secret: randomBytes(16).toString('hex'),
    ttlMs: setup.ttlMs,
    attributes: {},
    recovering: false,
  };
  let lost: string | null = null;
  for (let attempt = 0; attempt < 2; attempt += 1) {
    const outcome = await setup.acquire(command);
    if (outcome.ok && `${outcome.key}#${outcome.token}` === lost) recorder.redelivered += 1;
    if (!outcome.ok) {
      recorder.full += 1;
      return null;
    }
    const grant: PermitGrant = {
      key: outcome.key,
      token: outcome.token.toString(),
      runId,
      limit,
      acquiredAt: outcome.acquiredAt,
      expiresAt: outcome.expiresAt,
    };
    recorder.grants.push(grant);
    if (!(faults.on && random.chance(0.1)))
      return { grant, fence: { key: outcome.key, token: outcome.token, secret: command.secret, holder: setup.proc, runId } };
    // The reply is lost: the grant lives until it expires, unless the worker asks again.
    lost = `${outcome.key}#${outcome.token}`;
    if (!random.chance(0.5)) return null;
  }
  return null;
}

/**
 * Appends the grant's entry with a fenced write (re-sent under a new write id when the reply is lost: each entry
 * its own write); records every answer. Returns the latest store time known within the grant (`null`: none).
 */
async function writeEntry(setup: WorkerSetup, fence: Fence, writeId: string): Promise<number | null> {
  const { store, random, recorder, faults, ttlMs } = setup;
  let latest: number | null = null;
  for (let attempt = 1; attempt <= 3; attempt += 1) {
    const id = attempt === 1 ? writeId : `${writeId}-${attempt}`;
    const entry = encodeEntry({ reqId: id, token: fence.token.toString() });
    let outcome: FencedWriteOutcome<unknown>;
    try {
      outcome = await store.fencedWrite(fence, (context) => setup.write(context, fence.key, entry));
    } catch {
      recorder.driverUnknowns += 1;
      recorder.writes.push({ key: fence.key, token: fence.token.toString(), writeId: id, answer: 'error', now: null, delivered: true });
      return latest;
    }
    const lost = faults.on && random.chance(0.1);
    recorder.writes.push({
      key: fence.key,
      token: fence.token.toString(),
      writeId: id,
      answer: outcome.ok ? 'applied' : outcome.reason,
      now: outcome.now,
      delivered: !lost,
    });
    if (outcome.ok) latest = outcome.now;
    if (!lost) return latest;
    // NOTE: the worker does not know whether it landed: sometimes it waits past its TTL before writing again.
    if (faults.on && random.chance(0.3)) await sleep(random.int(ttlMs, 2 * ttlMs));
  }
  return latest;
}

/** Releases the grant (re-sent once when the reply is lost: answered already-released); records the store's answer. */
async function releaseGrant(setup: WorkerSetup, fence: Fence, latest: number): Promise<void> {
  const { store, random, recorder, faults } = setup;
  for (let attempt = 0; attempt < 2; attempt += 1) {
    let released: Awaited<ReturnType<Store['release']>>;
    try {
      released = await store.release({ fence });
    } catch {
      recorder.driverUnknowns += 1;
      recorder.unsureEndings.push({ key: fence.key, token: fence.token.toString(), after: latest });
      return;
    }
    if (released.ok && !released.alreadyReleased)
      recorder.endings.push({ key: fence.key, token: fence.token.toString(), kind: 'released', now: released.now });
    if (!(faults.on && random.chance(0.1))) return;
  }
}
