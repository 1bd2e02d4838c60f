/**
 * The queue workload (`npm run chaos -- --workload queue`): workers claim the next item of a set
 * (`Store.claimNext`: expired items taken over at once, or record-first), work with the pauses and crashes the
 * harness injects, and finalize each run with an idempotent submission (a fenced write with `submission` and the
 * checkpoint `{done}` in the same atomic step), re-sending the same submission when its request or reply was
 * lost, sometimes after their lease is gone. A finalized item is taken out of the set; a worker that inherits a
 * `{done}` checkpoint (its finalizer died before taking the item out) only takes it out. After the fault phase a
 * drain phase without faults runs until the set has nothing claimable left, and queue-checker.ts checks the
 * history and the final ledgers.
 *
 * A store without claim-next (the methods are optional) runs the submit-only mode: workers claim known keys
 * with `claim` and finalize runs the same way, so the exactly-once and stale-submission checks run on every
 * store. Workers are async loops in this process over their own connections (up to 4), mixing the store's drivers;
 * on PostgreSQL and Redis the nemesis cuts every worker connection now and then (a submission whose driver threw
 * has an unknown outcome: the checker lets it have applied or not).
 *
 * Everything talks to the Store contract directly: the Leases API of claim-next is not in this branch.
 */
import { randomBytes } from 'node:crypto';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import type { PostgresWriteContext } from '../../src/adapters/postgres/index.js';
import type { RedisWriteContext } from '../../src/adapters/redis/index.js';
import type { SqliteWriteContext } from '../../src/adapters/sqlite/index.js';
import type { EtcdWriteContext } from '../../src/adapters/etcd/index.js';
import type { Fence } from '../../src/fence/types.js';
import type { FencedWriteOutcome } from '../../src/fence/operations.js';
import type { Store } from '../../src/store.js';
import type { ClaimNextGranted } from '../../src/fence/claim-next.js';
import { submissionDigest } from '../../src/submission.js';
import { CLIENTS, type ClientKind, type StoreAdmin, type StoreKind } from './backend.js';
import { ledgerKey } from './backend-redis.js';
import { ledgerPrefix } from './backend-etcd.js';
import { createAdmin, createBackend } from './backends.js';
import { decodeEntry, encodeEntry } from './history.js';
import { delegatingStore } from './mutants.js';
import { createRandom, type Random } from './prng.js';
import {
  checkQueue,
  queueFigures,
  type QueueFigures,
  type QueueGrant,
  type QueueHistory,
  type QueueRelease,
  type QueueRemoval,
  type QueueSubmitAttempt,
  type QueueViolation,
} from './queue-checker.js';

/** The stores the queue workload runs on. */
export type QueueStore = 'memory' | Extract<StoreKind, 'postgres' | 'redis' | 'sqlite' | 'etcd'>;
export const QUEUE_STORES: readonly QueueStore[] = ['memory', 'postgres', 'redis', 'sqlite', 'etcd'];

/**
 * Planted bugs the checker must catch: `unrecorded-submission` drops the submission from every fenced write (a
 * store that forgets runs: a re-sent submission writes again); `unfenced-write` applies a write whose fence no
 * longer holds (memory: the write runs after the refusal; the server stores: test/chaos/mutants.ts's).
 */
export type QueueVariant = 'unrecorded-submission' | 'unfenced-write';
export const QUEUE_VARIANTS: readonly QueueVariant[] = ['unrecorded-submission', 'unfenced-write'];

export interface QueueRunOptions {
  readonly store: QueueStore;
  /** The server's URL (a database file for SQLite); ignored for memory. */
  readonly url: string | null;
  readonly seed: number;
  /** The fault phase; the drain phase comes after it. */
  readonly durationMs: number;
  readonly variant: QueueVariant | null;
  readonly clients?: readonly ClientKind[];
  /** @default 8 */
  readonly workers?: number;
  /** @default 300 */
  readonly ttlMs?: number;
  /** Run submit-only even where the store has claim-next. */
  readonly submitOnly?: boolean;
  readonly log?: (line: string) => void;
}

