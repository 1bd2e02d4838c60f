/**
 * Leader election on a lease key, with no store of its own: a term IS a grant of the key, and the term's
 * token is the grant's fencing token, so a deposed leader's `fencedWrite` / `gateWrite` is refused by the same
 * fence as any stale holder's. A campaign is a loop of `withLease` runs with `wait` (renewal, release, the
 * store's release and revoke notifications); observers read `inspect` and listen to the same notifications.
 */
import { InvalidArgumentError, isStoreFailure, type LeaseError } from './errors.js';
import type { StoreTime } from './fence/types.js';
import type { LeaseInspection, Leases, RunningLease } from './leases-types.js';
import { MAX_TIMER_MS, SYSTEM_TIMERS, type Timers } from './timers.js';
import { assertKey, describe, MAX_TTL_MS, readOptions } from './validate.js';

/** A term of leadership: one grant of the election's key. Its `lease` is what fenced writes present. */
export interface Term {
  readonly key: string;
  readonly holder: string;
  /** The term's fencing token (the grant's): larger than every earlier term's of this key. */
  readonly token: bigint;
  /** When the term began, on the store's clock. */
  readonly since: StoreTime | null;
  /** The grant: pass it to `fencedWrite` / `gateWrite`, which refuse it once the term is over. */
  readonly lease: RunningLease;
}

/**
 * Why a term ended, as `onDemoted` is told: `lost` (a renew was refused: revoked, expired, taken over, or no
 * renewal confirmed in time), `resigned` (`resign()`), `stopped` (the campaign's signal), `failed`
 * (`onElected` threw; the grant was released before `onDemoted` is called).
 */
export type Demotion =
  | { readonly reason: 'lost'; readonly term: Term; readonly error: LeaseError }
  | { readonly reason: 'resigned' | 'stopped'; readonly term: Term; readonly released: boolean }
  | { readonly reason: 'failed'; readonly term: Term; readonly error: unknown };

/** Options of `createElection`. */
export interface ElectionOptions {
  /** A term's TTL in ms (renewed while the term lasts; a killed leader is replaced after it). @default the `Leases` default */
  readonly ttlMs?: number;
  /** Observers on a store without notifications: the longest gap between two reads. @default 1000 */
  readonly pollMs?: number;
  /** A candidate whose store is unreachable tries again after this many ms. @default 1000 */
  readonly retryDelayMs?: number;
  /** Timer functions. @default globalThis.setTimeout / clearTimeout */
  readonly timers?: Timers;
}

// NOTE: the handlers, the campaign's end and the leader are written inline so that the main entry exports
// only the factory and four types (Election, ElectionOptions, Term, Demotion); the aliases below name them.

/** Leader election on one key (see `createElection`). */
export interface Election {
  readonly key: string;
  /**
   * Campaigns until `handlers.signal` aborts or `resign()`: waits for the key (woken by the store's
   * notification when the leader releases), leads while the grant is renewed, and after a lost term campaigns
   * again. Resolves with how it ended and how many terms it won.
   */
  campaign(handlers: {
    /**
     * Called at the start of each term. The term lasts until `signal` aborts (lost, resigned, stopped), also
     * after this returns; the grant is released only once it has settled, so stop work when `signal` aborts.
     * A throw (or rejection) ends the term: released, reported as `failed`, and `campaign` rejects with it.
     */
    readonly onElected: (term: Term, signal: AbortSignal) => void | Promise<void>;
    /** Called after each term ends. A throw ends the campaign (`campaign` rejects with it); the grant is already released. */
    readonly onDemoted?: (demotion: Demotion) => void | Promise<void>;
    /** Ends the campaign: a leader's term is stopped and released at once (a handover), a waiting candidate stops waiting. */
    readonly signal?: AbortSignal;
  }): Promise<{ readonly reason: 'stopped' | 'resigned'; readonly terms: number }>;
  /** Ends this election's campaign: its term (if any) is released at once, so the next candidate is woken. */
  resign(): Promise<void>;
  /**
   * Who leads now, from `inspect`, without campaigning: the live grant's holder, run id, token (the term's
   * fencing token), `since` (when the term began), `expiresAt` and the store's `now`; `null`: nobody leads.
   */
  leader(): Promise<{
    readonly key: string;
    readonly holder: string;
    readonly runId: string | null;
    readonly token: bigint;
    readonly since: StoreTime;
    readonly expiresAt: StoreTime | null;
    readonly now: StoreTime;
  } | null>;
  /**
   * Calls `onChange` with the leader now and at each change (a new term, or `null`: nobody leads), without
   * campaigning, until the returned function is called or `options.signal` aborts. Woken by the store's
   * release and revoke notifications where it has them (and at the term's expiry); otherwise it reads every
   * `pollMs`. Resolves after the first call; rejects if the first read fails. A throwing `onChange` stops
   * the observation and is rethrown as an uncaught error.
   */
  observe(
    onChange: (leader: Awaited<ReturnType<Election['leader']>>) => void,
    options?: { readonly signal?: AbortSignal },
  ): Promise<() => void>;
}

