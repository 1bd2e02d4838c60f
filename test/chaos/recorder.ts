/**
 * Records what a worker does as history events: a Store wrapper that logs every claim, renew, checkpoint
 * and release the library sends (including withLease's background renewals and final release), and a
 * helper that logs any other operation (fenced and gated writes, bad input) around the call.
 *
 * Outcome rules (testing.md §7.4): a value is `ok` or, for a refusal, `fail` with its reason; a thrown
 * `StoreUnavailableError` is `fail` (the request never left); any other throw is `info` (outcome unknown).
 */
import { isLeaseError } from '../../src/errors.js';
import type { Store } from '../../src/store.js';
import { stamp, type HistoryEvent, type HistoryWriter, type OpName } from './history.js';

/** Fields of a completion event the caller derives from the outcome. */
export type Completion = Omit<Partial<HistoryEvent>, 'proc' | 'op' | 'type' | 't'> & { readonly type: 'ok' | 'fail' | 'info' };

/** Writes history events for one worker incarnation. */
export class Recorder {
  #seq = 0;
  constructor(
    readonly proc: string,
    private readonly writer: HistoryWriter,
  ) {}

  /** A fresh request id, unique across the run (`proc:n`). */
  nextReqId(prefix = ''): string {
    this.#seq += 1;
    return `${this.proc}:${prefix}${this.#seq}`;
  }

  /**
   * Logs `invoke` (before `call` starts), then the completion `complete` derives from the result, or the
   * outcome of a throw. Rethrows what `call` threw.
   */
  async run<T>(
    op: OpName,
    key: string,
    invoke: Partial<HistoryEvent>,
    call: () => Promise<T>,
    complete: (result: T) => Completion,
  ): Promise<T> {
    const reqId = invoke.reqId ?? this.nextReqId();
    const base = { proc: this.proc, op, key, reqId };
    this.writer.write({ ...base, ...invoke, type: 'invoke', t: stamp() });
    try {
      const result = await call();
      const completion = complete(result);
      this.writer.write({ ...base, ...completion, reqId, t: stamp() });
      return result;
    } catch (error) {
      const unavailable = isLeaseError(error, 'STORE_UNAVAILABLE');
      const message = error instanceof Error ? `${error.name}: ${error.message}`.slice(0, 300) : String(error);
      this.writer.write({
        ...base,
        type: unavailable ? 'fail' : 'info',
        reason: unavailable ? 'unavailable' : 'unknown',
        error: message,
        t: stamp(),
      });
      throw error;
    }
  }
}

const checkpointId = (json: string): string | undefined => {
  try {
    const value = JSON.parse(json) as { id?: unknown };
    return typeof value.id === 'string' ? value.id : undefined;
  } catch {
    return undefined;
  }
};

type Refusable = { ok: true; now: number } | { ok: false; reason: string; now: number };
const refusalOf = (outcome: Refusable): Completion =>
  outcome.ok ? { type: 'ok', storeNow: outcome.now } : { type: 'fail', reason: outcome.reason, storeNow: outcome.now };

/** Wraps a store so that every lease operation the library sends is recorded. */
export function recordingStore<C>(store: Store<C>, recorder: Recorder): Store<C> {
  return {
    id: store.id,
    claim: (command) =>
      recorder.run(
        'claim',
        command.key,
        {},
        () => store.claim(command),
        (outcome) => {
          if (!outcome.ok)
            return {
              type: 'fail',
              reason: outcome.reason,
              storeNow: outcome.now,
              ...('token' in outcome ? { token: outcome.token.toString() } : {}),
            };
          const checkpoint = outcome.checkpoint;
          const id = checkpoint === null ? undefined : checkpointId(checkpoint.json);
          return {
            type: 'ok',
            token: outcome.token.toString(),
            storeNow: outcome.now,
            acquiredAt: outcome.acquiredAt,
            expiresAt: outcome.expiresAt,
            ...(outcome.previous === null ? {} : { previousToken: outcome.previous.token.toString(), reason: outcome.previous.kind }),
            ...(checkpoint === null
              ? {}
              : { checkpointToken: checkpoint.token.toString(), ...(id === undefined ? {} : { checkpointId: id }) }),
          };
        },
      ),
    renew: (command) =>
      recorder.run(
        'renew',
        command.fence.key,
        { token: command.fence.token.toString() },
        () => store.renew(command),
        (outcome) => (outcome.ok ? { type: 'ok', storeNow: outcome.now, expiresAt: outcome.expiresAt } : refusalOf(outcome)),
      ),
    checkpoint: (command) => {
      const id = checkpointId(command.json);
      return recorder.run(
        'checkpoint',
        command.fence.key,
        { token: command.fence.token.toString(), ...(id === undefined ? {} : { reqId: id }) },
        () => store.checkpoint(command),
        refusalOf,
      );
    },
    release: (command) =>
      recorder.run(
        'release',
        command.fence.key,
        { token: command.fence.token.toString() },
        () => store.release(command),
        (outcome) =>
          outcome.ok && outcome.alreadyReleased ? { type: 'ok', storeNow: outcome.now, alreadyReleased: true } : refusalOf(outcome),
      ),
    fencedWrite: (fence, write) => store.fencedWrite(fence, write),
    revoke: (command) => store.revoke(command),
    recover: (command) => store.recover(command),
    inspect: (key) => store.inspect(key),
    setKeyState: (command) => store.setKeyState(command),
    remove: (command) => store.remove(command),
    dequeue: (command) => store.dequeue(command),
  };
}

/** Wraps a store so that every call is counted (bad-input probes must cause none). */
export function countingStore<C>(store: Store<C>): { store: Store<C>; calls: () => number } {
  let calls = 0;
  const count =
    <A extends unknown[], R>(f: (...args: A) => R) =>
    (...args: A): R => {
      calls += 1;
      return f(...args);
    };
  return {
    calls: () => calls,
    store: {
      id: store.id,
      claim: count((command) => store.claim(command)),
      dequeue: count((command) => store.dequeue(command)),
      renew: count((command) => store.renew(command)),
      checkpoint: count((command) => store.checkpoint(command)),
      release: count((command) => store.release(command)),
      fencedWrite: count((fence, write) => store.fencedWrite(fence, write)),
      revoke: count((command) => store.revoke(command)),
      recover: count((command) => store.recover(command)),
      inspect: count((key) => store.inspect(key)),
      setKeyState: count((command) => store.setKeyState(command)),
      remove: count((command) => store.remove(command)),
    },
  };
}
