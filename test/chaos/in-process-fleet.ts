/**
 * The chaos run for stores that live in one process: the memory store, and PGlite (Postgres compiled to
 * WebAssembly, one backend per process). Workers are `Workload`s in this process, each reaching the shared
 * store through a link the nemesis can stop like a paused process (requests wait until it resumes) or cut
 * like a killed one (requests never complete; a new incarnation takes the slot). The history, the checker
 * and the summary are those of the multi-process runs.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { Store } from '../../src/store.js';
import type { StoreAdmin, WorkerBackend } from './backend.js';
import { createMemoryChaos } from './backend-memory.js';
import { postgresAdmin, sharedPostgresBackend } from './backend-postgres.js';
import { checkHistory } from './checker.js';
import { HistoryWriter, readHistory } from './history.js';
import type { KleppmannTally } from './nemesis.js';
import { createRandom, type Random } from './prng.js';
import { Recorder } from './recorder.js';
import type { RunResult } from './run.js';
import { TTL_MS, type FaultName, type Scenario } from './scenarios.js';
import { randomSkew } from './skew.js';
import { Workload, type WorkloadHooks } from './workload.js';

/** The stores of in-process runs. */
export type InProcessStore = 'memory' | 'pglite';

/** The scenarios an in-process fleet runs, and the faults it can inject of each (no process, no server). */
const IN_PROCESS_FAULTS: Readonly<Record<string, readonly FaultName[]>> = {
  kleppmann: ['kleppmann'],
  crash: ['kill', 'pause'],
  'expiry-skew': ['force-expire', 'revoke', 'pause'],
};

