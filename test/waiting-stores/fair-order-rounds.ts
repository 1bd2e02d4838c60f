/**
 * The rounds of the fair-order test and the fair-handoff benchmark: three waiting processes
 * (`fair-order-worker.ts`), this process holding the key between rounds. Each round this process claims the key,
 * starts the waiters one by one in the round's order (the next once the store shows the previous one queued),
 * releases, and collects the grants: who, in which order, with which token, and how long each handoff took (from
 * the moment a release started to the next grant, on the machine's clock).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createLeases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';
import type { FairOrderMessage, FairOrderSetup } from './fair-order-worker.js';

const WORKER = fileURLToPath(new URL('./fair-order-worker.ts', import.meta.url));
/** How many waiting processes. */
export const FAIR_PROCESSES = 3;
/** How long each grant is held before its release. */
const HOLD_MS = 20;

/** The store under test (this process's own connection) and how the workers reach it. */
export interface FairRig {
  readonly name: FairOrderSetup['store'];
  readonly store: Store;
  readonly url: string;
  readonly namespace: string;
  /** The workers' `pollMs` (only a store without notifications polls). */
  readonly pollMs: number;
}

/** One round: the order the waiters were queued in, the order they were granted in, tokens and handoff times. */
export interface FairRound {
  readonly index: number;
  readonly arrived: readonly number[];
  readonly granted: readonly number[];
  readonly tokens: readonly string[];
  /** Ms from each release starting to the next grant (this process's release first). */
  readonly handoffsMs: readonly number[];
}

