/**
 * What one chaos worker does, through the public API only: pick a key, `withLease` it, and under the lease
 * append to the key's ledger with fenced writes, append to a token-gated resource, checkpoint progress, and
 * now and then send bad input; or, with `election`, campaign for a key (`createElection`) and do the same under
 * each term. Every operation is recorded (see recorder.ts). Runs in a worker process
 * (worker.ts) or, for tests of the harness itself, in-process against the memory store.
 */
import { createElection } from '../../src/election.js';
import { isLeaseError } from '../../src/errors.js';
import type { FencedWriteOutcome, GateOutcome } from '../../src/fence/operations.js';
import type { Lease } from '../../src/lease.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { resourceOf, type WorkerBackend } from './backend.js';
import { encodeEntry } from './history.js';
import { createRandom, type Random } from './prng.js';
import { countingStore, recordingStore, type Completion, type Recorder } from './recorder.js';
import { skewedClock, type ClockSkew } from './skew.js';

/** What a worker does, and how fast. */
export interface WorkloadConfig {
  /** This worker incarnation's name (`w2.1`: worker 2 after one respawn); also its holder id. */
  readonly proc: string;
  readonly keys: readonly string[];
  readonly ttlMs: number;
  readonly seed: number;
  /** Fenced writes per grant, drawn from [min, max]. */
  readonly writesPerGrant: readonly [number, number];
  /** Pause between writes, ms. */
  readonly thinkMs: readonly [number, number];
  /** Pause after a refused claim, ms. */
  readonly idleMs: readonly [number, number];
  /** The worker's monotonic clock runs at a skewed rate and jumps (null: the real clock). */
  readonly skew: ClockSkew | null;
  /** Chance, per grant, of also sending a bad-input probe. */
  readonly badInputChance: number;
  /**
   * Leader election instead of plain claims: the worker campaigns for a key, writes under each term as under
   * a grant, and stops campaigning after its term (the next candidate is woken), then campaigns again.
   * @default false
   */
  readonly election?: boolean;
}

/** The deterministic-pause protocol: the harness may hold a worker right before a fenced write. */
export interface WorkloadHooks {
  /** Awaited after the worker's own validity check passed, right before the fenced write is sent. */
  beforeWrite(key: string, token: bigint): Promise<boolean>;
  /** Told whether the write that followed a held `beforeWrite` was accepted (`null`: unknown). */
  afterHeldWrite(key: string, token: bigint, accepted: boolean | null): void;
}

const noHooks: WorkloadHooks = { beforeWrite: async () => false, afterHeldWrite: () => undefined };
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const completionOf = (outcome: FencedWriteOutcome<unknown> | GateOutcome<unknown>): Completion => {
  if (outcome.ok) return { type: 'ok', ...('now' in outcome ? { storeNow: outcome.now } : {}) };
  return { type: 'fail', reason: outcome.reason, ...('now' in outcome ? { storeNow: outcome.now } : {}) };
};

/** One worker's loop. */
export class Workload {
  readonly leases: Leases;
  readonly #probe: ReturnType<typeof countingStore>;
  readonly #probeLeases: Leases;
  readonly #random: Random;
  readonly #clock: () => number;
  #stopping = false;
  #written = 0;
  /** The running campaign's stop (election workload), aborted by `stop()`. */
  #campaign: AbortController | null = null;

  constructor(
    readonly config: WorkloadConfig,
    private readonly backend: WorkerBackend,
    private readonly recorder: Recorder,
    private readonly hooks: WorkloadHooks = noHooks,
  ) {
    this.#random = createRandom(config.seed).fork(config.proc);
    this.#clock = config.skew === null ? () => performance.now() : skewedClock(config.skew);
    this.leases = createLeases(recordingStore(backend.store, recorder), {
      holder: config.proc,
      ttlMs: config.ttlMs,
      monotonicClock: this.#clock,
    });
    this.#probe = countingStore(backend.store);
    this.#probeLeases = createLeases(this.#probe.store, { holder: config.proc, ttlMs: config.ttlMs });
  }

  /** Asks the loop to end after the current grant. */
  stop(): void {
    this.#stopping = true;
    this.#campaign?.abort('stopping');
  }