/** Whether `scenario` has an in-process form. */
export function runsInProcess(scenario: Scenario): boolean {
  return scenario.name in IN_PROCESS_FAULTS;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A worker's link to the store that can be stopped like a paused process: requests wait until it resumes. */
export function pausable() {
  let gate: Promise<void> | null = null;
  let open = (): void => undefined;
  const pass = async (): Promise<void> => {
    while (gate !== null) await gate;
  };
  return {
    pause: () => {
      if (gate !== null) return;
      gate = new Promise((resolve) => {
        open = resolve;
      });
    },
    resume: () => {
      gate = null;
      open();
    },
    wrap: (store: Store): Store => ({
      id: store.id,
      claim: async (c) => {
        await pass();
        return store.claim(c);
      },
      dequeue: async (c) => {
        await pass();
        return store.dequeue(c);
      },
      renew: async (c) => {
        await pass();
        return store.renew(c);
      },
      checkpoint: async (c) => {
        await pass();
        return store.checkpoint(c);
      },
      release: async (c) => {
        await pass();
        return store.release(c);
      },
      revoke: async (c) => {
        await pass();
        return store.revoke(c);
      },
      recover: async (c) => {
        await pass();
        return store.recover(c);
      },
      inspect: async (k) => {
        await pass();
        return store.inspect(k);
      },
      fencedWrite: async (fence, write, options) => {
        await pass();
        return store.fencedWrite(fence, write, options);
      },
      setKeyState: async (c) => {
        await pass();
        return store.setKeyState(c);
      },
      remove: async (c) => {
        await pass();
        return store.remove(c);
      },
    }),
  };
}

/** The shared store of a run: a backend per worker and the harness's admin. */
interface SharedStore {
  backend(wrap: (store: Store) => Store): WorkerBackend;
  readonly admin: StoreAdmin;
  /** Whether `force-expire` can reach the store's records. */
  readonly forceExpires: boolean;
}

async function openShared(store: InProcessStore): Promise<SharedStore> {
  if (store === 'memory') {
    const chaos = createMemoryChaos();
    return { backend: (wrap) => chaos.backend(wrap), admin: chaos.admin, forceExpires: false };
  }
  const db = new PGlite();
  await db.waitReady;
  const admin = await postgresAdmin(db, () => db.close());
  return { backend: (wrap) => sharedPostgresBackend(db, wrap), admin, forceExpires: true };
}

/** One worker slot of the in-process fleet. */
interface Slot {
  readonly slot: number;
  proc: string;
  incarnation: number;
  link: ReturnType<typeof pausable>;
  workload: Workload;
  paused: boolean;
  /** The deterministic pause: set by the nemesis, consumed by the next fenced write. */
  armed: ((key: string, token: bigint) => Promise<void>) | null;
  onHeldWrite: ((accepted: boolean | null) => void) | null;
  /** The workload's loop (never ends for a killed incarnation). */
  done: Promise<void>;
}

/** Options of an in-process run (see `RunOptions`). */
export interface InProcessRunOptions {
  readonly store: InProcessStore;
  readonly scenario: Scenario;
  readonly seed: number;
  readonly durationMs: number;
  readonly dir: string;
  readonly log?: (line: string) => void;
}

/** Runs one scenario with an in-process fleet; the result is shaped like a multi-process run's. */
export async function runInProcessScenario(options: InProcessRunOptions): Promise<RunResult> {
  const { store, scenario, seed, durationMs } = options;
  const faults = (IN_PROCESS_FAULTS[scenario.name] ?? []).filter((fault) => fault !== 'force-expire' || store === 'pglite');
  if (faults.length === 0) throw new Error(`scenario ${scenario.name} has no in-process form`);
  const random = createRandom(seed).fork(`${store}:${scenario.name}:real`);
  const runName = `${store}-${scenario.name}-${seed}-${Date.now().toString(36)}`;
  const historyDir = join(options.dir, runName);
  mkdirSync(historyDir, { recursive: true });
  const keys = Array.from({ length: scenario.keys }, (_, i) => `chaos:${runName}:k${i}`);
  const writer = new HistoryWriter(join(historyDir, 'history.jsonl'));
  const nemesis = new Recorder('nemesis', writer);
  const shared = await openShared(store);
  const workerRandom = random.fork('workers');
  const kleppmann: KleppmannTally = { rounds: 0, refused: 0, accepted: 0, unknown: 0, noTakeover: 0 };
  const slots: Slot[] = [];

  const spawn = (slot: number, incarnation: number): Slot => {
    const proc = `w${slot}.${incarnation}`;
    const link = pausable();
    const entry = { slot, proc, incarnation, link, paused: false, armed: null, onHeldWrite: null } as Omit<
      Slot,
      'workload' | 'done'
    > as Slot;
    const hooks: WorkloadHooks = {
      beforeWrite: async (key, token) => {
        const armed = entry.armed;
        if (armed === null) return false;
        entry.armed = null;
        await armed(key, token);
        return true;
      },
      afterHeldWrite: (_key, _token, accepted) => entry.onHeldWrite?.(accepted),
    };
    const config = {
      proc,
      keys,
      ttlMs: TTL_MS,
      seed: workerRandom.int(0, 2 ** 31),
      writesPerGrant: [2, 8] as const,
      thinkMs: [10, 80] as const,
      idleMs: [20, 120] as const,
      skew: scenario.skewedClocks ? randomSkew(workerRandom.fork(proc), durationMs) : null,
      badInputChance: 0.05,
    };
    entry.workload = new Workload(config, shared.backend(link.wrap), new Recorder(proc, writer), hooks);
    entry.done = entry.workload.run();
    return entry;
  };
  for (let slot = 0; slot < scenario.workers; slot += 1) slots.push(spawn(slot, 0));
  options.log?.(`  ${store} ${scenario.name}: ${scenario.workers} in-process workers up, faults for ${durationMs} ms (seed ${seed})`);

  const record = (
    op: 'kill' | 'pause' | 'force-expire' | 'revoke',
    fault: FaultName,
    key: string,
    target: string | undefined,
    act: () => Promise<unknown>,
  ) =>
    nemesis
      .run(op, key, { reason: fault, ...(target === undefined ? {} : { target }) }, act, () => ({ type: 'ok' }))
      .catch(() => undefined);
  const live = (): Slot[] => slots.filter((slot) => !slot.paused);

  try {
    const until = performance.now() + durationMs;
    while (performance.now() < until) {
      await sleep(random.int(...scenario.faultGapMs));
      if (performance.now() >= until) break;
      await inject(random.pick(faults), { random, slots, live, record, spawn, shared, keys, kleppmann });
    }
  } finally {
    for (const slot of slots) {
      slot.link.resume();
      slot.workload.stop();
    }
    // NOTE: killed incarnations never finish (their requests hang, as in a dead process): only the live ones are awaited.
    await Promise.race([Promise.all(slots.map((slot) => slot.done)), sleep(10_000)]);
  }
  await sleep(100);
  const final = await shared.admin.readFinal(keys);
  writer.close();
  await shared.admin.close().catch(() => undefined);
  const report = checkHistory(readHistory(join(historyDir, 'history.jsonl')), final, { takeoverBoundMs: scenario.takeoverBoundMs });
  return {
    store,
    scenario: scenario.name,
    variant: null,
    seed,
    durationMs,
    historyDir,
    report,
    kleppmann,
    crashes: [],
    driverCrashes: [],
    diedInWrite: { died: 0, applied: 0 },
  };
}

interface InjectContext {
  readonly random: Random;
  readonly slots: Slot[];
  live(): Slot[];
  record(
    op: 'kill' | 'pause' | 'force-expire' | 'revoke',
    fault: FaultName,
    key: string,
    target: string | undefined,
    act: () => Promise<unknown>,
  ): Promise<unknown>;
  spawn(slot: number, incarnation: number): Slot;
  readonly shared: SharedStore;
  readonly keys: readonly string[];
  readonly kleppmann: KleppmannTally;
}

async function inject(fault: FaultName, ctx: InjectContext): Promise<void> {
  const { random } = ctx;
  const candidates = ctx.live();
  if (fault === 'kleppmann') {
    if (candidates.length < 2) return;
    const victim = random.pick(candidates);
    const rescuer = random.pick(candidates.filter((slot) => slot !== victim));
    const held = new Promise<boolean | null>((resolve) => {
      victim.onHeldWrite = resolve;
    });
    const announced = new Promise<void>((resolve) => {
      // NOTE: the victim passed its own validity check; every request of its link waits while the rescuer takes over.
      victim.armed = async (key) => {
        resolve();
        ctx.kleppmann.rounds += 1;
        await ctx.record('pause', 'kleppmann', '', victim.proc, async () => {
          victim.link.pause();
          const token = await rescuer.workload.takeover(key, 8 * TTL_MS);
          if (token === null) ctx.kleppmann.noTakeover += 1;
          victim.link.resume();
        });
      };
    });
    const started = await Promise.race([announced.then(() => true), sleep(8 * TTL_MS).then(() => false)]);
    if (!started) {
      victim.armed = null;
      return;
    }
    const accepted = await Promise.race([held, sleep(20 * TTL_MS).then(() => null)]);
    if (accepted === null) ctx.kleppmann.unknown += 1;
    else if (accepted) ctx.kleppmann.accepted += 1;
    else ctx.kleppmann.refused += 1;
    return;
  }
  if (fault === 'pause' || fault === 'kill') {
    if (candidates.length < 2) return;
    const victim = random.pick(candidates);
    if (fault === 'pause') {
      await ctx.record('pause', fault, '', victim.proc, async () => {
        victim.paused = true;
        victim.link.pause();
        await sleep(random.int(Math.round(1.5 * TTL_MS), 3 * TTL_MS));
        victim.link.resume();
        victim.paused = false;
      });
      return;
    }
    // NOTE: a kill: the link never opens again, so the incarnation's requests stay unanswered; a new one takes the slot.
    await ctx.record('kill', fault, '', victim.proc, async () => {
      victim.link.pause();
      victim.workload.stop();
    });
    await sleep(random.int(0, 500));
    ctx.slots[victim.slot] = ctx.spawn(victim.slot, victim.incarnation + 1);
    return;
  }
  const key = random.pick(ctx.keys);
  if (fault === 'force-expire') await ctx.record('force-expire', fault, key, undefined, () => ctx.shared.admin.forceExpire(key));
  else if (fault === 'revoke') await ctx.record('revoke', fault, key, undefined, () => ctx.shared.admin.revoke(key));
}
