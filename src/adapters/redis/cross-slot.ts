/**
 * Redis Cluster refuses a script whose keys live in different hash slots (`CROSSSLOT`) before running it,
 * so nothing was applied; leasefence turns that reply into an error that says how to name the keys. On a
 * cluster client leasefence checks the slots itself and refuses before sending (see `connection.ts`).
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
    const quoted = redacted
      .slice(0, QUOTED_KEYS)
      .map((key) => JSON.stringify(key))
      .join(', ');
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

/** The number of hash slots of a Redis Cluster. */
const SLOTS = 16_384;

/** CRC16/XMODEM (polynomial 0x1021, initial 0), the checksum Redis Cluster hashes keys with. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

const utf8 = new TextEncoder();

/** The Redis Cluster hash slot of `key`: CRC16 of its hash tag (text between the first `{` and the next `}`, when not empty), else of the whole key, mod 16384. */
export function clusterSlot(key: string): number {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  const hashed = close > open + 1 ? key.slice(open + 1, close) : key;
  return crc16(utf8.encode(hashed)) % SLOTS;
}

/** The keys a script command (`EVAL`/`EVALSHA`/`FCALL`, name first) declares, or `null` for another command. */
export function scriptKeys(args: readonly string[]): readonly string[] | null {
  if (!/^(EVAL|EVALSHA|EVAL_RO|EVALSHA_RO|FCALL|FCALL_RO)$/i.test(args[0] ?? '')) return null;
  const count = Number(args[2]);
  return Number.isSafeInteger(count) && count > 0 ? args.slice(3, 3 + count) : [];
}

/**
 * The error reply a cluster gives a script whose keys are in several slots, when `args` is such a script;
 * else `null`. Cluster connections check this before sending, so the script never reaches a node.
 */
export function crossSlotReply(args: readonly string[]): string | null {
  const keys = scriptKeys(args);
  const first = keys?.[0];
  if (keys === null || first === undefined) return null;
  const slot = clusterSlot(first);
  return keys.every((key) => clusterSlot(key) === slot)
    ? null
    : "CROSSSLOT Keys in request don't hash to the same slot (refused by leasefence before sending)";
}