export interface QueueRunResult {
  readonly store: QueueStore;
  readonly mode: QueueHistory['mode'];
  readonly seed: number;
  readonly violations: readonly QueueViolation[];
  readonly figures: QueueFigures;
  /** Items left blocked for recovery (a record-first holder died before recording the abandoned run: by design). */
  readonly blocked: number;
  /** Submissions a driver error answered (their outcome unknown; not the harness's lost replies). */
  readonly driverUnknowns: number;
  /** Worker connections the nemesis cut (PostgreSQL, Redis). */
  readonly connectionKills: number;
}

const FENCE_REASONS = new Set(['missing', 'not-held', 'expired', 'superseded', 'released', 'revoked', 'state-changed']);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
type LedgerWrite = (context: unknown, key: string, entry: string) => unknown;

/** The ledger write inside the fenced step, per store (the server stores' tables and lists come from their admins). */
function ledgerWriter(store: QueueStore, memoryLedgers: Map<string, string[]>): LedgerWrite {
  if (store === 'postgres')
    return (context, key, entry) =>
      (context as PostgresWriteContext).query('INSERT INTO chaos_ledger (key, entry) VALUES ($1, $2)', [key, entry]);
  if (store === 'redis')
    return (context, key, entry) => {
      void (context as RedisWriteContext).call('RPUSH', ledgerKey(key), entry);
    };
  if (store === 'sqlite')
    return (context, key, entry) => (context as SqliteWriteContext).run('INSERT INTO chaos_ledger (key, entry) VALUES (?, ?)', key, entry);
  if (store === 'etcd')
    // NOTE: a key of its own per write (a random suffix), so a run written twice leaves two entries, not one put twice.
    return (context, key, entry) => {
      (context as EtcdWriteContext).put(`${ledgerPrefix(key)}${entry}|${randomBytes(4).toString('hex')}`, entry);
    };
  return (_context, key, entry) => {
    const ledger = memoryLedgers.get(key) ?? [];
    ledger.push(entry);
    memoryLedgers.set(key, ledger);
  };
}

