/**
 * Model-based commands of the record-level operations (issue 24), run on the Store itself: key state (with a
 * hold), release with a hold, remove, a fenced write with a submission (replays, conflicts), a write that refuses
 * itself, and a claim with `expect`. Each predicts the outcome from the reference model alone.
 */
import type fc from 'fast-check';
import { newSecret } from '../secret.js';
import { expectEqual, expectMatch } from './assertions.js';
import { grantInModel, noteRemoval, restoredLease, storeClaim, type ModelReal } from './model-commands.js';
import {
  firstDifference,
  inCodeUnitOrder,
  isExpired,
  isHeld,
  isHeldBack,
  liveModelWaiters,
  MODEL_SUBMISSION_RETENTION,
  removeRecord,
  verdictFor,
  type ModelState,
} from './model-reference.js';

type Command = fc.AsyncCommand<ModelState, ModelReal>;

/** Holds of the model runs: short on a controlled clock (advance-clock passes them), else never passing in a run. */
const holdMsOf = (model: ModelState): number => (model.clocked ? 120 : 3_600_000);

/** The handle `pick` of `worker`, in the model and in the run. */
function picked(model: ModelState, real: ModelReal, worker: number, pick: number) {
  const handles = model.handles[worker]!;
  const leases = real.handles[worker]!;
  return { handle: handles[pick % handles.length]!, lease: leases[pick % leases.length]! };
}

/** The fence refusal a verdict predicts, with the value a state change ended the grant on. */
function refusalOf(model: ModelState, verdict: string, token: bigint): Record<string, unknown> {
  const change = verdict === 'state-changed' ? model.ending?.change : undefined;
  return {
    ok: false,
    reason: verdict,
    expected: { token },
    ...(change === undefined ? {} : { attribute: { name: change.name, expected: change.from, found: model.state[change.name] ?? null } }),
  };
}

/** Someone without a lease sets values of the key's state, keeping, setting or cancelling its hold. */
export class SetStateCommand implements Command {
  constructor(
    readonly values: Readonly<Record<string, string | null>>,
    readonly hold: 'keep' | 'set' | 'cancel',
  ) {}
  check(): boolean {
    return true;
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const holdMs = this.hold === 'keep' ? undefined : this.hold === 'cancel' ? null : holdMsOf(model);
    const outcome = await real.harness.store.setKeyState({
      key: real.key,
      values: this.values,
      by: 'scanner',
      ...(holdMs === undefined ? {} : { holdMs }),
    });
    const changed = inCodeUnitOrder(Object.keys(this.values)).filter((name) => (this.values[name] ?? null) !== (model.state[name] ?? null));
    const { grant } = model;
    let ended: Record<string, unknown> | null = null;
    if (changed.length > 0 && grant !== null) {
      const name = changed[0]!;
      const from = model.state[name] ?? null;
      const live = !isExpired(model, grant);
      ended = live
        ? {
            kind: 'state-changed',
            token: grant.token,
            holder: `w${grant.worker}`,
            by: 'scanner',
            change: { name, from, to: this.values[name] ?? null },
          }
        : { kind: 'expired', token: grant.token, holder: `w${grant.worker}` };
      model.ending = live ? { kind: 'state-changed', token: grant.token, change: { name, from } } : { kind: 'expired', token: grant.token };
      model.grant = null;
    }
    for (const name of changed) {
      const value = this.values[name] ?? null;
      if (value === null) delete model.state[name];
      else model.state[name] = value;
    }
    const heldUntil = holdMs === undefined ? model.heldUntil : holdMs === null ? null : outcome.now + holdMs;
    // NOTE: a record is written (created, on a key without one) only when a value or the hold changes.
    if (changed.length > 0 || heldUntil !== model.heldUntil) model.exists = true;
    model.heldUntil = heldUntil;
    expectMatch(outcome, { ok: true, changed, ended }, `${this} answered`);
    expectEqual(outcome.state, model.state, `the state ${this} answered`);
  }
  toString(): string {
    return `setKeyState(${JSON.stringify(this.values)}, hold ${this.hold})`;
  }
}

