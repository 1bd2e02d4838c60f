/**
 * Redis Cluster refuses a script whose keys live in different hash slots (`CROSSSLOT`) before running it,
 * so nothing was applied; leasefence turns that reply into an error that says how to name the keys.
 */
import { LeaseError } from '../../errors.js';
import { redactText } from '../../redact.js';

/** How many key names an error message quotes. */
const QUOTED_KEYS = 4;

/**
 * Redis Cluster refused a script because its keys are not all in one hash slot (`CROSSSLOT`): nothing was
 * applied. Name every key of a fenced write with the lease key's hash tag, `${hashTagOf(leaseKey)}:...`,
 * and give a token gate a resource whose hash tag is its lease's (or see `RedisTokenGateOptions.checkFence`).
 * Its code is `INVALID_ARGUMENT`: the key names, not the store, must change.
 */
export class RedisCrossSlotError extends LeaseError {
  override name = 'RedisCrossSlotError' as const;
  /** The keys the script declared (the adapter's own first), secret-like text redacted. */
  readonly keys: readonly string[];
  constructor(operation: string, keys: readonly string[], options?: { cause?: unknown }) {
    const redacted = keys.map(redactText);
    const quoted = redacted.slice(0, QUOTED_KEYS).map((key) => JSON.stringify(key)).join(', ');
    const more = keys.length > QUOTED_KEYS ? `, and ${keys.length - QUOTED_KEYS} more` : '';
    super(
      'INVALID_ARGUMENT',
      `redis cluster refused the ${operation} script: its keys are in different hash slots (CROSSSLOT), so nothing was applied. ` +
        `Name the keys you write under a lease with its hash tag, \`\${hashTagOf(leaseKey)}:...\` (hashTagOf from 'leasefence/redis'). Keys: ${quoted}${more}`,
      options,
    );
    this.keys = Object.freeze(redacted);
  }
}

/** Whether a Redis error reply says a script's keys span several slots (CROSSSLOT, or a non-local key inside a script). */
export function isCrossSlotReply(code: string, message: string): boolean {
  return code === 'CROSSSLOT' || /non local key|hash to the same slot/i.test(message);
}