/** `store` with the planted bug `variant` (a server store's `unfenced-write` comes from its backend instead). */
function planted(store: Store, variant: QueueVariant | null, isMemory: boolean): Store {
  if (variant === null || (variant === 'unfenced-write' && !isMemory)) return store;
  const mutant: Store = { ...delegatingStore(store) };
  if (store.claimNext !== undefined) {
    mutant.claimNext = (command) => (store.claimNext as NonNullable<Store['claimNext']>)(command);
    mutant.addItems = (command) => (store.addItems as NonNullable<Store['addItems']>)(command);
    mutant.removeItems = (command) => (store.removeItems as NonNullable<Store['removeItems']>)(command);
  }
  if (variant === 'unrecorded-submission') {
    mutant.fencedWrite = (fence, write, options) =>
      store.fencedWrite(fence, write, options?.checkpointJson === undefined ? undefined : { checkpointJson: options.checkpointJson });
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

interface Recorder {
  readonly grants: QueueGrant[];
  readonly attempts: QueueSubmitAttempt[];
  readonly releases: QueueRelease[];
  readonly removals: QueueRemoval[];
  /** Runs whose ledger entry is a record-first holder's "abandoned" record, not a finalization. */
  readonly abandonRecords: Set<string>;
  driverUnknowns: number;
  /** What each worker is waiting for now (absent once it stopped): names a store call that never settles. */
  readonly doing: Map<string, string>;
}

interface Faults {
  on: boolean;
}

/** Runs the workload on one store and checks it. */
export async function runQueueWorkload(options: QueueRunOptions): Promise<QueueRunResult> {
  const log = options.log ?? (() => undefined);
  const random = createRandom(options.seed);
  const ttlMs = options.ttlMs ?? 300;
  const workerCount = options.workers ?? 8;
  const memoryLedgers = new Map<string, string[]>();
  const write = ledgerWriter(options.store, memoryLedgers);
  const prefix = `q${options.seed.toString(36)}${randomBytes(3).toString('hex')}`;
  const set = `${prefix}-set`;

  // Connections: memory shares one store; a server store gets up to 4 worker connections over its drivers.
  let admin: StoreAdmin | null = null;
  const closers: Array<() => Promise<void>> = [];
  const stores: Store[] = [];
  if (options.store === 'memory') {
    stores.push(planted(createMemoryStore(), options.variant, true));
  } else {
    const url = options.url;
    if (url === null) throw new Error(`the queue workload on ${options.store} needs a server URL`);
    admin = await createAdmin(options.store, url);
    const drivers = options.clients?.filter((client) => CLIENTS[options.store as StoreKind].includes(client)) ?? [];
    const serverVariant = options.variant === 'unfenced-write' ? 'unfenced-write' : null;
    // NOTE: the server stores' planted bugs wrap the store's first driver only (test/chaos/mutants.ts).
    const mix = serverVariant !== null ? CLIENTS[options.store].slice(0, 1) : drivers.length > 0 ? drivers : CLIENTS[options.store];
    for (let i = 0; i < Math.min(4, workerCount); i += 1) {
      const backend = await createBackend(options.store, url, mix[i % mix.length] as ClientKind, serverVariant, `wq${i}`);
      closers.push(() => backend.close());
      stores.push(planted(backend.store, options.variant, false));
    }
  }
  const first = stores[0] as Store;
  const claimNext = first.claimNext;
  const mode: QueueHistory['mode'] = claimNext !== undefined && options.submitOnly !== true ? 'queue' : 'submit-only';
  if (mode === 'submit-only')
    log(
      `    ${options.store} ${claimNext === undefined ? 'has no claim-next (Store.claimNext is optional): running submit-only' : 'submit-only (asked)'}: workers claim known keys, finalize with submissions`,
    );

  const items: string[] = [];
  const recorder: Recorder = {
    grants: [],
    attempts: [],
    releases: [],
    removals: [],
    abandonRecords: new Set(),
    driverUnknowns: 0,
    doing: new Map(),
  };
  const faults: Faults = { on: true };
  let stopped = false;
  let nextItem = 0;
  const addItems = async (count: number): Promise<void> => {
    // NOTE: an item carries its set's hash tag, which Redis requires (a set and its items share one Cluster slot).
    const keys = Array.from({ length: count }, () => `{${set}}:i${nextItem++}`);
    if (mode !== 'queue') {
      items.push(...keys);
      return;
    }
    const notBeforeMs = random.chance(0.2) ? random.int(1, ttlMs) : 0;
    // NOTE: re-sent until the store answers, and counted as items only then: a cut connection leaves the call's
    // outcome unknown (adding again changes nothing), and keys the store never got are no items of the set (they
    // were once counted lost).
    for (let attempt = 1; ; attempt += 1) {
      try {
        const added = await (first.addItems as NonNullable<Store['addItems']>)({ set, keys, notBeforeMs });
        if (!added.ok) throw new Error(`addItems refused: ${added.reason}`);
        items.push(...keys);
        return;
      } catch (error) {
        if (attempt >= 100 || (error instanceof Error && error.message.startsWith('addItems refused'))) throw error;
        await sleep(20);
      }
    }
  };
  await addItems(mode === 'queue' ? 40 : 12);

  const workers = Array.from({ length: workerCount }, (_, i) =>
    runWorker({
      proc: `w${i}`,
      store: stores[i % stores.length] as Store,
      random: random.fork(`worker-${i}`),
      mode,
      set,
      items,
      ttlMs,
      write,
      recorder,
      faults,
      stopped: () => stopped,
    }),
  );
  // NOTE: the feeder keeps the queue from running dry during the fault phase; submit-only keeps its keys.
  // NOTE: a store call that never settles (a deadlock) would otherwise hang the round silently: bounded, and the
  // error names what each worker is waiting for.
  const orStuck = async <T>(work: Promise<T>, what: string): Promise<T> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stuck = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const doing = [...recorder.doing].map(([proc, call]) => `${proc}: ${call}`).join('; ');
        reject(new Error(`waited 30 s for ${what} (a store call that never settles); workers waiting for: ${doing || 'nothing'}`));
      }, 30_000);
    });
    try {
      return await Promise.race([work, stuck]);
    } finally {
      clearTimeout(timer);
    }
  };
  const feeder = (async () => {
    while (mode === 'queue' && faults.on) {
      await sleep(random.int(10, 40));
      if (faults.on) await addItems(random.int(1, 3)).catch(() => undefined);
    }
  })();
  // NOTE: the server stores' nemesis: every worker connection cut now and then (real unknown outcomes).
  let connectionKills = 0;
  const nemesis = (async () => {
    while (admin !== null && faults.on) {
      await sleep(random.int(300, 1500));
      if (faults.on) connectionKills += await admin.killConnections().catch(() => 0);
    }
  })();
  await sleep(options.durationMs);
  faults.on = false;
  await feeder;
  await nemesis;
  // The drain: no faults; in queue mode until nothing is claimable by time alone, bounded.
  // NOTE: bounded generously (it ends as soon as every item is done): on a loaded machine a server store's workers
  // finalize a thousand open items in more than a few seconds, and an item still open at the bound counts as lost.
  const drainUntil = performance.now() + Math.max(10 * ttlMs, 60_000);
  if (mode === 'queue') {
    // NOTE: done when every item is out of the set or blocked for recovery (an operator's: by design).
    while (performance.now() < drainUntil) {
      const removed = new Set(recorder.removals.map((removal) => removal.key));
      const open = items.filter((key) => !removed.has(key));
      const blocked = await orStuck(
        Promise.all(open.map(async (key) => (await first.inspect(key)).recoveryRequired)),
        'inspect in the drain',
      );
      if (blocked.every(Boolean)) break;
      await sleep(100);
    }
    if (performance.now() >= drainUntil) log('    the drain ran out of time: items still open count as lost');
  } else await sleep(2 * ttlMs);
  stopped = true;
  await orStuck(Promise.all(workers), 'the workers to stop');

  // The final state: ledgers (in apply order) and which unfinalized items are blocked for recovery.
  const entries = async (key: string): Promise<Array<{ reqId: string; token: string }>> => {
    if (admin === null) return (memoryLedgers.get(key) ?? []).map(decodeEntry);
    return [...((await admin.readFinal([key]))[0]?.ledger ?? [])];
  };
  const { ledgers, stillQueued, blocked } = await finalItemStates(first, items, entries, recorder.abandonRecords);
  for (const close of closers) await close().catch(() => undefined);
  await admin?.close().catch(() => undefined);
  const history: QueueHistory = {
    mode,
    items,
    grants: recorder.grants,
    attempts: recorder.attempts,
    releases: recorder.releases,
    removals: recorder.removals,
    abandonRecords: recorder.abandonRecords,
    ledgers,
    stillQueued: mode === 'queue' ? stillQueued : new Set(items),
  };
  return {
    store: options.store,
    mode,
    seed: options.seed,
    violations: checkQueue(history),
    figures: queueFigures(history),
    blocked,
    driverUnknowns: recorder.driverUnknowns,
    connectionKills,
  };
}

