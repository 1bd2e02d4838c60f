/**
 * The nemesis: injects the faults of a scenario, one after another on a seeded schedule, and records each
 * one in the history (proc `nemesis`) so the checker knows when the store may have forgotten, expired or
 * revoked something. Every fault heals itself before the next one starts.
 */
import type { StoreAdmin, StoreKind } from './backend.js';
import type { FaultProxy } from './fault-proxy.js';
import type { Fleet, WorkerSlot } from './fleet.js';
import type { OpName } from './history.js';
import type { WorkerMessage } from './messages.js';
import type { Random } from './prng.js';
import type { Recorder } from './recorder.js';
import type { FaultName } from './scenarios.js';

/** A server the nemesis may restart. */
export interface RestartableServer {
  /** `amnesia`: the restart loses every record (Redis without persistence). */
  readonly losesData: boolean;
  crashAndRestart(): Promise<void>;
}

/** A server the nemesis may freeze whole (every process of it stopped, then continued). */
export interface FreezableServer {
  /** SIGSTOPs every process of the server, waits `ms`, SIGCONTs them (always, even on failure). */
  freeze(ms: number): Promise<void>;
}

/** A replicated topology whose masters the nemesis may kill (Redis Cluster). */
export interface FailoverServer {
  /**
   * SIGKILLs the master serving `key`, waits until a replica serves its slot, restarts the killed node (it
   * rejoins as a replica) and waits until the topology is healthy again.
   */
  failOver(key: string): Promise<void>;
  /**
   * Takes the majority away for `ms` (a consensus store: two of three members killed), then restarts them and
   * waits until the cluster is healthy. Absent where losing a majority means something else.
   */
  loseQuorum?(ms: number): Promise<void>;
}

/** The deterministic pauses of a run. */
export interface KleppmannTally {
  rounds: number;
  /** The paused worker's write was refused / accepted / of unknown outcome. */
  refused: number;
  accepted: number;
  unknown: number;
  /** Rounds where nobody took over in time (the pause proved nothing). */
  noTakeover: number;
}