/** A worker releases one of its handles with a hold. */
export class HoldReleaseCommand implements Command {
  constructor(
    readonly worker: number,
    readonly pick: number,
  ) {}
  check(model: Readonly<ModelState>): boolean {
    return (model.handles[this.worker]?.length ?? 0) > 0;
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const { handle, lease } = picked(model, real, this.worker, this.pick);
    const expected = verdictFor(model, this.worker, handle);
    const holdMs = holdMsOf(model);
    const outcome = await real.harness.store.release({ fence: lease.fence(), holdMs });
    const releasedLast = model.ending?.kind === 'released' && model.ending.token === handle.token;
    if (expected === 'released' || (expected === 'superseded' && releasedLast)) {
      expectMatch(outcome, { ok: true, token: handle.token, alreadyReleased: true }, `${this} answered`);
      return;
    }
    if (expected !== 'ok') {
      expectMatch(outcome, refusalOf(model, expected, handle.token), `${this} answered`);
      return;
    }
    expectMatch(outcome, { ok: true, token: handle.token, alreadyReleased: false }, `${this} answered`);
    model.grant = null;
    model.ending = { kind: 'released', token: handle.token };
    model.heldUntil = outcome.now + holdMs;
  }
  toString(): string {
    return `release(w${this.worker}#${this.pick}, hold)`;
  }
}

/** The operator removes the key's record, forced or not, expecting no token, the current one or another. */
export class RemoveCommand implements Command {
  constructor(
    readonly force: boolean,
    readonly expect: 'none' | 'current' | 'stale',
  ) {}
  check(): boolean {
    return true;
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const expectedToken = this.expect === 'none' ? null : this.expect === 'current' ? model.token : model.token + 1n;
    const outcome = await real.harness.store.remove({ key: real.key, force: this.force, expectedToken });
    if (!model.exists) {
      expectMatch(outcome, { ok: false, reason: 'missing', token: null }, `${this} answered`);
      return;
    }
    const refusal = this.expect === 'stale' ? 'superseded' : isHeld(model) && !this.force ? 'held' : null;
    if (refusal !== null) {
      expectMatch(outcome, { ok: false, reason: refusal, token: model.token }, `${this} answered`);
      return;
    }
    const { grant } = model;
    expectMatch(
      outcome,
      {
        ok: true,
        token: model.token,
        grant: grant === null ? null : { token: grant.token, holder: `w${grant.worker}`, runId: grant.runId, live: isHeld(model) },
      },
      `${this} answered`,
    );
    removeRecord(model);
    noteRemoval(real.harness);
  }
  toString(): string {
    return `remove(${this.force ? 'force, ' : ''}expect ${this.expect})`;
  }
}

/** A worker appends under one of its handles with a submission (run id, payload, bound to the grant or not). */
export class SubmitCommand implements Command {
  constructor(
    readonly worker: number,
    readonly pick: number,
    readonly runId: string,
    readonly payload: 'a' | 'b',
    readonly bindToGrant: boolean,
  ) {}
  check(model: Readonly<ModelState>): boolean {
    return (model.handles[this.worker]?.length ?? 0) > 0;
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const { handle, lease } = picked(model, real, this.worker, this.pick);
    const digest = this.payload.repeat(64);
    const entry = `w${this.worker}:t${handle.token}:submit:${model.writes++}`;
    const submission = { runId: this.runId, digest, receiptJson: null, bindToGrant: this.bindToGrant };
    const outcome = await real.harness.fencedAppend(lease.fence(), entry, { submission });
    const found = model.submissions.find((recorded) => recorded.runId === this.runId);
    const verdict = verdictFor(model, this.worker, handle);
    const stored =
      found === undefined ? null : { runId: found.runId, digest: found.digest, token: found.token, holder: `w${found.worker}` };
    if (found !== undefined && found.digest !== digest) {
      expectMatch(outcome, { ok: false, reason: 'replay-conflict', found: stored }, `${this} answered`);
    } else if (found !== undefined && (!this.bindToGrant || (found.token === handle.token && found.worker === this.worker))) {
      expectMatch(outcome, { ok: false, reason: 'replayed', submission: stored }, `${this} answered`);
    } else if (verdict !== 'ok') {
      expectMatch(outcome, refusalOf(model, verdict, handle.token), `${this} answered`);
    } else if (found !== undefined) {
      expectMatch(outcome, { ok: false, reason: 'replay-conflict', found: stored }, `${this} answered`);
    } else {
      expectMatch(
        outcome,
        { ok: true, token: handle.token, submission: { runId: this.runId, digest, token: handle.token } },
        `${this} answered`,
      );
      model.ledger.push(entry);
      model.submissions.push({ runId: this.runId, digest, token: handle.token, worker: this.worker });
      if (model.submissions.length > MODEL_SUBMISSION_RETENTION) model.submissions.shift();
    }
    expectEqual(await real.harness.readLedger(real.key), model.ledger, `the ledger after ${this}`);
  }
  toString(): string {
    return `submit(w${this.worker}#${this.pick}, ${this.runId}, payload ${this.payload}${this.bindToGrant ? ', bound' : ''})`;
  }
}