/** The end of a run: each item's ledger, and the items still queued (blocked for recovery). */
export interface FinalItemStates {
  readonly ledgers: Map<string, Array<{ runId: string; token: string }>>;
  /** Items blocked for recovery and not finalized (for the checker: still in the set, not lost). */
  readonly stillQueued: Set<string>;
  readonly blocked: number;
}

/**
 * Reads each item's ledger (`entries`) and which unfinalized items (no entry, or only abandon records) are
 * blocked for recovery (`store.inspect`).
 * `abandonRecords`: runs whose ledger entry is a record-first holder's record, not a finalization.
 */
export async function finalItemStates(
  store: Store,
  items: readonly string[],
  entries: (key: string) => Promise<ReadonlyArray<{ reqId: string; token: string }>>,
  abandonRecords: ReadonlySet<string>,
): Promise<FinalItemStates> {
  const ledgers = new Map<string, Array<{ runId: string; token: string }>>();
  const stillQueued = new Set<string>();
  let blocked = 0;
  for (const key of items) {
    ledgers.set(
      key,
      (await entries(key)).map((entry) => ({ runId: entry.reqId, token: entry.token })),
    );
    // NOTE: a ledger of abandon records only is not a finalization: a record-first holder whose own record was
    // refused (its lease gone before a re-send) leaves the key blocked again after an earlier holder's record.
    const finalized = (ledgers.get(key) ?? []).some((entry) => !abandonRecords.has(entry.runId));
    if (!finalized) {
      const inspection = await store.inspect(key);
      // NOTE: a record-first holder that died before recording the abandoned run leaves the key for an operator.
      if (inspection.recoveryRequired) {
        stillQueued.add(key);
        blocked += 1;
      }
    }
  }
  return { ledgers, stillQueued, blocked };
}

interface WorkerSetup {
  readonly proc: string;
  readonly store: Store;
  readonly random: Random;
  readonly mode: QueueHistory['mode'];
  readonly set: string;
  readonly items: readonly string[];
  readonly ttlMs: number;
  readonly write: LedgerWrite;
  readonly recorder: Recorder;
  readonly faults: Faults;
  stopped(): boolean;
}