/** What `campaign` takes. */
export type CampaignHandlers = Parameters<Election['campaign']>[0];
/** How a campaign ended. */
export type CampaignEnd = Awaited<ReturnType<Election['campaign']>>;
/** Who leads now, as the store says (`inspect`). */
export type Leader = NonNullable<Awaited<ReturnType<Election['leader']>>>;

/** Longest wait of one waiting claim (a campaign simply waits again). */
const WAIT_MS = MAX_TIMER_MS;
/** Observers with notifications: the longest gap between two reads (a term without expiry, a lost message). */
const RECHECK_MS = 10_000;
/** Observers: the first re-read after a message or an expiry that found no leader (then doubling to `pollMs`). */
const FIRST_VACANT_MS = 10;

/** The reason a campaign's own stop carries when `resign()` ended it. */
const RESIGNED: unique symbol = Symbol('resigned');

/**
 * Leader election on `key` for the holder of `leases` (its `holder` id is the leader's id). Bad input is
 * refused with `InvalidArgumentError` before any I/O.
 */
export function createElection(leases: Leases, key: string, options?: ElectionOptions): Election {
  if (!isLeases(leases)) throw new InvalidArgumentError(`createElection needs a Leases (from createLeases), got ${describe(leases)}`);
  assertKey(key);
  const given = readOptions('createElection options', options, ['ttlMs', 'pollMs', 'retryDelayMs', 'timers']);
  const ttlMs = given.ttlMs === undefined ? undefined : positiveMs('ttlMs', given.ttlMs, MAX_TTL_MS);
  const pollMs = given.pollMs === undefined ? 1000 : positiveMs('pollMs', given.pollMs, MAX_TIMER_MS);
  const retryDelayMs = given.retryDelayMs === undefined ? 1000 : positiveMs('retryDelayMs', given.retryDelayMs, MAX_TIMER_MS);
  const timers = given.timers === undefined ? SYSTEM_TIMERS : checkTimers(given.timers);
  let campaigning: { readonly stop: AbortController; readonly ended: Promise<unknown> } | null = null;

  const campaign = async (handlers: CampaignHandlers): Promise<CampaignEnd> => {
    const { onElected, onDemoted, signal } = checkHandlers(handlers);
    if (campaigning !== null) throw new InvalidArgumentError(`already campaigning for ${key}: one campaign per election at a time`);
    const stop = new AbortController();
    const forward = (): void => stop.abort(signal?.reason);
    if (signal?.aborted === true) forward();
    else signal?.addEventListener('abort', forward, { once: true });
    const ended = runCampaign(stop.signal, onElected, onDemoted);
    campaigning = { stop, ended: ended.catch(() => undefined) };
    try {
      return await ended;
    } finally {
      signal?.removeEventListener('abort', forward);
      campaigning = null;
    }
  };

  const runCampaign = async (
    stop: AbortSignal,
    onElected: CampaignHandlers['onElected'],
    onDemoted: CampaignHandlers['onDemoted'],
  ): Promise<CampaignEnd> => {
    let terms = 0;
    while (!stop.aborted) {
      // NOTE: set by the run (TypeScript does not see assignments made in a callback, hence an object).
      const run: { term: Term | null; failure: { readonly error: unknown } | null } = { term: null, failure: null };
      let outcome: Awaited<ReturnType<Leases['withLease']>>;
      try {
        outcome = await leases.withLease(
          key,
          async (lease, signal) => {
            const term: Term = { key, holder: lease.holder, token: lease.token, since: lease.acquiredAt, lease };
            run.term = term;
            terms += 1;
            try {
              await onElected(term, signal);
            } catch (error) {
              run.failure = { error };
              throw error;
            }
            await aborted(signal);
          },
          { ...(ttlMs === undefined ? {} : { ttlMs }), timers, signal: stop, wait: { timeoutMs: WAIT_MS } },
        );
      } catch (error) {
        // NOTE: withLease released the grant before it rethrew onElected's error.
        if (run.failure !== null && run.term !== null) {
          await onDemoted?.({ reason: 'failed', term: run.term, error: run.failure.error });
          throw run.failure.error;
        }
        if (!isStoreFailure(error)) throw error;
        await sleep(retryDelayMs, stop, timers);
        continue;
      }
      const { term } = run;
      if (term === null) continue; // not elected: the wait timed out (campaign again) or the campaign stopped
      if (!outcome.ok && outcome.reason === 'lost') {
        await onDemoted?.({ reason: 'lost', term, error: outcome.lost });
        continue;
      }
      const released = 'released' in outcome ? outcome.released : false;
      await onDemoted?.({ reason: stop.reason === RESIGNED ? 'resigned' : 'stopped', term, released });
    }
    return { reason: stop.reason === RESIGNED ? 'resigned' : 'stopped', terms };
  };

  const resign = async (): Promise<void> => {
    const running = campaigning;
    if (running === null) return;
    if (!running.stop.signal.aborted) running.stop.abort(RESIGNED);
    await running.ended;
  };

  const leader = async (): Promise<Leader | null> => leaderOf(await leases.inspect(key));

  const observe = async (
    onChange: (leader: Leader | null) => void,
    observeOptions?: { readonly signal?: AbortSignal },
  ): Promise<() => void> => {
    if (typeof onChange !== 'function') throw new InvalidArgumentError(`observe needs an onChange function, got ${describe(onChange)}`);
    const { signal } = readOptions('observe options', observeOptions, ['signal']);
    if (signal !== undefined) checkSignal(signal);
    return observeLeader(leases, key, onChange, signal, pollMs, timers);
  };

  return { key, campaign, resign, leader, observe };
}

