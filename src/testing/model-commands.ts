/**
 * Model-based commands: each runs one lease operation on the real store and checks the outcome (ok or the
 * refusal reason, tokens, what was inherited) against the reference model, then updates the model.
 * After every command the suite compares the store's `inspect` and ledger with the model.
 */
import type fc from 'fast-check';
import { isLeaseError } from '../errors.js';
import type { Lease } from '../lease.js';
import type { Leases } from '../leases-types.js';
import type { ClaimCommand as StoreClaimCommand, StoreClaimOutcome } from '../fence/operations.js';
import type { Store } from '../store.js';
import { expectClose, expectEqual, expectMatch, expectSame, expectTrue } from './assertions.js';
import type { StoreHarness } from './harness.js';
import {
  isExpired,
  isHeld,
  isHeldBack,
  liveModelWaiters,
  previousEnding,
  verdictFor,
  type ModelHandle,
  type ModelState,
} from './model-reference.js';

/**
 * Harnesses on which a run removed a record. A store's token floor outlives removed records (memory: one above
 * the highest removed token, for every key), so from then on a claim's token is only known to be above the
 * key's (exactly one more only before).
 */
const removedOn = new WeakSet<object>();

/** Notes that a run removed a record on `harness` (see `removedOn`). */
export function noteRemoval(harness: object): void {
  removedOn.add(harness);
}

/** What the commands act on: one fresh key, one lease API per worker, the handles each worker holds. */
export interface ModelReal {
  readonly harness: StoreHarness<Store>;
  readonly key: string;
  /** The semaphore whose permit 1 `key` is, `null` on a run of an ordinary key. */
  readonly semaphore: string | null;
  readonly workers: readonly Leases<Store>[];
  readonly operator: Leases<Store>;
  readonly handles: Lease[][];
  /** Default TTL of every lease API in this run. */
  readonly ttlMs: number;
}

type Command = fc.AsyncCommand<ModelState, ModelReal>;

/** Base of commands that present one of a worker's handles. */
abstract class HandleCommand implements Command {
  constructor(
    readonly worker: number,
    readonly pick: number,
  ) {}
  check(model: Readonly<ModelState>): boolean {
    return (model.handles[this.worker]?.length ?? 0) > 0;
  }
  protected modelHandle(model: ModelState): ModelHandle {
    const handles = model.handles[this.worker]!;
    return handles[this.pick % handles.length]!;
  }
  protected realHandle(real: ModelReal): Lease {
    const handles = real.handles[this.worker]!;
    return handles[this.pick % handles.length]!;
  }
  abstract run(model: ModelState, real: ModelReal): Promise<void>;
  protected get who(): string {
    return `w${this.worker}#${this.pick}`;
  }
}

/** A worker claims the key (with a run id, attributes, no expiry or recovering, as generated). */
export class ClaimCommand implements Command {
  constructor(
    readonly worker: number,
    readonly runId: string | null,
    readonly forever: boolean,
    readonly attributes: Readonly<Record<string, string>>,
    readonly recovering: boolean,
  ) {}
  check(): boolean {
    return true;
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const options = {
      runId: this.runId,
      attributes: this.attributes,
      recovering: this.recovering,
      ...(this.forever ? { ttlMs: null } : {}),
    };
    if (model.permits) {
      // NOTE: the key is a permit: the shell refuses its claim before any I/O (a claim would pass the semaphore's
      // limit), and nothing changes.
      let refused: unknown = null;
      await real.workers[this.worker]!.claim(real.key, options).catch((error: unknown) => {
        refused = error;
      });
      expectTrue(isLeaseError(refused) && refused.code === 'INVALID_ARGUMENT', `${this} of a permit key refused with INVALID_ARGUMENT`);
      return;
    }
    const result = await real.workers[this.worker]!.claim(real.key, options);
    const { grant } = model;
    if (grant !== null && isHeld(model)) {
      // NOTE: the same holder with the same (non-null) run id is told its run already holds the key.
      const sameRun = grant.worker === this.worker && grant.runId !== null && grant.runId === this.runId;
      expectMatch(
        result,
        {
          ok: false,
          reason: sameRun ? 'run-already-acquired' : 'held',
          token: grant.token,
          holder: `w${grant.worker}`,
          runId: grant.runId,
        },
        `${this} answered`,
      );
      return;
    }
    if (isHeldBack(model)) {
      expectMatch(result, { ok: false, reason: 'held-back', token: model.token }, `${this} answered`);
      return;
    }
    const previous = previousEnding(model);
    const inherited = model.checkpoint;
    if (model.recoveryRequired && !this.recovering) {
      expectMatch(
        result,
        {
          ok: false,
          reason: 'recovery-required',
          token: model.token,
          previous,
          checkpoint: inherited === null ? null : { token: inherited.token },
        },
        `${this} answered`,
      );
      return;
    }
    // NOTE: a claim that does not wait is refused while anybody waits, unless it recovers a key awaiting recovery.
    const waiting = liveModelWaiters(model);
    const first = waiting[0];
    if (first !== undefined && !model.recoveryRequired) {
      expectMatch(
        result,
        { ok: false, reason: 'queued', token: model.token, waiting: waiting.length, position: null, first: { holder: `w${first.worker}` } },
        `${this} answered`,
      );
      return;
    }
    expectMatch(
      result,
      { ok: true, previous, checkpoint: inherited === null ? null : { value: inherited.value, token: inherited.token } },
      `${this} answered`,
    );
    if (!result.ok) return;
    grantInModel(model, real, this.worker, this.runId, this.attributes, this.forever, result.lease, result.lease);
    model.waiters = waiting;
  }
  toString(): string {
    return `claim(w${this.worker}, run=${this.runId}, ${this.forever ? 'forever' : 'ttl'}, ${JSON.stringify(this.attributes)}${this.recovering ? ', recovering' : ''})`;
  }
}

