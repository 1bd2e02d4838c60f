/**
 * Watcher interest on the lease record: a release publishes on the freed channel (`freed-channel.ts`) only while
 * the record says someone watches the key (its `watched` field, epoch ms, later than `TIME`), because most releases
 * have nobody waiting and the publish is a `redis.call` on every cycle (docs/history/benchmarks.md, "Redis, round
 * five"). Revoke, a key-state change, remove and dequeue publish as before, always: the holder a revoke ends listens
 * too (`watchRevoked`, without a mark), and they are rare.
 *
 * WHY NO WAKE-UP IS LOST: `watchFreed` subscribes first, then marks the interest (`MARK_INTEREST_SCRIPT`), and
 * resolves only then; a waiting claim is made after its watch resolved (key-waiters.ts awaits `watchFreed`), and so
 * are the election's and the semaphores' reads. Redis runs the mark and a release one after the other: if the
 * release runs first, the claim made after the mark sees the grant ended; if the mark runs first, the release reads
 * it in the HMGET it makes anyway and publishes, and the subscription was already live. A key with no record gets a
 * hash with `watched` alone, which every script reads as no record (no `lease` field), and which the first claim
 * keeps (a claim writes `lease`, not the whole hash).
 *
 * Interest lapses by itself: a mark lasts `INTEREST_WINDOW_MS` of store time and is renewed every
 * `REMARK_EVERY_MS` while the process watches the key, so a crashed watcher costs at most one window of needless
 * publishes. A mark lost with the record (a restart without persistence) is renewed within `REMARK_EVERY_MS`; the
 * subscriber connection's reconnect wakes every watcher meanwhile (`freed-channel.ts`).
 */
import type { RedisConnection } from './connection.js';
import { defineScript, runScript } from './runner.js';

/** How long one mark of interest lasts, in store-clock ms. */
export const INTEREST_WINDOW_MS = 30_000;

/** How often a watched key's interest is marked again (a third of the window: one failed re-mark is harmless). */
export const REMARK_EVERY_MS = 10_000;

/**
 * mark interest. KEYS: record. ARGV: the window in ms. Sets `watched` to `TIME` + window (epoch ms), never lowering
 * it. Atomic like every script; touches no other field, so the record (or its absence) reads as before.
 */
export const MARK_INTEREST_SCRIPT: string = `
local t = redis.call('TIME')
local until_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
local was = tonumber(redis.call('HGET', KEYS[1], 'watched') or '0')
if until_ms > was then redis.call('HSET', KEYS[1], 'watched', string.format('%d', until_ms)) end
return 1
`;

const MARK_INTEREST = defineScript('mark interest', MARK_INTEREST_SCRIPT);
const WINDOW_ARGS = [String(INTEREST_WINDOW_MS)];

/** Marks of interest shared by every watch of one store: one re-mark timer per watched record. */
export interface FreedInterest {
  /** Marks interest in `record` (resolves once marked); the returned function ends this watcher's interest. */
  mark(record: string): Promise<() => void>;
}

/** Creates the marks of one store, sent on `connection`. */
export function createFreedInterest(connection: RedisConnection): FreedInterest {
  const watched = new Map<string, { count: number; timer: ReturnType<typeof setInterval> }>();
  const send = (record: string): Promise<unknown> => runScript(connection, MARK_INTEREST, [record], WINDOW_ARGS);
  return {
    async mark(record) {
      await send(record);
      let entry = watched.get(record);
      if (entry === undefined) {
        // NOTE: a failed re-mark is retried at the next tick; the window outlasts two of them.
        const timer = setInterval(() => void send(record).catch(() => undefined), REMARK_EVERY_MS);
        (timer as { unref?: () => void }).unref?.();
        entry = { count: 0, timer };
        watched.set(record, entry);
      }
      entry.count += 1;
      const current = entry;
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        current.count -= 1;
        if (current.count === 0 && watched.get(record) === current) {
          clearInterval(current.timer);
          watched.delete(record);
        }
      };
    },
  };
}