type Claimed = {
  fence: Fence;
  expiresAt: number | null;
  inheritedDone: string | null;
  recoveryRequired: boolean;
  /** record-first took over an abandoned run: its run id, to record before any work. */
  abandonedRunId: string | null;
};

/** One worker: claim, work, finalize, until stopped. */
async function runWorker(setup: WorkerSetup): Promise<void> {
  const { proc, store, random, recorder, faults, ttlMs } = setup;
  let runs = 0;
  const step = <T>(what: string, work: () => Promise<T>): Promise<T> => {
    recorder.doing.set(proc, what);
    return work();
  };
  while (!setup.stopped()) {
    runs += 1;
    const runId = `${proc}-${setup.set}-r${runs}`;
    let claimed: Claimed | null;
    try {
      claimed = await step(`claim-next for ${runId}`, () => claimOne(setup, runId));
    } catch {
      await sleep(random.int(5, 20));
      continue;
    }
    if (claimed === null) {
      await sleep(random.int(5, 25));
      continue;
    }
    const { fence } = claimed;
    if (claimed.inheritedDone !== null) {
      // The item was finalized by a run that died before taking it out of the set: take it out now.
      const done = claimed.inheritedDone;
      await step(`finish ${fence.key} (inherited {done})`, () =>
        finish(setup, fence, done, claimed.recoveryRequired ? `{"done":"${done}"}` : undefined),
      );
      continue;
    }
    if (claimed.abandonedRunId !== null) {
      // record-first: the abandoned run is recorded under its own run id (its worker, if it comes back and submits,
      // meets replay-conflict), with the checkpoint that resolves the recovery, before any work.
      // NOTE: marked before sending: the record may land with every reply lost (the abandoned run cannot land its
      // own submission any more: it had not when this grant was made, and its fence no longer holds).
      recorder.abandonRecords.add(claimed.abandonedRunId);
      const abandoned = { abandoned: claimed.abandonedRunId };
      const abandonedRunId = claimed.abandonedRunId;
      const recorded = await step(`record ${abandonedRunId} abandoned on ${fence.key}`, () =>
        submitRun(setup, fence, abandonedRunId, { ...abandoned, by: proc }, abandoned),
      );
      if (recorded !== 'applied' && recorded !== 'replayed') continue;
    }
    await sleep(random.int(2, 15));
    if (faults.on && random.chance(0.1)) continue; // crashed: no submission, no release; the grant expires
    if (faults.on && random.chance(0.1)) await sleep(random.int(ttlMs, 2 * ttlMs)); // paused past the TTL
    const answer = await step(`submit ${runId} on ${fence.key}`, () =>
      submitRun(setup, fence, runId, { item: fence.key, result: runId.length, by: proc }, { done: runId }),
    );
    if (answer === 'applied' || answer === 'replayed') {
      if (faults.on && random.chance(0.1)) continue; // crashed after the submission landed: the next holder finds {done}
      await step(`finish ${fence.key}`, () => finish(setup, fence, runId, undefined));
    } else if (answer !== 'unknown') await step(`release ${fence.key}`, () => store.release({ fence }).catch(() => undefined));
  }
  recorder.doing.delete(proc);
}

/**
 * Submits `runId` under `fence` with `checkpoint`, re-sending the same submission while the answer is unknown (a
 * dropped request, a lost reply, a driver error; at most 8 tries, some after the lease is gone); records every
 * answer the store gave. Returns the answer the worker learned (`unknown`: none).
 */