/** What the nemesis can reach during a run. */
export interface NemesisContext {
  readonly store: StoreKind;
  readonly fleet: Fleet;
  readonly proxies: readonly FaultProxy[] | null;
  readonly admin: StoreAdmin;
  readonly server: RestartableServer | null;
  readonly freezable: FreezableServer | null;
  readonly failover: FailoverServer | null;
  readonly keys: readonly string[];
  readonly random: Random;
  readonly recorder: Recorder;
  readonly ttlMs: number;
  readonly kleppmann: KleppmannTally;
  /** Respawns in flight (the run waits for them before stopping). */
  readonly respawns: Array<Promise<void>>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Records a fault as an operation of the nemesis. */
function record(
  ctx: NemesisContext,
  op: OpName,
  fault: FaultName,
  key: string,
  target: string | undefined,
  act: () => Promise<unknown>,
): Promise<unknown> {
  return ctx.recorder
    .run(op, key, { reason: fault, ...(target === undefined ? {} : { target }) }, act, () => ({ type: 'ok' }))
    .catch(() => undefined);
}

function liveWorkers(ctx: NemesisContext): WorkerSlot[] {
  return ctx.fleet.slots.filter((worker) => worker.alive && !worker.paused);
}

/** Resolves with the first message from `worker` that `match` accepts, or `null` after `timeoutMs`. */
function nextMessage<M extends WorkerMessage>(
  ctx: NemesisContext,
  worker: WorkerSlot,
  match: (message: WorkerMessage) => message is M,
  timeoutMs: number,
): Promise<M | null> {
  return new Promise((resolve) => {
    const stop = ctx.fleet.on((from, message) => {
      if (from !== worker || !match(message)) return;
      clearTimeout(timer);
      stop();
      resolve(message);
    });
    const timer = setTimeout(() => {
      stop();
      resolve(null);
    }, timeoutMs);
  });
}

/**
 * Kleppmann's pause, made deterministic: the victim passes its own validity check and announces its next
 * write; it is SIGSTOPped right then, another worker takes the key over and writes, then the victim is
 * SIGCONTed and sends its write, which the store must refuse.
 */
async function kleppmann(ctx: NemesisContext): Promise<void> {
  const candidates = liveWorkers(ctx);
  if (candidates.length < 2) return;
  const victim = ctx.random.pick(candidates);
  const rescuer = ctx.random.pick(candidates.filter((worker) => worker !== victim));
  ctx.fleet.send(victim, { type: 'arm' });
  const announced = await nextMessage(
    ctx,
    victim,
    (m): m is Extract<WorkerMessage, { type: 'before-write' }> => m.type === 'before-write',
    8 * ctx.ttlMs,
  );
  if (announced === null) {
    ctx.fleet.send(victim, { type: 'disarm' });
    return;
  }
  ctx.kleppmann.rounds += 1;
  const heldWrite = nextMessage(
    ctx,
    victim,
    (m): m is Extract<WorkerMessage, { type: 'held-write' }> => m.type === 'held-write',
    20 * ctx.ttlMs,
  );
  await record(ctx, 'pause', 'kleppmann', '', victim.proc, async () => {
    ctx.fleet.pause(victim);
    ctx.fleet.send(victim, { type: 'go' });
    const id = ctx.random.int(1, 2 ** 30);
    const tookOver = nextMessage(
      ctx,
      rescuer,
      (m): m is Extract<WorkerMessage, { type: 'took-over' }> => m.type === 'took-over' && m.id === id,
      10 * ctx.ttlMs,
    );
    ctx.fleet.send(rescuer, { type: 'takeover', id, key: announced.key, deadlineMs: 8 * ctx.ttlMs });
    const answer = await tookOver;
    if (answer?.token === null || answer === null) ctx.kleppmann.noTakeover += 1;
    ctx.fleet.resume(victim);
  });
  const outcome = await heldWrite;
  if (outcome === null || outcome.accepted === null) ctx.kleppmann.unknown += 1;
  else if (outcome.accepted) ctx.kleppmann.accepted += 1;
  else ctx.kleppmann.refused += 1;
}

async function withProxy(ctx: NemesisContext, fault: FaultName, act: (proxy: FaultProxy) => Promise<void>): Promise<void> {
  if (ctx.proxies === null || ctx.proxies.length === 0) return;
  const slot = ctx.random.int(0, ctx.proxies.length - 1);
  const proxy = ctx.proxies[slot] as FaultProxy;
  await record(ctx, 'fault', fault, '', ctx.fleet.slots[slot]?.proc, () => act(proxy));
}

/** Injects one fault and waits until it has healed. */
export async function inject(ctx: NemesisContext, fault: FaultName): Promise<void> {
  const { random, ttlMs, fleet } = ctx;
  switch (fault) {
    case 'kleppmann':
      return kleppmann(ctx);
    case 'kill': {
      const victim = liveWorkers(ctx).length > 1 ? random.pick(liveWorkers(ctx)) : undefined;
      if (victim === undefined) return;
      await record(ctx, 'kill', fault, '', victim.proc, async () => fleet.kill(victim));
      // NOTE: a respawning worker may be killed again before it is ready; that respawn then just ends.
      ctx.respawns.push(
        sleep(random.int(0, 500))
          .then(() => fleet.respawn(victim))
          .catch(() => undefined),
      );
      return;
    }
    case 'pause': {
      const victim = liveWorkers(ctx).length > 1 ? random.pick(liveWorkers(ctx)) : undefined;
      if (victim === undefined) return;
      await record(ctx, 'pause', fault, '', victim.proc, async () => {
        fleet.pause(victim);
        await sleep(random.int(Math.round(1.5 * ttlMs), 3 * ttlMs));
        fleet.resume(victim);
      });
      return;
    }
    case 'kill-in-write': {
      const victim = liveWorkers(ctx).length > 1 ? random.pick(liveWorkers(ctx)) : undefined;
      if (victim === undefined) return;
      // NOTE: the worker kills itself inside its next fenced write (transaction open, lock held); a worker
      // that writes nothing in time is SIGKILLed wherever it is, like a plain kill. The kill is recorded when
      // the harness sees the exit, so takeover latency runs from the death, not from the order.
      const died = fleet.expectDeath(victim, 20 * ttlMs);
      fleet.send(victim, { type: 'die-in-write' });
      await died;
      await record(ctx, 'kill', fault, '', victim.proc, async () => undefined);
      ctx.respawns.push(
        sleep(random.int(0, 500))
          .then(() => fleet.respawn(victim))
          .catch(() => undefined),
      );
      return;
    }
    case 'freeze': {
      const server = ctx.freezable;
      if (server === null) return;
      await record(ctx, 'fault', fault, '', undefined, () => server.freeze(random.int(2 * ttlMs, 4 * ttlMs)));
      return;
    }
    case 'failover': {
      const topology = ctx.failover;
      if (topology === null) return;
      // NOTE: recorded for every key (a master serves several slots); the target is the key whose master dies.
      const key = random.pick(ctx.keys);
      await record(ctx, 'failover', fault, '', key, () => topology.failOver(key));
      return;
    }
    case 'quorum-loss': {
      const loseQuorum = ctx.failover?.loseQuorum;
      if (loseQuorum === undefined) return;
      // NOTE: recorded like a failover (the checker then counts what it lost apart, which must be zero on etcd),
      // so its takeover latency is measured too.
      const key = random.pick(ctx.keys);
      await record(ctx, 'failover', fault, '', key, () => loseQuorum(random.int(2 * ttlMs, 6 * ttlMs)));
      return;
    }
    case 'kill-connections':
      await record(ctx, 'fault', fault, '', undefined, () => ctx.admin.killConnections());
      return;
    case 'reset':
      return withProxy(ctx, fault, async (proxy) => proxy.resetAll());
    case 'lost-reply':
      return withProxy(ctx, fault, (proxy) => proxy.loseRepliesThenReset(random.int(20, 150)));
    case 'latency':
      return withProxy(ctx, fault, async (proxy) => {
        proxy.latency(random.int(50, 400));
        await sleep(random.int(1000, 2500));
        proxy.latency(0);
      });
    case 'partition':
      return withProxy(ctx, fault, async (proxy) => {
        proxy.partition();
        await sleep(random.int(ttlMs, 3 * ttlMs));
        proxy.heal();
      });
    case 'restart': {
      const server = ctx.server;
      if (server === null) return;
      await record(ctx, server.losesData ? 'amnesia' : 'restart', fault, '', undefined, () => server.crashAndRestart());
      return;
    }
    case 'force-expire': {
      const key = random.pick(ctx.keys);
      await record(ctx, 'force-expire', fault, key, undefined, () => ctx.admin.forceExpire(key));
      return;
    }
    case 'revoke': {
      const key = random.pick(ctx.keys);
      await record(ctx, 'revoke', fault, key, undefined, () => ctx.admin.revoke(key));
      return;
    }
    case 'script-flush': {
      const flush = ctx.admin.scriptFlush;
      if (flush === undefined) return;
      await record(ctx, 'fault', fault, '', undefined, () => flush());
      return;
    }
  }
}