/** The leader an inspection shows: its grant if live at the store's now. */
function leaderOf(inspection: LeaseInspection): Leader | null {
  const { grant } = inspection;
  if (grant === null || !grant.live) return null;
  return {
    key: inspection.key,
    holder: grant.holder,
    runId: grant.runId,
    token: grant.token,
    since: grant.acquiredAt,
    expiresAt: grant.expiresAt,
    now: inspection.now,
  };
}

/**
 * Reads who leads and calls `onChange` when the term changes. Subscribes first (releases and revokes wake
 * it), then reads; the next read is at the term's expiry, or soon after a message or a vacancy (a new term is
 * claimed by a notified waiter within milliseconds, and a claim sends no message): 10 ms, doubling to
 * `pollMs`. A term is read again at most `RECHECK_MS` (with notifications) or `pollMs` (without) later.
 */
async function observeLeader(
  leases: Leases,
  key: string,
  onChange: (leader: Leader | null) => void,
  signal: AbortSignal | undefined,
  pollMs: number,
  timers: Timers,
): Promise<() => void> {
  const store = leases.store;
  const unsubscribes: Array<() => void> = [];
  let stopped = false;
  let timer: unknown = null;
  let reading = false;
  let again = false;
  let vacantMs = FIRST_VACANT_MS;
  let last: Leader | null | undefined;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    if (timer !== null) timers.clearTimeout(timer);
    for (const unsubscribe of unsubscribes) unsubscribe();
    signal?.removeEventListener('abort', stop);
  };
  const wake = (): void => {
    vacantMs = FIRST_VACANT_MS;
    void read();
  };
  const read = async (): Promise<void> => {
    if (stopped) return;
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    if (timer !== null) timers.clearTimeout(timer);
    timer = null;
    let nextMs = pollMs;
    try {
      const now = leaderOf(await leases.inspect(key));
      if (last === undefined || last?.token !== now?.token) {
        last = now;
        try {
          if (!stopped) onChange(now);
        } catch (error) {
          stop();
          queueMicrotask(() => {
            throw error;
          });
        }
      }
      if (now === null) {
        // NOTE: a claim sends no message, so a vacancy is read at least every pollMs, notifications or not.
        nextMs = Math.min(vacantMs, pollMs);
        vacantMs = Math.min(vacantMs * 2, pollMs);
      } else {
        // NOTE: a term ends by a release or revoke (a message, where the store sends them) or at its expiry.
        const cap = unsubscribes.length > 0 ? RECHECK_MS : pollMs;
        vacantMs = FIRST_VACANT_MS;
        nextMs = now.expiresAt === null ? cap : Math.min(Math.max(now.expiresAt - now.now + 1, 1), cap);
      }
    } catch (error) {
      if (last === undefined) {
        reading = false;
        throw error;
      }
      // NOTE: the store is unreachable: keep the last answer and read again later.
    }
    reading = false;
    if (stopped) return;
    if (again) {
      again = false;
      void read().catch(() => undefined);
      return;
    }
    timer = timers.setTimeout(() => void read().catch(() => undefined), nextMs);
  };
  try {
    for (const watch of [store.watchFreed, store.watchRevoked]) {
      if (watch !== undefined) unsubscribes.push(await watch.call(store, key, wake));
    }
    if (signal?.aborted === true) {
      stop();
      return stop;
    }
    signal?.addEventListener('abort', stop, { once: true });
    await read();
  } catch (error) {
    stop();
    throw error;
  }
  return stop;
}