/** Checks a granted claim's token and times against the model, then records the grant in the model. */
export function grantInModel(
  model: ModelState,
  real: ModelReal,
  worker: number,
  runId: string | null,
  attributes: Readonly<Record<string, string>>,
  forever: boolean,
  granted: { readonly token: bigint; readonly acquiredAt: number | null; readonly expiresAt: number | null },
  lease: Lease,
): void {
  const previous = previousEnding(model);
  const above = model.token > model.highest ? model.token : model.highest;
  // NOTE: the memory store mints exactly previous + 1 (until a removal raised its floor); other stores may use
  // a floor ("+ 1 or more").
  if (model.clocked && !removedOn.has(real.harness)) expectSame(granted.token, model.token + 1n);
  else expectTrue(granted.token > above, `the claim answered a token (${granted.token}) above every earlier one (${above})`);
  // NOTE: toBeCloseTo: stores with sub-millisecond clocks may return fractional epoch ms.
  if (forever) expectSame(granted.expiresAt, null);
  else expectClose(granted.expiresAt! - granted.acquiredAt!, real.ttlMs);
  if (model.clocked) expectSame(granted.acquiredAt, model.now);
  model.exists = true;
  model.token = granted.token;
  model.ending = previous;
  // NOTE: a grant clears a hold that has passed.
  model.heldUntil = null;
  model.grant = { token: granted.token, worker, runId, attributes, expiresAt: granted.expiresAt, forcedExpired: false };
  model.handles[worker]!.push({ token: granted.token, runId });
  real.handles[worker]!.push(lease);
}

/**
 * A claim a command makes on the Store itself for `worker` (no run id, no attributes, the run's TTL), with
 * `extra` (its `expect`, or its `queue`): what the shell would send, without the shell's checks.
 */
export function storeClaim(
  real: ModelReal,
  worker: number,
  secret: string,
  extra: Pick<StoreClaimCommand, 'expect' | 'queue'>,
): Promise<StoreClaimOutcome> {
  return real.harness.store.claim({
    key: real.key,
    holder: `w${worker}`,
    runId: null,
    secret,
    ttlMs: real.ttlMs,
    attributes: {},
    recovering: false,
    ...extra,
  });
}

/**
 * The handle of a grant made by a command that called the Store itself (no run id, no attributes): the worker's
 * lease API restores it, so every later command presents it like any grant.
 */
export function restoredLease(
  real: ModelReal,
  worker: number,
  secret: string,
  granted: { readonly token: bigint; readonly expiresAt: number | null },
): Lease {
  return real.workers[worker]!.restore({
    storeId: real.harness.store.id,
    key: real.key,
    token: granted.token.toString(),
    secret,
    holder: `w${worker}`,
    runId: null,
    attributes: {},
    expiresAt: granted.expiresAt,
  });
}