/** A worker's fenced write that reads and refuses itself: nothing applies (not the checkpoint, not the submission). */
export class RefusedWriteCommand implements Command {
  constructor(
    readonly worker: number,
    readonly pick: number,
  ) {}
  check(model: Readonly<ModelState>): boolean {
    return (model.handles[this.worker]?.length ?? 0) > 0;
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const { handle, lease } = picked(model, real, this.worker, this.pick);
    const verdict = verdictFor(model, this.worker, handle);
    const submission = { runId: `refused-${model.writes}`, digest: 'c'.repeat(64), receiptJson: null, bindToGrant: false };
    const entry = `w${this.worker}:t${handle.token}:refused:${model.writes++}`;
    const outcome = await real.harness.fencedAppend(
      lease.fence(),
      entry,
      { checkpointJson: '{"refused":true}', submission },
      { code: 'owner-inactive' },
    );
    if (verdict !== 'ok') expectMatch(outcome, refusalOf(model, verdict, handle.token), `${this} answered`);
    else expectMatch(outcome, { ok: false, reason: 'write-refused', code: 'owner-inactive', token: handle.token }, `${this} answered`);
    expectEqual(await real.harness.readLedger(real.key), model.ledger, `the ledger after ${this}`);
  }
  toString(): string {
    return `refusedWrite(w${this.worker}#${this.pick})`;
  }
}

/** A worker claims on the store with `expect`: the key's current values, or one that differs. */
export class ExpectClaimCommand implements Command {
  constructor(
    readonly worker: number,
    readonly expect: 'current' | 'other',
  ) {}
  check(): boolean {
    return true;
  }
  async run(model: ModelState, real: ModelReal): Promise<void> {
    const wanted: Record<string, string | null> =
      this.expect === 'current' ? { ...model.state, absent: null } : { rev: model.state['rev'] === '1' ? '2' : '1' };
    const secret = newSecret();
    const outcome = await storeClaim(real, this.worker, secret, { expect: wanted });
    const differs = firstDifference(model, wanted);
    const { grant } = model;
    if (differs !== null) {
      expectMatch(
        outcome,
        {
          ok: false,
          reason: 'state-mismatch',
          field: { name: differs, expected: wanted[differs] ?? null, found: model.state[differs] ?? null },
        },
        `${this} answered`,
      );
    } else if (grant !== null && isHeld(model)) {
      expectMatch(outcome, { ok: false, reason: 'held', token: grant.token }, `${this} answered`);
    } else if (isHeldBack(model)) {
      expectMatch(outcome, { ok: false, reason: 'held-back', token: model.token }, `${this} answered`);
    } else if (model.recoveryRequired) {
      expectMatch(outcome, { ok: false, reason: 'recovery-required', token: model.token }, `${this} answered`);
    } else if (liveModelWaiters(model).length > 0) {
      expectMatch(outcome, { ok: false, reason: 'queued', position: null, waiting: liveModelWaiters(model).length }, `${this} answered`);
    } else {
      expectMatch(outcome, { ok: true }, `${this} answered`);
    }
    if (!outcome.ok) return;
    grantInModel(model, real, this.worker, null, {}, false, outcome, restoredLease(real, this.worker, secret, outcome));
    // NOTE: expired places are dropped by the grant.
    model.waiters = liveModelWaiters(model);
  }
  toString(): string {
    return `claim(w${this.worker}, expect ${this.expect})`;
  }
}
