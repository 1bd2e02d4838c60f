/**
 * Semaphores on the Redis store (issue 25, part 2): `acquirePermit`, one script (`permit-scripts.ts`), one round
 * trip. As every Redis operation, the script replies the pre-image (every permit record of the semaphore, as it
 * was) and the adapter judges it with the pure core (`fence/permits.ts#acquirePermit`): the outcome is the core's,
 * and the script must have done exactly what the core decides (the same permit, the same token), else it is a bug,
 * reported loudly. Every other operation on a permit is the ordinary one on its key (`{N}:permit-<i>`, in the
 * semaphore's slot); `claim` and `setKeyState` on a permit key also enter its index (see `permitsSetOf`).
 */
import {
  acquirePermit,
  permitKey,
  permitOf,
  type AcquirePermitCommand,
  type AcquirePermitOutcome,
  type PermitCandidate,
} from '../../fence/permits.js';
import type { Store } from '../../store.js';
import { assertSemaphore } from '../../validate.js';
import type { RedisConnection } from './connection.js';
import type { KeyNames } from './keys.js';
import { ACQUIRE_PERMIT_SCRIPT } from './permit-scripts.js';
import { claimArgs, parseLeaseReply } from './record.js';
import { defineScript, runScript } from './runner.js';
import { REPLY } from './scripts.js';

const SCRIPT = defineScript('acquire permit', ACQUIRE_PERMIT_SCRIPT);

/** What the permit method needs of the Redis store it belongs to. */
export interface RedisPermitsHost {
  readonly connection: RedisConnection;
  readonly prefix: string;
  readonly names: KeyNames;
}

/** The semaphore method of a Redis store (`Store.acquirePermit`). */
export type RedisPermits = Required<Pick<Store, 'acquirePermit'>>;

/** The set of a semaphore's permit indexes (see `permit-scripts.ts`): in the semaphore's slot. */
const permitsSet = (prefix: string, semaphore: string): string => `${prefix}{${semaphore}}:permits`;

const OPEN_BRACE = 123;

/**
 * The permit index set of the semaphore `key` is a permit of (to give `claim` and `setKeyState` on it as their
 * second key), `null` for every other key: one character compared on the hot path of keys that are not permits.
 */
export function permitsSetOf(prefix: string, key: string): string | null {
  if (key.charCodeAt(0) !== OPEN_BRACE) return null;
  const permit = permitOf(key);
  return permit === null ? null : permitsSet(prefix, permit.semaphore);
}

/** Enters permit indexes (ARGV) in a semaphore's index set (KEYS[1]). */
const INDEX_PERMITS = defineScript('index permits', "return redis.call('SADD', KEYS[1], unpack(ARGV))");

/**
 * Enters the permit keys among `keys` (of one hash tag: claim-next's tag rule) in their semaphore's index before a
 * script may create their records (`addItems`: claim-next may grant them later); one round trip, only when one is.
 */
export async function indexPermits(connection: RedisConnection, prefix: string, keys: readonly string[]): Promise<void> {
  let set: string | null = null;
  const indexes: string[] = [];
  for (const key of keys) {
    if (key.charCodeAt(0) !== OPEN_BRACE) continue;
    const permit = permitOf(key);
    if (permit === null) continue;
    set = permitsSet(prefix, permit.semaphore);
    indexes.push(String(permit.index));
  }
  if (set !== null) await runScript(connection, INDEX_PERMITS, [set], indexes);
}

/** A script reply that is not what the core decides: a bug in the script, never an answer a caller should get. */
function disagree(what: string, semaphore: string, outcome: AcquirePermitOutcome): Error {
  const decided = outcome.ok ? `grants ${outcome.key} with token ${outcome.token}` : 'answers full';
  return new Error(
    `leasefence redis: the acquire permit script ${what} on semaphore ${semaphore} where the pure core ${decided}; this is a bug`,
  );
}

/** Creates the semaphore method of one Redis store. */
export function createRedisPermits(host: RedisPermitsHost): RedisPermits {
  const { connection, prefix, names } = host;

  const acquire = async (command: AcquirePermitCommand): Promise<AcquirePermitOutcome> => {
    assertSemaphore(command.semaphore, command.limit);
    const { semaphore, limit, secret } = command;
    // NOTE: the record of permit i is this base .. i .. ':lease' (keys.ts), derived rather than spelled twice.
    const first = names.record(permitKey(semaphore, 1), 'lease');
    const base = first.slice(0, first.length - '1:lease'.length);
    const args = [
      base,
      String(limit),
      // NOTE: an acquire does not consult a permit's queue (a documented choice): it jumps it.
      ...claimArgs(
        secret,
        command.holder,
        command.runId,
        command.ttlMs,
        command.attributes,
        command.recovering,
        undefined,
        undefined,
        true,
      ),
    ];
    const raw = (await runScript(connection, SCRIPT, [permitsSet(prefix, semaphore)], args)) as unknown[];
    const [kind, status, indexes, rows] = raw as [string, string, string[], unknown[]];
    const clock = status.slice(1);
    const now = Number(clock.slice(0, -3));
    const candidates: PermitCandidate[] = indexes.map((index, row) => {
      const key = permitKey(semaphore, Number(index));
      return { index: Number(index), record: parseLeaseReply(rows[row], key, secret).record, busy: false };
    });
    let floor = BigInt(clock);
    const index = kind === 'again' || kind === 'granted' ? Number(raw[4]) : null;
    if (kind === 'granted') {
      const claimed = parseLeaseReply(raw[5], permitKey(semaphore, index as number), secret, 'free');
      // NOTE: over a removed permit's tombstone the claim minted above its floor, as the core must.
      const removed = claimed.raw[REPLY.extras];
      if (typeof removed === 'string' && BigInt(removed) + 1n > floor) floor = BigInt(removed) + 1n;
      // NOTE: the rows leave checkpoints out (only a grant replies one): the chosen permit's is in the claim's reply.
      const at = candidates.findIndex((candidate) => candidate.index === index);
      const chosen = candidates[at];
      if (chosen !== undefined && chosen.record !== null)
        candidates[at] = { ...chosen, record: { ...chosen.record, checkpoint: claimed.record?.checkpoint ?? null } };
      if (!claimed.applied)
        throw new Error(`leasefence redis: the acquire permit script's claim of permit ${index} was refused; this is a bug`);
    }
    const { key, transition } = acquirePermit(candidates, command, now, floor);
    const { outcome } = transition;
    if (kind === 'full') {
      if (outcome.ok) throw disagree('answered full', semaphore, outcome);
    } else if (kind === 'again') {
      if (!outcome.ok || transition.changed || outcome.index !== index)
        throw disagree(`answered permit ${index} again`, semaphore, outcome);
    } else if (
      kind !== 'granted' ||
      !outcome.ok ||
      !transition.changed ||
      key !== permitKey(semaphore, index as number) ||
      outcome.token !== BigInt(raw[6] as string)
    ) {
      throw disagree(
        `${kind === 'granted' ? `granted permit ${index} with token ${String(raw[6])}` : `replied ${String(kind)}`}`,
        semaphore,
        outcome,
      );
    }
    return outcome;
  };

  // NOTE: an async function: bad input rejects (before any I/O) rather than throws.
  return { acquirePermit: acquire };
}
