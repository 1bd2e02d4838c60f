/**
 * The chaos history: one JSONL line per event, written by workers (their operations) and by the harness
 * (its faults). An operation is an `invoke` event followed by at most one completion with the same
 * `proc` + `reqId`: `ok` (applied, outcome known), `fail` (definitely not applied: the store refused, or
 * the request never left the process) or `info` (outcome unknown). An invoke without a completion (the
 * process was killed, or the run ended) counts as `info`.
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** Operations of workers, and the harness's faults (`proc: 'nemesis'`). */
export type OpName =
  | 'claim'
  | 'renew'
  | 'release'
  | 'checkpoint'
  | 'write'
  | 'gate'
  | 'revoke'
  | 'bad-input'
  // faults, recorded by the harness
  | 'kill'
  | 'pause'
  | 'resume'
  | 'force-expire'
  | 'amnesia'
  | 'restart'
  // NOTE: a master killed and its asynchronous replica promoted: acknowledged grants and writes may be lost.
  | 'failover'
  | 'fault';

/** Invoke, or how the operation ended (see the module comment). */
export type EventType = 'invoke' | 'ok' | 'fail' | 'info';

/** One line of the history. Tokens are decimal strings (bigint does not survive JSON). */
export interface HistoryEvent {
  /** Who: a worker incarnation (`w2`, `w2.1` after a respawn) or `nemesis`. */
  readonly proc: string;
  readonly op: OpName;
  /** The lease key (`''` for faults that hit the whole store). */
  readonly key: string;
  readonly type: EventType;
  /** Pairs an invoke with its completion; for fenced and gate writes, the request id written to the ledger. */
  readonly reqId: string;
  /** The token presented (renew, write, ...) or granted (claim ok). */
  readonly token?: string;
  /** `process.hrtime.bigint()` as a decimal string: CLOCK_MONOTONIC, comparable across processes. */
  readonly t: string;
  /** The store's now reported with the outcome (epoch ms on the store's clock). */
  readonly storeNow?: number;
  readonly acquiredAt?: number;
  readonly expiresAt?: number | null;
  /** Why a refusal happened (fence reason, `held`, `stale-token`, ...), or which fault. */
  readonly reason?: string;
  /**
   * Release ok: `true` when the store answered that this grant had already been released (a re-delivery
   * after a lost reply): its effect happened earlier, not at `storeNow`.
   */
  readonly alreadyReleased?: boolean;
  /** Claim ok: the token of the previous grant's ending, if any. */
  readonly previousToken?: string;
  /** Claim ok: the inherited checkpoint's id and token; checkpoint invoke: the id written. */
  readonly checkpointId?: string;
  readonly checkpointToken?: string;
  /** Fault target (a worker proc) or detail. */
  readonly target?: string;
  /** Bad input: how many store calls it caused (must be 0). */
  readonly storeCalls?: number;
  readonly error?: string;
}

/** What the harness reads from the store at the end, per key. */
export interface FinalKeyState {
  readonly key: string;
  /** The key's token as the store reports it (`'0'` when missing). */
  readonly token: string;
  /** The fenced-write ledger in apply order. */
  readonly ledger: readonly LedgerEntry[];
  /** The token-gated resource's ledger in apply order. */
  readonly gateLedger: readonly LedgerEntry[];
  /** The checkpoint kept by the store. */
  readonly checkpoint: { readonly id: string; readonly token: string } | null;
}

/** One applied write, as the store kept it. */
export interface LedgerEntry {
  readonly reqId: string;
  readonly token: string;
}

/** Encodes a ledger entry as the single string workers store (`reqId|token`). */
export function encodeEntry(entry: LedgerEntry): string {
  return `${entry.reqId}|${entry.token}`;
}

/**
 * The file of a run's directory where a worker told to die inside a fenced write writes that write's ledger
 * entry (synchronously, just before its SIGKILL): the write was never committed, so it must not be in the store.
 */
export function diedInWritePath(dir: string): string {
  return join(dir, 'died-in-write.txt');
}

/** Decodes a stored ledger string. */
export function decodeEntry(text: string): LedgerEntry {
  const bar = text.lastIndexOf('|');
  return { reqId: text.slice(0, bar), token: text.slice(bar + 1) };
}

/** The current CLOCK_MONOTONIC time as a history timestamp. */
export function stamp(): string {
  return process.hrtime.bigint().toString();
}

/**
 * Appends events to a JSONL file with synchronous writes, so an event is on disk before the request it
 * announces leaves the process: a SIGKILL cannot lose an invoke.
 */
export class HistoryWriter {
  readonly #fd: number;
  constructor(readonly path: string) {
    this.#fd = openSync(path, 'a');
  }
  /** Writes one event. */
  write(event: HistoryEvent): void {
    writeSync(this.#fd, `${JSON.stringify(event)}\n`);
  }
  close(): void {
    closeSync(this.#fd);
  }
}

/** Reads a JSONL history file; a torn last line (a process killed mid-write) is skipped. */
export function readHistory(path: string): HistoryEvent[] {
  const events: HistoryEvent[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      events.push(JSON.parse(line) as HistoryEvent);
    } catch {
      // NOTE: only the last line of a SIGKILLed writer can be torn; it is an invoke whose request never left.
    }
  }
  return events;
}