async function submitRun(setup: WorkerSetup, fence: Fence, runId: string, payload: unknown, checkpoint: unknown): Promise<string> {
  const { store, random, recorder, faults, ttlMs } = setup;
  // NOTE: each try rebuilds the payload with its keys in another order, as a retrying worker may: the digest is
  // canonical, so a re-send is the same submission (replayed, never replay-conflict).
  const digest = (): string => submissionDigest(shuffledKeys(payload, random), 65_536);
  const ledgerEntry = encodeEntry({ reqId: runId, token: fence.token.toString() });
  const checkpointJson = JSON.stringify(checkpoint);
  let answer = 'unknown';
  for (let attempt = 0; attempt < 8 && answer === 'unknown'; attempt += 1) {
    if (attempt > 0 && faults.on && random.chance(0.3)) await sleep(random.int(ttlMs, 2 * ttlMs)); // retry after the lease is gone
    if (faults.on && random.chance(0.05)) {
      recorder.attempts.push({ key: fence.key, token: fence.token.toString(), runId, answer: 'not-sent', now: null, delivered: false });
      continue;
    }
    let outcome: FencedWriteOutcome<unknown>;
    try {
      const submission = { runId, digest: digest(), receiptJson: null, bindToGrant: false };
      outcome = await store.fencedWrite(fence, (context) => setup.write(context, fence.key, ledgerEntry), { submission, checkpointJson });
    } catch {
      recorder.driverUnknowns += 1;
      recorder.attempts.push({ key: fence.key, token: fence.token.toString(), runId, answer: 'error', now: null, delivered: true });
      await sleep(random.int(5, 20));
      continue;
    }
    const lost = faults.on && random.chance(0.15);
    recorder.attempts.push({
      key: fence.key,
      token: fence.token.toString(),
      runId,
      answer: outcome.ok ? 'applied' : outcome.reason,
      now: outcome.now,
      ...(outcome.ok || outcome.reason !== 'replayed' ? {} : { recordedToken: outcome.submission.token.toString() }),
      delivered: !lost,
    });
    if (!lost) answer = outcome.ok ? 'applied' : outcome.reason;
  }
  return answer;
}

/** `value` with the keys of every object in a random order (the same JSON value). */
function shuffledKeys(value: unknown, random: Random): unknown {
  if (Array.isArray(value)) return value.map((item) => shuffledKeys(item, random));
  if (typeof value !== 'object' || value === null) return value;
  const names = Object.keys(value);
  for (let i = names.length - 1; i > 0; i -= 1) {
    const j = random.int(0, i);
    [names[i], names[j]] = [names[j] as string, names[i] as string];
  }
  return Object.fromEntries(names.map((name) => [name, shuffledKeys((value as Record<string, unknown>)[name], random)]));
}

/** Claims the next item (queue) or a random known key (submit-only); records the grant. */
async function claimOne(setup: WorkerSetup, runId: string): Promise<Claimed | null> {
  const { proc, store, random, recorder, ttlMs } = setup;
  const secret = randomBytes(16).toString('hex');
  const base = { holder: proc, runId, secret, ttlMs, attributes: {} };
  const outcome =
    setup.mode === 'queue'
      ? await (store.claimNext as NonNullable<Store['claimNext']>)({
          ...base,
          set: setup.set,
          onExpired: random.chance(0.3) ? 'record-first' : 'take-over',
        })
      : await store.claim({ ...base, key: random.pick(setup.items), recovering: false });
  if (!outcome.ok) return null;
  recorder.grants.push({ key: outcome.key, token: outcome.token.toString(), runId, at: outcome.now, expiresAt: outcome.expiresAt });
  const fence: Fence = { key: outcome.key, token: outcome.token, secret, holder: proc, runId };
  const recoveryRequired = 'recoveryRequired' in outcome && outcome.recoveryRequired === true;
  const done = outcome.checkpoint === null ? null : ((JSON.parse(outcome.checkpoint.json) as { done?: string }).done ?? null);
  return {
    fence,
    expiresAt: outcome.expiresAt,
    inheritedDone: setup.mode === 'queue' ? done : null,
    recoveryRequired,
    abandonedRunId: recoveryRequired && 'abandoned' in outcome ? ((outcome as ClaimNextGranted).abandoned?.runId ?? null) : null,
  };
}

/** Takes a finalized item out of the set (queue) and releases (a pending recovery resolved with `{done}`). */
async function finish(setup: WorkerSetup, fence: Fence, finalizedBy: string, checkpointJson: string | undefined): Promise<void> {
  const { store, recorder } = setup;
  try {
    if (setup.mode === 'queue') {
      await (store.removeItems as NonNullable<Store['removeItems']>)({ set: setup.set, keys: [fence.key] });
      recorder.removals.push({ key: fence.key, runId: finalizedBy });
    }
    const released = await store.release(checkpointJson === undefined ? { fence } : { fence, checkpointJson });
    if (released.ok && !released.alreadyReleased)
      recorder.releases.push({ key: fence.key, token: fence.token.toString(), now: released.now });
  } catch {
    // the store was unreachable: the grant expires
  }
}
