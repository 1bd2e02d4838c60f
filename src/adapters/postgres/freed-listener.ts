/**
 * `watchFreed` for the Postgres store: one LISTEN on the table's freed channel (`freed-channel.ts`) on a
 * dedicated connection, held while anyone in the process waits, fanned out by key (the payload).
 *
 * The connection must reach Postgres directly (or through pgbouncer in SESSION mode): LISTEN lasts as
 * long as its session, and a transaction-mode pooler hands the session to others after each statement,
 * so notifications would go to whoever holds it then. The store's own `client` may go through any pooler.
 */
import { InvalidArgumentError, StoreUnavailableError } from '../../errors.js';
import { createFreedSubscriptions, wake, type FreedTransport } from '../freed-subscriptions.js';
import { REMARK_EVERY_MS } from './freed-interest.js';

/** The parts of a connected pg `Client` used for LISTEN. */
export interface PgListenClient {
  /** Sends LISTEN / UNLISTEN. */
  query(text: string): Promise<unknown>;
  /** Receives `notification`, `error` and `end` events. */
  on(event: string, listener: (...args: never[]) => void): unknown;
  /** Closes the connection when nobody waits any more (only a connection the store opened). */
  end(): Promise<void>;
}

/** The parts of a postgres.js `sql` instance used for LISTEN (it keeps a listening connection of its own). */
export interface PostgresJsListen {
  /** Listens on `channel`; `onListen` runs again after postgres.js re-listened on a new connection. */
  listen(
    channel: string,
    onNotify: (payload: string) => void,
    onListen?: () => void,
  ): Promise<{
    /** Stops listening. */
    unlisten(): Promise<void>;
  }>;
}

/** The parts of a PGlite instance used for LISTEN. */
export interface PGliteListen {
  /** Listens on `channel` (quoted by the store). */
  listen(channel: string, callback: (payload: string) => void): Promise<unknown>;
  /** Stops `callback` listening on `channel`. */
  unlisten(channel: string, callback: (payload: string) => void): Promise<void>;
  /** Runs a statement (used to check the instance at creation). */
  exec(query: string): Promise<unknown>;
}

/**
 * The `listener` option of the Postgres store:
 * - a function returning a new connected pg `Client` (`async () => { const c = new pg.Client(url); await
 *   c.connect(); return c; }`): the store opens one when a claim first waits, opens another after a lost
 *   connection (and LISTENs again), and ends it when nobody waits any more;
 * - a connected pg `Client` that you own: not reopened after it is lost (waits then retry on schedule);
 * - a postgres.js `sql` instance (its `sql.listen` connection reconnects by itself);
 * - a PGlite instance (in-process, nothing to lose).
 */
export type PostgresListenerOption = (() => Promise<PgListenClient>) | PgListenClient | PostgresJsListen | PGliteListen;

/** What a listener connection reports to the store. */
interface ListenerEvents {
  /** A notification on the channel, with its payload. */
  readonly notified: (payload: string) => void;
  /** The connection came back after a loss: notifications may have been missed. */
  readonly reconnected: () => void;
}

const quoted = (channel: string): string => `"${channel}"`;

/** The first retry after a lost pg connection, doubled per failure up to `MAX_RETRY_MS`. */
const FIRST_RETRY_MS = 50;
const MAX_RETRY_MS = 5_000;

/** LISTEN through pg clients: one of yours, or made (and remade after a loss) by your function. */
function pgTransport(source: PgListenClient | (() => Promise<PgListenClient>), events: ListenerEvents): FreedTransport {
  const owned = typeof source === 'function';
  /** The connection in use (or being opened); `null` when there is none or it was lost. */
  let current: Promise<PgListenClient> | null = null;
  let listening: string | null = null;
  let retryMs = FIRST_RETRY_MS;
  let retry: ReturnType<typeof setTimeout> | undefined;

  const connect = (): Promise<PgListenClient> => {
    if (current !== null) return current;
    const attempt = (async () => {
      const client = typeof source === 'function' ? await source() : source;
      const lost = (): void => {
        // NOTE: pg emits 'error' then 'end' for one loss; only the first, on the connection in use, counts.
        if (current !== attempt) return;
        current = null;
        if (owned && listening !== null) reconnectLater();
      };
      client.on('notification', ((message: { channel: string; payload?: string }) => {
        if (message.channel === listening && message.payload !== undefined) events.notified(message.payload);
      }) as (...args: never[]) => void);
      client.on('error', lost);
      client.on('end', lost);
      return client;
    })();
    current = attempt;
    attempt.catch(() => {
      if (current === attempt) current = null;
    });
    return attempt;
  };

  const reconnectLater = (): void => {
    clearTimeout(retry);
    retry = setTimeout(() => {
      const channel = listening;
      if (channel === null) return;
      connect()
        .then((client) => client.query(`LISTEN ${quoted(channel)}`))
        .then(() => {
          retryMs = FIRST_RETRY_MS;
          events.reconnected();
        })
        .catch(() => {
          current = null;
          retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
          if (listening !== null) reconnectLater();
        });
    }, retryMs);
    // NOTE: a pending retry alone must not keep the process alive.
    (retry as { unref?: () => void }).unref?.();
  };

  return {
    async subscribe(channel) {
      listening = channel;
      const client = await connect();
      await client.query(`LISTEN ${quoted(channel)}`);
    },
    async unsubscribe(channel) {
      listening = null;
      clearTimeout(retry);
      const client = current;
      if (client === null) return;
      if (!owned) {
        await (await client).query(`UNLISTEN ${quoted(channel)}`);
        return;
      }
      current = null;
      await (await client).end();
    },
  };
}

