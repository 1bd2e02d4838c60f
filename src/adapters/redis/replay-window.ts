/**
 * The replay window of memoised operations (see `REMEMBER` in `script-parts.ts`): how long a request's
 * first reply is kept in its record for a re-delivery of the same request.
 */
import { InvalidArgumentError } from '../../errors.js';

/** The default replay window: five minutes. */
export const DEFAULT_REPLAY_WINDOW_MS = 300_000;

/**
 * The longest replay window: one day. A re-delivery comes from a client's reconnect, within seconds;
 * the window only has to outlast that, and the scripts compare it with `TIME` in exact Lua numbers.
 */
export const MAX_REPLAY_WINDOW_MS = 86_400_000;

/** Checks a `replayWindowMs` option (before any I/O): an integer of 1 to `MAX_REPLAY_WINDOW_MS` ms. */
export function replayWindowOf(value: unknown): number {
  if (value === undefined) return DEFAULT_REPLAY_WINDOW_MS;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_REPLAY_WINDOW_MS) {
    throw new InvalidArgumentError(
      `replayWindowMs must be an integer number of milliseconds from 1 to ${MAX_REPLAY_WINDOW_MS}, got ${typeof value === 'number' ? String(value) : typeof value}`,
    );
  }
  return value;
}