/** A worker renews one of its handles (stale ones included). */
export class RenewCommand extends HandleCommand {
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const handle = this.modelHandle(model);
    const expected = verdictFor(model, this.worker, handle);
    const outcome = await real.workers[this.worker]!.renew(this.realHandle(real));
    if (expected !== 'ok') {
      expectMatch(
        outcome,
        { ok: false, reason: expected, expected: { token: handle.token }, found: { token: expected === 'missing' ? null : model.token } },
        `${this} answered`,
      );
      return;
    }
    expectMatch(outcome, { ok: true, token: handle.token }, `${this} answered`);
    if (!outcome.ok) return;
    // NOTE: a bare renew keeps the grant's own TTL: a grant claimed without expiry stays without expiry.
    if (model.grant!.expiresAt === null) expectSame(outcome.expiresAt, null);
    else expectClose(outcome.expiresAt, outcome.now + real.ttlMs);
    if (model.clocked) expectSame(outcome.now, model.now);
    model.grant!.expiresAt = outcome.expiresAt;
  }
  override toString(): string {
    return `renew(${this.who})`;
  }
}

/** A worker checkpoints through one of its handles, optionally requiring attributes. */
export class CheckpointCommand extends HandleCommand {
  constructor(
    worker: number,
    pick: number,
    readonly value: { step: number; note: string },
    readonly requires: Readonly<Record<string, string>> | undefined,
  ) {
    super(worker, pick);
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const handle = this.modelHandle(model);
    const expected = verdictFor(model, this.worker, handle, this.requires === undefined ? {} : { requires: this.requires });
    const outcome = await real.workers[this.worker]!.checkpoint(
      this.realHandle(real),
      this.value,
      this.requires === undefined ? undefined : { attributes: this.requires },
    );
    if (expected !== 'ok') {
      expectMatch(outcome, { ok: false, reason: expected }, `${this} answered`);
      return;
    }
    expectMatch(outcome, { ok: true, checkpoint: { token: handle.token } }, `${this} answered`);
    model.checkpoint = { value: this.value, token: handle.token };
    model.recoveryRequired = false;
  }
  override toString(): string {
    return `checkpoint(${this.who}, ${JSON.stringify(this.value)}${this.requires === undefined ? '' : `, requires ${JSON.stringify(this.requires)}`})`;
  }
}

/** A worker appends to the ledger under the fence of one of its handles, optionally forged. */
export class WriteCommand extends HandleCommand {
  constructor(
    worker: number,
    pick: number,
    readonly forged: 'secret' | 'run' | null,
  ) {
    super(worker, pick);
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const handle = this.modelHandle(model);
    const expected = verdictFor(model, this.worker, handle, this.forged === null ? {} : { forged: this.forged });
    const entry = `w${this.worker}:t${handle.token}:${model.writes++}`;
    const leases = real.workers[this.worker]!;
    const outcome = await real.harness.appendUnderFence(leases, this.presented(real, leases), entry);
    if (expected !== 'ok') {
      expectMatch(
        outcome,
        { ok: false, reason: expected, expected: { token: handle.token }, found: { token: expected === 'missing' ? null : model.token } },
        `${this} answered`,
      );
    } else {
      expectMatch(outcome, { ok: true, token: handle.token }, `${this} answered`);
      model.ledger.push(entry);
    }
    expectEqual(await real.harness.readLedger(real.key), model.ledger, `the ledger after ${this}`);
  }
  private presented(real: ModelReal, leases: Leases<Store>): Lease {
    const lease = this.realHandle(real);
    if (this.forged === null) return lease;
    const json = lease.export();
    if (this.forged === 'run') return leases.restore({ ...json, runId: json.runId === 'forged' ? null : 'forged' });
    return leases.restore({ ...json, secret: json.secret.replace(/^./, (c) => (c === '0' ? '1' : '0')) });
  }
  override toString(): string {
    return `write(${this.who}${this.forged === null ? '' : `, forged ${this.forged}`})`;
  }
}