/** LISTEN through postgres.js, which re-LISTENs after a reconnect and calls `onListen` each time. */
function postgresJsTransport(sql: PostgresJsListen, events: ListenerEvents): FreedTransport {
  let handle: { unlisten(): Promise<void> } | null = null;
  return {
    async subscribe(channel) {
      let listens = 0;
      handle = await sql.listen(channel, events.notified, () => {
        listens += 1;
        if (listens > 1) events.reconnected();
      });
    },
    async unsubscribe() {
      const ending = handle;
      handle = null;
      await ending?.unlisten();
    },
  };
}

/**
 * LISTEN through PGlite (it lowercases a channel name unless it is quoted). NOTE: the function PGlite's
 * `listen` returns sends UNLISTEN with the unquoted name (PGlite 0.5), which fails for our channel; its
 * `unlisten(quoted name, callback)` sends it quoted.
 */
function pgliteTransport(pg: PGliteListen, events: ListenerEvents): FreedTransport {
  const onNotify = (payload: string): void => events.notified(payload);
  return {
    async subscribe(channel) {
      await pg.listen(quoted(channel), onNotify);
    },
    async unsubscribe(channel) {
      await pg.unlisten(quoted(channel), onNotify);
    },
  };
}

/** Picks the transport for `listener` by its shape. */
function transportOf(listener: PostgresListenerOption, events: ListenerEvents): FreedTransport {
  const shape = listener as Partial<PostgresJsListen & PGliteListen & PgListenClient> & { waitReady?: unknown; unsafe?: unknown };
  if (typeof listener === 'function' && typeof shape.listen === 'function' && typeof shape.unsafe === 'function')
    return postgresJsTransport(listener as unknown as PostgresJsListen, events);
  if (typeof listener === 'function') return pgTransport(listener as () => Promise<PgListenClient>, events);
  if (typeof shape.listen === 'function' && typeof shape.exec === 'function' && 'waitReady' in shape)
    return pgliteTransport(listener as PGliteListen, events);
  if (typeof shape.query === 'function' && typeof shape.on === 'function') return pgTransport(listener as PgListenClient, events);
  throw new InvalidArgumentError(
    '`listener` must be a function returning a connected pg Client, a pg Client, a postgres.js sql instance or a PGlite instance',
  );
}

/** Marks waiter interest in a key on its lease row (freed-interest.ts); resolves once the mark committed. */
export type MarkInterest = (key: string) => Promise<void>;

/** Sends `NOTIFY channel, payload` through the store's own client; resolves once it committed. */
export type SendProbe = (channel: string, payload: string) => Promise<void>;

/** The payload prefix of a probe notification (`probedTransport`); other processes' probes wake nobody. */
export const PROBE_PREFIX = 'leasefence:probe:';

let probeCount = 0;

/**
 * `transport` whose first successful subscription is checked end to end: after LISTEN, a probe NOTIFY sent
 * through the store's client must reach the listener within `probeTimeoutMs`. NOTE: a listener that goes
 * through a pooler in transaction mode (PgBouncer, Supabase's or Neon's pooler) gets its LISTEN confirmed,
 * but the pooler hands that server session to other clients after the statement, so no notification ever
 * reaches it and waiters would silently wait for their schedule. Such a listener is refused (`refused`,
 * for every later watch too) with an InvalidArgumentError naming the `listener` option; its waiters then
 * claim on their `pollMs` schedule. A probe that could not be sent decides nothing: the subscription
 * stands, and the next one probes again.
 */
function probedTransport(
  transport: FreedTransport,
  sendProbe: SendProbe,
  probes: Map<string, () => void>,
  probeTimeoutMs: number,
): { readonly transport: FreedTransport; readonly refused: InvalidArgumentError | null } {
  const state: { transport: FreedTransport; refused: InvalidArgumentError | null } = { transport, refused: null };
  let verified = false;
  const probe = async (channel: string): Promise<void> => {
    probeCount += 1;
    const payload = `${PROBE_PREFIX}${probeCount}:${Math.random().toString(36).slice(2)}`;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const heard = new Promise<boolean>((resolve) => {
      probes.set(payload, () => resolve(true));
      timer = setTimeout(() => resolve(false), probeTimeoutMs);
    });
    try {
      try {
        await sendProbe(channel, payload);
      } catch {
        // NOTE: no verdict without a probe (the store is unreachable, or its notification queue is full):
        // the subscription stands as it did before this check, and the next one probes again.
        return;
      }
      if (await heard) {
        verified = true;
        return;
      }
    } finally {
      clearTimeout(timer);
      probes.delete(payload);
    }
    state.refused = new InvalidArgumentError(
      `the Postgres store's \`listener\` connection confirmed its LISTEN but did not receive a notification within ${probeTimeoutMs} ms: it goes through a pooler in transaction mode (PgBouncer, Supabase's or Neon's pooler), which cannot carry LISTEN; give \`listener\` a direct connection (or one through a session-mode pooler). Until then waiting claims are woken by their pollMs schedule only`,
    );
    throw state.refused;
  };
  state.transport = {
    async subscribe(name) {
      if (state.refused !== null) throw state.refused;
      await transport.subscribe(name);
      if (!verified) await probe(name);
    },
    unsubscribe: (name) => transport.unsubscribe(name),
  };
  return state;
}

