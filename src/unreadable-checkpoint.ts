/**
 * A stored checkpoint that is not valid JSON (written around leasefence, or damaged in the store) must not
 * brick its key: claim and inspect would otherwise throw at every call. It reads as a JSON object that says
 * so; the key stays usable, an operator sees it in `inspect`, and a holder clears or replaces it
 * (`recover(lease, 'discard')`, a release or fenced write with a checkpoint).
 */

/** The property that marks an unreadable checkpoint: `{ "leasefence:unreadable-checkpoint": true, ... }`. */
export const UNREADABLE_CHECKPOINT = 'leasefence:unreadable-checkpoint';

/** What an unreadable stored checkpoint of `length` characters reads as. */
export function unreadableCheckpoint(length: number): {
  readonly [UNREADABLE_CHECKPOINT]: true;
  readonly reason: string;
  readonly length: number;
} {
  return { [UNREADABLE_CHECKPOINT]: true, reason: 'the stored checkpoint is not valid JSON', length };
}

/** The value of a stored checkpoint's JSON text, or the unreadable marker when it does not parse. */
export function parseStoredCheckpoint(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return unreadableCheckpoint(json.length);
  }
}