/** Whether `leases` looks like a `Leases` (a throwing getter or Proxy does not). */
function isLeases(leases: unknown): leases is Leases {
  try {
    if (typeof leases !== 'object' || leases === null) return false;
    const { withLease, inspect, store } = leases as Leases;
    return typeof withLease === 'function' && typeof inspect === 'function' && typeof store === 'object' && store !== null;
  } catch {
    return false;
  }
}

/** Checks `campaign`'s handlers before any I/O. */
function checkHandlers(handlers: unknown): CampaignHandlers {
  if (handlers === undefined) throw new InvalidArgumentError('campaign needs handlers: { onElected, onDemoted?, signal? }');
  const { onElected, onDemoted, signal } = readOptions('campaign handlers', handlers, ['onElected', 'onDemoted', 'signal']);
  if (typeof onElected !== 'function') throw new InvalidArgumentError(`onElected must be a function, got ${describe(onElected)}`);
  if (onDemoted !== undefined && typeof onDemoted !== 'function')
    throw new InvalidArgumentError(`onDemoted must be a function, got ${describe(onDemoted)}`);
  if (signal !== undefined) checkSignal(signal);
  return {
    onElected: onElected as CampaignHandlers['onElected'],
    ...(onDemoted === undefined ? {} : { onDemoted: onDemoted as NonNullable<CampaignHandlers['onDemoted']> }),
    ...(signal === undefined ? {} : { signal }),
  };
}

function positiveMs(what: string, value: unknown, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value > max)
    throw new InvalidArgumentError(`${what} must be a positive integer number of ms up to ${max}, got ${describe(value)}`);
  return value;
}

function checkTimers(timers: unknown): Timers {
  let usable: boolean;
  try {
    usable =
      typeof timers === 'object' &&
      timers !== null &&
      typeof (timers as Timers).setTimeout === 'function' &&
      typeof (timers as Timers).clearTimeout === 'function';
  } catch {
    usable = false; // a throwing getter or Proxy
  }
  if (!usable) throw new InvalidArgumentError('timers must be an object with setTimeout and clearTimeout functions');
  return timers as Timers;
}

/** Refuses a `signal` that is not an AbortSignal (a Proxy whose prototype lookup throws included). */
function checkSignal(signal: unknown): asserts signal is AbortSignal {
  let usable: boolean;
  try {
    usable = signal instanceof AbortSignal;
  } catch {
    usable = false;
  }
  if (!usable) throw new InvalidArgumentError('signal must be an AbortSignal');
}

/** Resolves when `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** Waits `ms`, or less if `signal` aborts. */
function sleep(ms: number, signal: AbortSignal, timers: Timers): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      timers.clearTimeout(handle);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const handle = timers.setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