/**
 * `Store.watchFreed` for the Postgres store on `channel` through `listener`. Each watch resolves once the
 * LISTEN is live AND `mark` committed this key's interest (in that order: see freed-interest.ts); a watched
 * key is marked again every `REMARK_EVERY_MS` until its last watch ends. A mark that fails, or that takes
 * longer than `subscribeTimeoutMs` (the row is locked by a long fenced write), fails the watch: its waiters
 * then claim on their schedule only.
 */
export function createPostgresFreed(
  listener: PostgresListenerOption,
  channel: string,
  subscribeTimeoutMs: number,
  mark: MarkInterest,
  sendProbe: SendProbe,
): (key: string, onFreed: () => void) => Promise<() => void> {
  const byKey = new Map<string, Set<() => void>>();
  const remarks = new Map<string, ReturnType<typeof setInterval>>();
  const probes = new Map<string, () => void>();
  const transport = transportOf(listener, {
    notified: (payload) => {
      const probe = probes.get(payload);
      if (probe !== undefined) probe();
      else wake(byKey.get(payload) ?? []);
    },
    reconnected: () => {
      for (const watchers of [...byKey.values()]) wake(watchers);
    },
  });
  const probed = probedTransport(transport, sendProbe, probes, Math.max(1, Math.floor(subscribeTimeoutMs / 2)));
  const channelSubscription = createFreedSubscriptions(probed.transport, subscribeTimeoutMs);

  // NOTE: at most one mark per key in flight, so marks stuck behind a locked row never stack up on the pool.
  const marking = new Map<string, { readonly running: Promise<void>; next: Promise<void> | null }>();
  const startMark = (key: string): Promise<void> => {
    const state: { readonly running: Promise<void>; next: Promise<void> | null } = { running: mark(key), next: null };
    marking.set(key, state);
    const settled = (): void => {
      if (marking.get(key) === state && state.next === null) marking.delete(key);
    };
    state.running.then(settled, settled);
    return state.running;
  };
  /**
   * Marks `key`; while a mark of it runs, joins the one queued behind it, which starts after this call (so
   * after the caller's LISTEN was live: no wake-up lost), instead of sending another.
   */
  const markOnce = (key: string): Promise<void> => {
    const state = marking.get(key);
    if (state === undefined) return startMark(key);
    state.next ??= state.running.then(
      () => startMark(key),
      () => startMark(key),
    );
    return state.next;
  };

  const markWithin = async (key: string): Promise<void> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new StoreUnavailableError(`marking interest in ${JSON.stringify(key)} took longer than ${subscribeTimeoutMs} ms`)),
        subscribeTimeoutMs,
      );
    });
    try {
      await Promise.race([markOnce(key), timeout]);
    } finally {
      clearTimeout(timer);
    }
  };

  return async (key, onFreed) => {
    // NOTE: a listener found not to keep its LISTEN is refused at once, without I/O, from then on.
    if (probed.refused !== null) throw probed.refused;
    const watcher = (): void => onFreed();
    const watchers = byKey.get(key) ?? new Set();
    byKey.set(key, watchers);
    watchers.add(watcher);
    let endListen: (() => void) | undefined;
    const forget = (): void => {
      watchers.delete(watcher);
      if (watchers.size === 0 && byKey.get(key) === watchers) {
        byKey.delete(key);
        clearInterval(remarks.get(key));
        remarks.delete(key);
      }
      endListen?.();
    };
    try {
      endListen = await channelSubscription.watch(channel, () => undefined);
      // NOTE: after the LISTEN is live and before the waiter's claim: the order that loses no wake-up.
      await markWithin(key);
    } catch (error) {
      forget();
      throw error;
    }
    if (byKey.get(key) === watchers && !remarks.has(key)) {
      // NOTE: a failed re-mark is retried at the next tick, well within the window (a third of it); a
      // re-mark due while a mark of the key is in flight is skipped (that one extends the interest).
      const remark = setInterval(() => void (marking.has(key) ? undefined : startMark(key).catch(() => undefined)), REMARK_EVERY_MS);
      (remark as { unref?: () => void }).unref?.();
      remarks.set(key, remark);
    }
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      forget();
    };
  };
}
