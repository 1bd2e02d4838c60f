/**
 * Model-based commands of fair waiting (issue 25, part 3), on the Store itself as the shell's waiting claims call
 * it: a waiting claim's attempt (`command.queue` naming one waiter of the worker) and a `dequeue`. The model keeps
 * the queue (`ModelState.waiters`); a grant from the queue is restored as a handle of its worker, so every other
 * command then presents it like any grant. Plain claims see the queue in `ClaimCommand` (refused `queued`).
 */
import type fc from 'fast-check';
import { newSecret } from '../secret.js';
import { expectMatch } from './assertions.js';
import { grantInModel, restoredLease, storeClaim, type ModelReal } from './model-commands.js';
import { isHeld, isHeldBack, liveModelWaiters, type ModelState } from './model-reference.js';

type Command = fc.AsyncCommand<ModelState, ModelReal>;

/** How long a place lasts: past a few clock advances on a controlled clock, never within a run otherwise. */
const placeTtl = (model: ModelState): number => (model.clocked ? 200 : 600_000);

/** The id of a worker's waiter `slot` (a worker waits with at most two at once). */
const waiterId = (worker: number, slot: number): string => `q${worker}-${slot}`;

/** A worker's waiting claim attempts for one of its waiters: queued when refused held / held-back / queued. */
export class WaitingClaimCommand implements Command {
  constructor(
    readonly worker: number,
    readonly slot: number,
  ) {}
  check(model: Readonly<ModelState>): boolean {
    return !model.permits;
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const id = waiterId(this.worker, this.slot);
    const secret = newSecret();
    const ttlMs = placeTtl(model);
    const outcome = await storeClaim(real, this.worker, secret, { queue: { waiterIds: [id], ttlMs } });
    const live = liveModelWaiters(model);
    /** The queue with this waiter's place taken or renewed (what every queueing refusal writes). */
    const queued = () => {
      const expiresAt = model.now + ttlMs;
      const present = live.find((waiter) => waiter.id === id);
      if (present !== undefined) present.expiresAt = expiresAt;
      return present === undefined ? [...live, { id, worker: this.worker, expiresAt }] : live;
    };
    const { grant } = model;
    if (grant !== null && isHeld(model)) {
      expectMatch(outcome, { ok: false, reason: 'held', token: grant.token, holder: `w${grant.worker}` }, `${this} answered`);
      model.waiters = queued();
      return;
    }
    if (isHeldBack(model)) {
      expectMatch(outcome, { ok: false, reason: 'held-back', token: model.token }, `${this} answered`);
      model.waiters = queued();
      return;
    }
    if (model.recoveryRequired) {
      expectMatch(outcome, { ok: false, reason: 'recovery-required', token: model.token }, `${this} answered`);
      return;
    }
    const waiters = queued();
    const first = waiters[0];
    if (first !== undefined && first.id !== id) {
      const position = waiters.findIndex((waiter) => waiter.id === id) + 1;
      expectMatch(
        outcome,
        { ok: false, reason: 'queued', token: model.token, waiting: waiters.length, position, first: { holder: `w${first.worker}` } },
        `${this} answered`,
      );
      model.waiters = waiters;
      return;
    }
    expectMatch(outcome, { ok: true }, `${this} answered`);
    if (!outcome.ok) return;
    grantInModel(model, real, this.worker, null, {}, false, outcome, restoredLease(real, this.worker, secret, outcome));
    model.waiters = waiters.filter((waiter) => waiter.id !== id);
  }
  toString(): string {
    return `waitingClaim(w${this.worker}, ${waiterId(this.worker, this.slot)})`;
  }
}

/** A worker's waiter stops waiting: `dequeue` takes its place out (and says whether it freed the key for the next). */
export class DequeueCommand implements Command {
  constructor(
    readonly worker: number,
    readonly slot: number,
  ) {}
  check(): boolean {
    return true;
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const id = waiterId(this.worker, this.slot);
    const outcome = await real.harness.store.dequeue({ key: real.key, waiterIds: [id] });
    const live = liveModelWaiters(model);
    const index = live.findIndex((waiter) => waiter.id === id);
    if (!model.exists || index < 0) {
      expectMatch(outcome, { ok: true, removed: 0, freed: false }, `${this} answered`);
      return;
    }
    const kept = live.filter((waiter) => waiter.id !== id);
    const claimable = !isHeld(model) && !isHeldBack(model);
    expectMatch(outcome, { ok: true, removed: 1, freed: index === 0 && claimable && kept.length > 0 }, `${this} answered`);
    model.waiters = kept;
  }
  toString(): string {
    return `dequeue(${waiterId(this.worker, this.slot)})`;
  }
}
