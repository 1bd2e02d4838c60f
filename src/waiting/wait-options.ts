/**
 * The `wait` option of a claim: how long a claim may wait for a held key, what stops it, and the bounds of
 * its schedule. Read and checked once, before any I/O.
 */
import { InvalidArgumentError } from '../errors.js';
import { MAX_TIMER_MS } from '../timers.js';
import { describe, readOptions } from '../validate.js';

/** How a claim waits for a held key (`claim(key, { wait })`, `claimOrThrow`, `withLease`). */
export interface WaitOptions {
  /**
   * How long to wait for the grant, in ms from the call (finite, at most 2^31 - 1). `0`: no waiting, the
   * answer the store (or this process's queue for the key) has now.
   */
  readonly timeoutMs: number;
  /**
   * Stops waiting at once: the claim resolves with the last refusal (or rejects with the signal's reason if
   * the store had not answered yet) and leaves no timer, subscription or listener behind.
   * @default none
   */
  readonly signal?: AbortSignal;
  /**
   * On a store without `watchFreed` (no release notifications), the longest gap between two attempts: a
   * release is noticed within this many ms.
   * @default 1_000
   */
  readonly pollMs?: number;
  /**
   * On a store with `watchFreed`, the longest gap between two attempts when no expiry says when to try (a
   * lease without expiry, a key awaiting recovery): bounds the delay a lost notification causes there.
   * @default 10_000
   */
  readonly recheckMs?: number;
  /**
   * Up to this many ms of random delay added to the attempt at a holder's expiry, so that waiters in
   * several processes do not all claim at the same instant.
   * @default 50
   */
  readonly jitterMs?: number;
  /**
   * How long the claim's place in the key's queue lasts without another attempt (see docs/waiting.md, "First
   * come, first served"): a waiting claim renews it every third of this while it waits, and a waiter whose
   * process died or paused leaves the queue this long after its last attempt.
   * @default the claim's `ttlMs` (30_000 for a claim without expiry)
   */
  readonly queueTtlMs?: number;
}

/** `WaitOptions` checked, with every default filled in. */
export interface WaitSettings {
  readonly timeoutMs: number;
  readonly signal: AbortSignal | null;
  readonly pollMs: number;
  readonly recheckMs: number;
  readonly jitterMs: number;
  /** `null`: the claim's `ttlMs` (see `queueTtlOf`). */
  readonly queueTtlMs: number | null;
}

/** The default `pollMs`. */
export const DEFAULT_POLL_MS = 1_000;
/** The default `recheckMs`. */
export const DEFAULT_RECHECK_MS = 10_000;
/** The default `jitterMs`. */
export const DEFAULT_JITTER_MS = 50;
/** The default `queueTtlMs` of a claim without expiry. */
export const DEFAULT_QUEUE_TTL_MS = 30_000;
/** The shortest `queueTtlMs`: an entry renewed every third of it costs the store a claim that often. */
export const MIN_QUEUE_TTL_MS = 300;

/** How long a waiting claim's place in the queue lasts: the `queueTtlMs` given, else the claim's TTL (bounded). */
export function queueTtlOf(settings: WaitSettings, ttlMs: number | null): number {
  if (settings.queueTtlMs !== null) return settings.queueTtlMs;
  return ttlMs === null ? DEFAULT_QUEUE_TTL_MS : Math.max(MIN_QUEUE_TTL_MS, ttlMs);
}

const WAIT_OPTIONS = ['timeoutMs', 'signal', 'pollMs', 'recheckMs', 'jitterMs', 'queueTtlMs'] as const;

/** Reads and checks a `wait` option (an `InvalidArgumentError` for anything else), before any I/O. */
export function readWaitOptions(wait: unknown): WaitSettings {
  if (wait === undefined || wait === null) throw new InvalidArgumentError(`wait must be an object with a timeoutMs, got ${describe(wait)}`);
  const given = readOptions('wait options', wait, WAIT_OPTIONS);
  const { signal } = given;
  if (signal !== undefined && !(signal instanceof AbortSignal))
    throw new InvalidArgumentError(`wait.signal must be an AbortSignal, got ${describe(signal)}`);
  return {
    timeoutMs: milliseconds('wait.timeoutMs', given.timeoutMs, 0),
    signal: signal ?? null,
    pollMs: given.pollMs === undefined ? DEFAULT_POLL_MS : milliseconds('wait.pollMs', given.pollMs, 1),
    recheckMs: given.recheckMs === undefined ? DEFAULT_RECHECK_MS : milliseconds('wait.recheckMs', given.recheckMs, 1),
    jitterMs: given.jitterMs === undefined ? DEFAULT_JITTER_MS : milliseconds('wait.jitterMs', given.jitterMs, 0),
    queueTtlMs: given.queueTtlMs === undefined ? null : milliseconds('wait.queueTtlMs', given.queueTtlMs, MIN_QUEUE_TTL_MS),
  };
}

/** A finite number of ms from `least` to the longest timer delay. */
function milliseconds(what: string, value: unknown, least: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < least || value > MAX_TIMER_MS) {
    throw new InvalidArgumentError(`${what} must be a finite number of ms from ${least} to ${MAX_TIMER_MS}, got ${describe(value)}`);
  }
  return value;
}
