/**
 * The model-based command of semaphores (issue 25): on a run whose key is permit 1 of a semaphore
 * (`permitKey(semaphore, 1)`), a worker acquires a permit with limit 1, so the only permit it may be granted is the
 * model's key. The answer is predicted from the reference model alone: `full` while the key is held, held back or
 * blocked for recovery (or, for a recovering acquire, not blocked), else the grant a claim would make. Every other
 * command of the suite then works on the permit key as on any key.
 */
import type fc from 'fast-check';
import type { Lease } from '../lease.js';
import { newSecret } from '../secret.js';
import { expectMatch, expectSame } from './assertions.js';
import { grantInModel, type ModelReal } from './model-commands.js';
import { isHeld, isHeldBack, previousEnding, type ModelState } from './model-reference.js';

type Command = fc.AsyncCommand<ModelState, ModelReal>;

/** A worker acquires a permit of the run's semaphore with limit 1 (with a run id, no expiry or recovering, as generated). */
export class AcquirePermitCommand implements Command {
  /** How its text starts (the suite finds the runs that acquire by it). */
  static readonly NAME = 'acquirePermit(';
  constructor(
    readonly worker: number,
    readonly runId: string | null,
    readonly forever: boolean,
    /** `when-blocked`: recovering exactly when the model says the key is blocked for recovery (so it is granted). */
    readonly recover: boolean | 'when-blocked',
  ) {}
  /** Whether this acquire is recovering, on the model as it is when it runs. */
  private recovering = false;
  check(model: Readonly<ModelState>): boolean {
    return model.permits;
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const { store } = real.harness;
    if (real.semaphore === null || store.acquirePermit === undefined) throw new Error('acquirePermit on a run without a semaphore');
    this.recovering = this.recover === 'when-blocked' ? model.recoveryRequired : this.recover;
    const secret = newSecret();
    const holder = `w${this.worker}`;
    const outcome = await store.acquirePermit({
      semaphore: real.semaphore,
      limit: 1,
      holder,
      runId: this.runId,
      secret,
      ttlMs: this.forever ? null : real.ttlMs,
      attributes: {},
      recovering: this.recovering,
    });
    const { grant } = model;
    const full = { ok: false, reason: 'full', semaphore: real.semaphore, limit: 1 };
    if (grant !== null && isHeld(model)) {
      const live = { key: real.key, index: 1, token: grant.token, holder: `w${grant.worker}`, runId: grant.runId };
      expectMatch(
        outcome,
        { ...full, live: [live], unavailable: [], ...(model.clocked ? { nextAt: grant.expiresAt } : {}) },
        `${this} answered`,
      );
      return;
    }
    // NOTE: a permit blocked for recovery is granted only to a recovering acquire, and a recovering acquire takes only such a permit.
    if (model.recoveryRequired !== this.recovering) {
      expectMatch(outcome, { ...full, live: [], unavailable: [1], nextAt: null }, `${this} answered`);
      return;
    }
    if (isHeldBack(model)) {
      expectMatch(
        outcome,
        { ...full, live: [], unavailable: [1], ...(model.clocked ? { nextAt: model.heldUntil } : {}) },
        `${this} answered`,
      );
      return;
    }
    const inherited = model.checkpoint;
    expectMatch(
      outcome,
      {
        ok: true,
        key: real.key,
        index: 1,
        limit: 1,
        live: 1,
        previous: previousEnding(model),
        checkpoint: inherited === null ? null : { token: inherited.token },
      },
      `${this} answered`,
    );
    if (!outcome.ok) return;
    // NOTE: as JSON text: the model keeps the value the lease API parsed (objects without a prototype).
    if (inherited !== null)
      expectSame(
        JSON.stringify(JSON.parse(outcome.checkpoint?.json ?? 'null')),
        JSON.stringify(inherited.value),
        `the checkpoint ${this} inherited`,
      );
    const lease: Lease = real.workers[this.worker]!.restore({
      storeId: store.id,
      key: real.key,
      token: outcome.token.toString(),
      secret,
      holder,
      runId: this.runId,
      attributes: {},
      expiresAt: outcome.expiresAt,
    });
    grantInModel(model, real, this.worker, this.runId, {}, this.forever, outcome, lease);
  }
  toString(): string {
    return `${AcquirePermitCommand.NAME}w${this.worker}, limit 1, run=${this.runId}, ${this.forever ? 'forever' : 'ttl'}${this.recover === false ? '' : this.recover === true ? ', recovering' : ', recovering when blocked'})`;
  }
}