/** A worker releases one of its handles, keeping, clearing or setting the checkpoint. */
export class ReleaseCommand extends HandleCommand {
  constructor(
    worker: number,
    pick: number,
    readonly final: 'keep' | 'clear' | { done: number },
  ) {
    super(worker, pick);
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const handle = this.modelHandle(model);
    const expected = verdictFor(model, this.worker, handle);
    const options = this.final === 'keep' ? {} : { checkpoint: this.final === 'clear' ? null : this.final };
    const outcome = await real.workers[this.worker]!.release(this.realHandle(real), options);
    const releasedLast = model.ending?.kind === 'released' && model.ending.token === handle.token;
    if (expected === 'released' || (expected === 'superseded' && releasedLast)) {
      expectMatch(outcome, { ok: true, token: handle.token, alreadyReleased: true }, `${this} answered`);
      return;
    }
    if (expected !== 'ok') {
      expectMatch(outcome, { ok: false, reason: expected }, `${this} answered`);
      return;
    }
    expectMatch(outcome, { ok: true, token: handle.token, alreadyReleased: false }, `${this} answered`);
    model.grant = null;
    model.ending = { kind: 'released', token: handle.token };
    if (this.final === 'clear') model.checkpoint = null;
    else if (this.final !== 'keep') model.checkpoint = { value: this.final, token: handle.token };
    // NOTE: an explicit checkpoint decision (set or clear) resolves a pending recovery; keeping it does not.
    if (this.final !== 'keep') model.recoveryRequired = false;
  }
  override toString(): string {
    return `release(${this.who}, ${JSON.stringify(this.final)})`;
  }
}

/** A worker resolves the inherited checkpoint through one of its handles: resume or discard. */
export class RecoverCommand extends HandleCommand {
  constructor(
    worker: number,
    pick: number,
    readonly action: 'resume' | 'discard',
  ) {
    super(worker, pick);
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const handle = this.modelHandle(model);
    const expected = verdictFor(model, this.worker, handle);
    const outcome = await real.workers[this.worker]!.recover(this.realHandle(real), this.action);
    if (expected !== 'ok') {
      expectMatch(outcome, { ok: false, reason: expected }, `${this} answered`);
      return;
    }
    const checkpoint =
      this.action === 'discard' || model.checkpoint === null ? null : { value: model.checkpoint.value, token: handle.token };
    expectMatch(outcome, { ok: true, checkpoint: checkpoint === null ? null : { token: handle.token } }, `${this} answered`);
    model.checkpoint = checkpoint;
    model.recoveryRequired = false;
  }
  override toString(): string {
    return `recover(${this.who}, ${this.action})`;
  }
}

/** The operator revokes the key, optionally requiring recovery or expecting a token. */
export class RevokeCommand implements Command {
  constructor(
    readonly requireRecovery: boolean,
    readonly expect: 'none' | 'current' | 'stale',
  ) {}
  check(): boolean {
    return true;
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const current = model.grant?.token ?? 1n;
    const expectedToken = this.expect === 'none' ? undefined : this.expect === 'current' ? current : current + 1n;
    const outcome = await real.operator.revoke(real.key, {
      reason: 'model',
      by: 'ops',
      requireRecovery: this.requireRecovery,
      ...(expectedToken === undefined ? {} : { expectedToken }),
    });
    const refusal = !model.exists ? 'missing' : model.grant === null ? 'not-held' : this.expect === 'stale' ? 'superseded' : null;
    if (refusal !== null) {
      expectMatch(outcome, { ok: false, reason: refusal, token: model.exists ? model.token : null }, `${this} answered`);
      return;
    }
    const recoveryRequired = this.requireRecovery && model.checkpoint !== null;
    const grant = model.grant!;
    expectMatch(
      outcome,
      {
        ok: true,
        token: model.token + 1n,
        recoveryRequired,
        revoked: { kind: 'revoked', token: grant.token, holder: `w${grant.worker}`, runId: grant.runId, reason: 'model', by: 'ops' },
      },
      `${this} answered`,
    );
    model.token += 1n;
    model.grant = null;
    model.ending = { kind: 'revoked', token: grant.token };
    model.recoveryRequired = recoveryRequired;
  }
  toString(): string {
    return `revoke(${this.requireRecovery ? 'requireRecovery, ' : ''}expect ${this.expect})`;
  }
}

/** Advances the store's clock (stores whose clock the test controls). */
export class AdvanceClockCommand implements Command {
  constructor(readonly ms: number) {}
  check(model: Readonly<ModelState>): boolean {
    return model.clocked;
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    real.harness.advanceClock!(this.ms);
    model.now += this.ms;
  }
  toString(): string {
    return `advance(${this.ms})`;
  }
}

/** Expires the current grant through the harness's test hook. */
export class ExpireNowCommand implements Command {
  check(model: Readonly<ModelState>): boolean {
    return model.grant !== null && model.grant.expiresAt !== null;
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    await real.harness.expireNow(real.key);
    const grant = model.grant!;
    if (model.clocked) model.now = Math.max(model.now, grant.expiresAt!);
    else grant.forcedExpired = true;
    expectTrue(isExpired(model, grant), 'isExpired(model, grant)');
  }
  toString(): string {
    return 'expireNow()';
  }
}
