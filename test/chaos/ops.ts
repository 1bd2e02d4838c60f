/**
 * Turns a flat history into operations (invoke + completion) with the time interval each one may have
 * taken effect in, and indexes them the way the checks need. Pure.
 */
import type { EventType, HistoryEvent, OpName } from './history.js';

/** An operation's known outcome: `info` also covers an invoke that never completed. */
export type OpStatus = Exclude<EventType, 'invoke'>;

/** One operation: when it was invoked, when (if ever) it completed, and how. */
export interface Op {
  readonly proc: string;
  readonly op: OpName;
  readonly key: string;
  readonly reqId: string;
  readonly invoke: HistoryEvent;
  readonly done: HistoryEvent | null;
  readonly status: OpStatus;
  /** Invoke time (ns). */
  readonly start: bigint;
  /** Completion time (ns); for an operation that never completed, `INFINITY_NS`. */
  readonly end: bigint;
  /** The token presented, or granted (claim ok). `null` when none. */
  readonly token: bigint | null;
}

/** Stands for "never completed": later than every real timestamp. */
export const INFINITY_NS: bigint = 2n ** 80n;

/** Assembles operations from events; completions without an invoke are ignored. */
export function assembleOps(history: readonly HistoryEvent[]): Op[] {
  const open = new Map<string, HistoryEvent>();
  const ops: Op[] = [];
  const finish = (invoke: HistoryEvent, done: HistoryEvent | null): void => {
    const tokenText = done?.token ?? invoke.token;
    ops.push({
      proc: invoke.proc,
      op: invoke.op,
      key: invoke.key,
      reqId: invoke.reqId,
      invoke,
      done,
      status: done === null ? 'info' : (done.type as OpStatus),
      start: BigInt(invoke.t),
      end: done === null ? INFINITY_NS : BigInt(done.t),
      token: tokenText === undefined ? null : BigInt(tokenText),
    });
  };
  for (const event of history) {
    const id = `${event.proc}\u0000${event.reqId}`;
    if (event.type === 'invoke') {
      open.set(id, event);
      continue;
    }
    const invoke = open.get(id);
    if (invoke === undefined) continue;
    open.delete(id);
    finish(invoke, event);
  }
  for (const invoke of open.values()) finish(invoke, null);
  ops.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  return ops;
}

/** Operations grouped by key, then by kind. */
export class OpIndex {
  readonly all: readonly Op[];
  readonly #byKey = new Map<string, Op[]>();

  constructor(ops: readonly Op[]) {
    this.all = ops;
    for (const op of ops) {
      const list = this.#byKey.get(op.key) ?? [];
      list.push(op);
      this.#byKey.set(op.key, list);
    }
  }

  /** Keys that saw worker operations. */
  keys(): string[] {
    return [...this.#byKey.keys()].filter((key) => key !== '');
  }

  /** Operations of `kind` on `key` (faults on the whole store have key `''` and are included for every key). */
  of(key: string, kind: OpName): Op[] {
    const own = (this.#byKey.get(key) ?? []).filter((op) => op.op === kind);
    if (key === '') return own;
    return own.concat((this.#byKey.get('') ?? []).filter((op) => op.op === kind));
  }

  /** Granted claims on `key`. */
  grants(key: string): Op[] {
    return this.of(key, 'claim').filter((op) => op.status === 'ok' && op.token !== null);
  }
}

/**
 * For "was a newer grant already known when this operation started?": the largest token among the
 * granted claims on a key that completed strictly before time `t`.
 */
export class CompletedGrants {
  readonly #ends: bigint[] = [];
  readonly #maxTokens: bigint[] = [];
  readonly #maxOps: Op[] = [];

  constructor(grants: readonly Op[]) {
    const sorted = [...grants].sort((a, b) => (a.end < b.end ? -1 : a.end > b.end ? 1 : 0));
    let best: Op | null = null;
    for (const grant of sorted) {
      if (best === null || (grant.token ?? 0n) > (best.token ?? 0n)) best = grant;
      this.#ends.push(grant.end);
      this.#maxTokens.push(best.token ?? 0n);
      this.#maxOps.push(best);
    }
  }

  /** The grant with the largest token among those completed before `t`, or `null`. */
  newestBefore(t: bigint): Op | null {
    let low = 0;
    let high = this.#ends.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if ((this.#ends[mid] ?? 0n) < t) low = mid + 1;
      else high = mid;
    }
    return low === 0 ? null : (this.#maxOps[low - 1] ?? null);
  }
}

/** Milliseconds between two history timestamps. */
export function msBetween(from: bigint, to: bigint): number {
  return Number(to - from) / 1e6;
}

/** A short human description of an operation, for violation messages. */
export function describeOp(op: Op): string {
  const token = op.token === null ? '' : ` token ${op.token}`;
  const reason = op.done?.reason === undefined ? '' : ` (${op.done.reason})`;
  return `${op.proc} ${op.op} ${op.key}${token} ${op.status}${reason} [${op.reqId}]`;
}