  /** Runs until `stop()`. Never throws: store failures are recorded and the loop goes on. */
  async run(): Promise<void> {
    if (this.config.election === true) return this.#elect();
    while (!this.#stopping) {
      const key = this.#random.pick(this.config.keys);
      try {
        const outcome = await this.leases.withLease(key, (lease, signal) => this.#work(lease, signal), {
          runId: `${this.config.proc}-${this.#written}`,
        });
        if (!outcome.ok) await sleep(this.#random.int(...this.config.idleMs));
      } catch {
        await sleep(this.#random.int(...this.config.idleMs));
      }
    }
  }

  /**
   * The election workload: campaigns for a random key until elected, writes under the term (stopping when its
   * signal aborts: lost, revoked), then ends the campaign, which releases the term and wakes the next candidate.
   */
  async #elect(): Promise<void> {
    while (!this.#stopping) {
      const key = this.#random.pick(this.config.keys);
      const stop = new AbortController();
      this.#campaign = stop;
      const election = createElection(this.leases, key, {
        ttlMs: this.config.ttlMs,
        retryDelayMs: this.#random.int(...this.config.idleMs),
      });
      try {
        await election.campaign({
          signal: stop.signal,
          onElected: async (term, signal) => {
            await this.#work(term.lease, signal);
            stop.abort('term done');
          },
        });
      } catch {
        await sleep(this.#random.int(...this.config.idleMs));
      }
      this.#campaign = null;
    }
  }

  /** For the deterministic pause: claim `key` until granted, write once under it, release. Returns the token. */
  async takeover(key: string, deadlineMs: number): Promise<bigint | null> {
    const until = performance.now() + deadlineMs;
    while (performance.now() < until) {
      try {
        const outcome = await this.leases.withLease(key, async (lease) => {
          await this.#fencedAppend(lease);
          return lease.token;
        });
        if (outcome.ok) return outcome.value;
      } catch {
        // the store was unreachable: try again
      }
      await sleep(20);
    }
    return null;
  }

  async #work(lease: Lease, signal: AbortSignal): Promise<void> {
    const writes = this.#random.int(...this.config.writesPerGrant);
    const margin = this.config.ttlMs / 10;
    if (this.#random.chance(this.config.badInputChance)) await this.#badInput(lease);
    for (let i = 0; i < writes && !this.#stopping; i += 1) {
      // NOTE: the worker's own validity check, as a careful user writes it. The Kleppmann pause strikes after it.
      if (signal.aborted || this.#clock() >= lease.localDeadline - margin) return;
      const held = await this.hooks.beforeWrite(lease.key, lease.token);
      const accepted = await this.#fencedAppend(lease);
      if (held) this.hooks.afterHeldWrite(lease.key, lease.token, accepted);
      if (accepted !== true) return;
      await this.#gatedAppend(lease);
      if (this.#random.chance(0.5)) await this.#checkpoint(lease);
      await sleep(this.#random.int(...this.config.thinkMs));
    }
  }

  /** Appends one entry under the fence; `true` accepted, `false` refused, `null` unknown. */
  async #fencedAppend(lease: Lease): Promise<boolean | null> {
    const reqId = this.recorder.nextReqId('w');
    const entry = encodeEntry({ reqId, token: lease.token.toString() });
    try {
      const outcome = await this.recorder.run(
        'write',
        lease.key,
        { reqId, token: lease.token.toString() },
        () => this.backend.appendUnderFence(this.leases, lease, entry),
        completionOf,
      );
      this.#written += 1;
      return outcome.ok;
    } catch (error) {
      return isLeaseError(error, 'STORE_UNAVAILABLE') ? false : null;
    }
  }

  async #gatedAppend(lease: Lease): Promise<void> {
    const reqId = this.recorder.nextReqId('g');
    const entry = encodeEntry({ reqId, token: lease.token.toString() });
    await this.recorder
      .run(
        'gate',
        lease.key,
        { reqId, token: lease.token.toString() },
        () => this.backend.appendThroughGate(this.leases, lease, resourceOf(lease.key), entry),
        completionOf,
      )
      .catch(() => undefined);
  }

  async #checkpoint(lease: Lease): Promise<void> {
    const id = this.recorder.nextReqId('cp');
    await this.leases.checkpoint(lease, { id, written: this.#written }).catch(() => undefined);
  }

  /** Sends one kind of bad input through a counting store; it must be refused before any store call. */
  async #badInput(lease: Lease): Promise<void> {
    const probes: Array<[string, () => Promise<unknown>]> = [
      ['empty key', () => this.#probeLeases.claim('')],
      ['negative ttl', () => this.#probeLeases.claim(lease.key, { ttlMs: -1 })],
      ['NaN ttl on renew', () => this.#probeLeases.renew(lease, { ttlMs: Number.NaN })],
      ['bigint checkpoint', () => this.#probeLeases.checkpoint(lease, { n: 1n })],
      ['write without callback', () => this.#probeLeases.fencedWrite(lease, 'drop table' as never)],
      ['forged lease', () => this.#probeLeases.release({ ...lease, key: lease.key } as Lease)],
    ];
    const [what, send] = this.#random.pick(probes);
    const before = this.#probe.calls();
    const reqId = this.recorder.nextReqId('bad');
    await this.recorder
      .run(
        'bad-input',
        lease.key,
        { reqId, reason: what },
        async () => {
          try {
            await send();
            return false;
          } catch (error) {
            if (isLeaseError(error, 'INVALID_ARGUMENT')) return true;
            throw error;
          }
        },
        (refused) => ({ type: refused ? 'fail' : 'ok', reason: what, storeCalls: this.#probe.calls() - before }),
      )
      .catch(() => undefined);
  }
}