/** Every round, and the handoff figures in one line. */
export interface FairResult {
  readonly rounds: readonly FairRound[];
  readonly handoffsMs: readonly number[];
  readonly summary: string;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const wallNow = (): number => performance.timeOrigin + performance.now();

/** A waiting process and the messages it has sent, in order. */
interface Waiter {
  readonly child: ChildProcess;
  readonly messages: FairOrderMessage[];
}

function startWaiter(setup: FairOrderSetup): Waiter {
  const child = fork(WORKER, [JSON.stringify(setup)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiter: Waiter = { child, messages: [] };
  child.on('message', (message: FairOrderMessage) => waiter.messages.push(message));
  return waiter;
}

/** Resolves once `condition()` holds (checked every 2 ms), failing after `limitMs`. */
async function until(condition: () => boolean | Promise<boolean>, what: string, limitMs = 20_000): Promise<void> {
  const started = performance.now();
  while (!(await condition())) {
    if (performance.now() - started > limitMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
  }
}

/** The `q`-quantile of `values` (nearest rank). */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}

/** What happened when the first waiter's process was killed while queued. */
export interface DeadWaiterResult {
  /** The surviving waiters, in the order they were granted. */
  readonly granted: readonly number[];
  /** Ms from the release to the first survivor's grant. */
  readonly firstGrantMs: number;
}

/**
 * Queues the three waiting processes (0, 1, 2) with `queueTtlMs`, kills process 0 (SIGKILL: no dequeue, no release),
 * releases, and times the next grant: process 0's place must expire (at most `queueTtlMs` after its last attempt)
 * before process 1 is granted, then process 2.
 */
export async function runDeadWaiter(rig: FairRig, queueTtlMs: number): Promise<DeadWaiterResult> {
  const key = `fair-dead:${rig.name}:${process.pid}:${Date.now()}`;
  const waiters = Array.from({ length: FAIR_PROCESSES }, (_, proc) =>
    startWaiter({ proc, store: rig.name, url: rig.url, namespace: rig.namespace, key, holdMs: HOLD_MS, pollMs: rig.pollMs, queueTtlMs }),
  );
  const holder = createLeases(rig.store, { holder: 'parent', ttlMs: 30_000 });
  try {
    await until(
      () => waiters.every((waiter) => waiter.messages.some((message) => message.type === 'ready')),
      'the waiting processes to start',
    );
    const lease = await holder.claimOrThrow(key);
    for (const [place, waiter] of waiters.entries()) {
      waiter.child.send('go');
      await until(async () => (await rig.store.inspect(key)).waiters.length === place + 1, `waiter ${place} to be queued`);
    }
    waiters[0]?.child.kill('SIGKILL');
    const releasedAt = wallNow();
    await holder.release(lease);
    const survivors = waiters.slice(1);
    await until(() => survivors.every((waiter) => waiter.messages.some((message) => message.type === 'released')), 'the survivors');
    const grants = survivors
      .flatMap((waiter) => waiter.messages.flatMap((message) => (message.type === 'granted' ? [message] : [])))
      .sort((a, b) => a.at - b.at);
    return { granted: grants.map((grant) => grant.proc), firstGrantMs: (grants[0]?.at ?? Number.NaN) - releasedAt };
  } finally {
    for (const waiter of waiters) if (waiter.child.connected) waiter.child.send('exit');
    await Promise.all(
      waiters.map(
        (waiter) =>
          new Promise((resolve) =>
            waiter.child.exitCode !== null || waiter.child.signalCode !== null ? resolve(null) : waiter.child.once('exit', resolve),
          ),
      ),
    );
  }
}

/** Runs `rounds` rounds on `rig` and stops the waiting processes. */
export async function runFairRounds(rig: FairRig, rounds: number): Promise<FairResult> {
  const key = `fair:${rig.name}:${process.pid}:${Date.now()}`;
  const waiters = Array.from({ length: FAIR_PROCESSES }, (_, proc) =>
    startWaiter({ proc, store: rig.name, url: rig.url, namespace: rig.namespace, key, holdMs: HOLD_MS, pollMs: rig.pollMs }),
  );
  const holder = createLeases(rig.store, { holder: 'parent', ttlMs: 30_000 });
  const results: FairRound[] = [];
  try {
    await until(
      () => waiters.every((waiter) => waiter.messages.some((message) => message.type === 'ready')),
      'the waiting processes to start',
    );
    for (let index = 0; index < rounds; index += 1) {
      const lease = await holder.claimOrThrow(key);
      // NOTE: a different arrival order every round, so the order proven is the store's queue, not process numbers.
      const arrived = Array.from({ length: FAIR_PROCESSES }, (_, i) => (i + index) % FAIR_PROCESSES);
      if (index % 2 === 1) arrived.reverse();
      const seen = waiters.map((waiter) => waiter.messages.length);
      for (const [place, proc] of arrived.entries()) {
        waiters[proc]?.child.send('go');
        await until(async () => (await rig.store.inspect(key)).waiters.length === place + 1, `waiter ${proc} to be queued`);
      }
      const releasedAt = wallNow();
      await holder.release(lease);
      await until(
        () => waiters.every((waiter, proc) => waiter.messages.slice(seen[proc]).some((message) => message.type === 'released')),
        `round ${index}'s grants`,
      );
      const events = waiters.flatMap((waiter, proc) => waiter.messages.slice(seen[proc]));
      const refused = events.find((event) => event.type === 'refused');
      if (refused !== undefined) throw new Error(`a waiter was refused: ${JSON.stringify(refused)}`);
      const grants = events.flatMap((event) => (event.type === 'granted' ? [event] : [])).sort((a, b) => a.at - b.at);
      const releases = events.flatMap((event) => (event.type === 'releasing' ? [event] : []));
      const handoffsMs = grants.map((grant, i) => {
        const previous = i === 0 ? releasedAt : releases.find((release) => release.proc === grants[i - 1]?.proc)?.at;
        return grant.at - (previous ?? Number.NaN);
      });
      results.push({
        index,
        arrived,
        granted: grants.map((grant) => grant.proc),
        tokens: grants.map((grant) => grant.token),
        handoffsMs,
      });
    }
  } finally {
    for (const waiter of waiters) if (waiter.child.connected) waiter.child.send('exit');
    await Promise.all(
      waiters.map(
        (waiter) => new Promise((resolve) => (waiter.child.exitCode !== null ? resolve(null) : waiter.child.once('exit', resolve))),
      ),
    );
  }
  const handoffsMs = results.flatMap((round) => round.handoffsMs);
  const summary = `${handoffsMs.length} handoffs, p50 ${quantile(handoffsMs, 0.5).toFixed(2)} ms, p99 ${quantile(handoffsMs, 0.99).toFixed(2)} ms, max ${Math.max(...handoffsMs).toFixed(2)} ms`;
  return { rounds: results, handoffsMs, summary };
}
