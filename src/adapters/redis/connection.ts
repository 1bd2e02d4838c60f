/**
 * The one thing leasefence needs from a Redis client: send a command, get its reply, and tell "not sent"
 * apart from "sent, reply lost". Typed structurally, so leasefence never imports ioredis or node-redis.
 */
import { InvalidArgumentError, LeaseError, StoreUnavailableError } from '../../errors.js';
import { loggableCause, redactText } from '../../redact.js';
import { describe, readOptions } from '../../validate.js';
import { clusterSlot, crossSlotReply, scriptKeys } from './cross-slot.js';

/**
 * A connection leasefence can send commands on. `fromIoredis` and `fromNodeRedis` build one from your
 * client; implement it yourself for another client.
 *
 * `send` must reject with a `RedisReplyError` when the server answered with an error, with a
 * `StoreUnavailableError` when it knows the command was NOT sent, and with anything else when the command
 * may have reached the server (leasefence then reports `OutcomeUnknownError`).
 */
export interface RedisConnection {
  /** Sends one command (name first, then its arguments) and resolves with the server's reply. */
  send(args: readonly string[]): Promise<unknown>;
}

/** The parts of an ioredis client (`new Redis(...)` or `new Cluster(...)`, v5) that leasefence uses. */
export interface IoredisClient {
  /** Sends one command with its arguments. */
  call(command: string, ...args: string[]): Promise<unknown>;
  /** ioredis' connection status: `wait`, `connecting`, `connect`, `ready`, `reconnecting`, `close`, `end`. */
  readonly status: string;
  /** Connects a client created with `lazyConnect`. */
  connect(): Promise<void>;
  /** Listens once for a connection event (`ready`, `end`, ...). */
  once(event: string, listener: () => void): unknown;
  /** Stops listening for a connection event. */
  removeListener(event: string, listener: () => void): unknown;
}

/** The parts of a node-redis client (`createClient()` from `redis`, v5) that leasefence uses. */
export interface NodeRedisClient {
  /** Sends one command, its name first. */
  sendCommand(args: string[]): Promise<unknown>;
  /** `false` before `connect()` and after `quit()` / `destroy()`. */
  readonly isOpen: boolean;
  /** `false` while the client (re)connects; with it, leasefence waits for `ready` instead of queueing a command. */
  readonly isReady?: boolean;
  /** Listens once for a connection event (`ready`, `end`). */
  once?(event: string, listener: () => void): unknown;
  /** Stops listening for a connection event. */
  removeListener?(event: string, listener: () => void): unknown;
  /** The client's options: with `disableOfflineQueue`, node-redis itself fails a command at once while not ready. */
  readonly options?: { readonly disableOfflineQueue?: boolean } | undefined;
}

/** The parts of a node-redis cluster client (`createCluster()` from `redis`, v5) that leasefence uses. */
export interface NodeRedisClusterClient {
  /** Sends one command to the node that owns `firstKey`'s slot (node-redis follows MOVED and ASK). */
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  /** `false` before `connect()` and after `close()` / `destroy()`. */
  readonly isOpen: boolean;
  /** The cluster's masters (how leasefence tells a cluster client from a single-node one). */
  readonly masters: readonly unknown[];
  /** The shard of each slot, with its master's node client once node-redis made it (to wait until it is ready). */
  readonly slots?: ReadonlyArray<{ readonly master: NodeRedisClusterNode } | undefined>;
  /** Makes (and connects) a node's client if it has none yet. */
  nodeClient?(node: NodeRedisClusterNode): Promise<unknown>;
}

/** A node of a node-redis cluster: its client, once made. */
export interface NodeRedisClusterNode {
  /** The node's own client, once made. */
  readonly client?: NodeRedisClient | undefined;
}

/** A client leasefence accepts: an ioredis client or Cluster, a node-redis client or cluster, or a `RedisConnection`. */
export type RedisClient = IoredisClient | NodeRedisClient | NodeRedisClusterClient | RedisConnection;

/**
 * An error reply from the Redis server (the command was received and refused or failed there). Its message
 * is redacted and its `cause` is a `loggableCause` copy of the client's error (never the client's error
 * itself, which carries the command's arguments). Its `code` is `COMMAND_FAILED`; the reply's own code is
 * `replyCode`.
 */
export class RedisReplyError extends LeaseError {
  override name = 'RedisReplyError' as const;
  /** The reply's first word (`NOSCRIPT`, `WRONGTYPE`, `ERR`, ...). */
  readonly replyCode: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super('COMMAND_FAILED', message, options);
    this.replyCode = /^[A-Z][A-Z_-]*/.exec(message)?.[0] ?? 'ERR';
  }
}

const isError = (error: unknown): error is Error => error instanceof Error;

function prototypeNames(error: object): string[] {
  const names: string[] = [];
  for (let proto = Object.getPrototypeOf(error) as object | null; proto !== null; proto = Object.getPrototypeOf(proto) as object | null) {
    const name = (proto as { constructor?: { name?: unknown } }).constructor?.name;
    if (typeof name === 'string') names.push(name);
  }
  return names;
}

/** node-redis' `ErrorReply` (by class name, or by an error-code first word should a bundler rename classes). */
function isNodeRedisReply(error: Error): boolean {
  return prototypeNames(error).includes('ErrorReply') || /^[A-Z]{2,}[A-Z_-]* /.test(error.message);
}

/** Options of `fromIoredis`, `fromNodeRedis` and `fromNodeRedisCluster`. */
export interface IoredisOptions {
  /**
   * How long a command waits for a connection that is not ready yet (connecting or reconnecting) before
   * it fails with `StoreUnavailableError`. leasefence sends only on a ready connection, so a command that
   * fails later is known to have been sent (`OutcomeUnknownError`).
   * @default 5_000
   */
  readonly readyTimeoutMs?: number;
}

/** Maps an ioredis failure: an error reply, or a command refused before anything was written. */
function ioredisFailure(error: unknown): never {
  if (isError(error) && error.name === 'ReplyError') throw new RedisReplyError(redactText(error.message), { cause: loggableCause(error) });
  // NOTE: ioredis checks writability synchronously: this message means nothing was written.
  if (isError(error) && error.message.startsWith("Stream isn't writeable"))
    throw new StoreUnavailableError(redactText(error.message), { cause: loggableCause(error) });
  throw error;
}

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

/** A client whose connection state `readiness` can wait on. */
interface ReadyWatch {
  once(event: string, listener: () => void): unknown;
  removeListener(event: string, listener: () => void): unknown;
  /** `ready`, `end`, or how the client stands while it is neither (for the timeout's message). */
  state(): string;
  /** Starts connecting a client that was created without connecting (ioredis `lazyConnect`). */
  start?(): void;
}

/**
 * Waits until a client is `ready`, each caller at most `timeoutMs` (`StoreUnavailableError` when the client
 * ends or the wait times out). All callers share one pair of listeners on the client, however many commands
 * wait (so a burst of commands at start-up adds no listener per command).
 */
function readiness(client: ReadyWatch, timeoutMs: number): () => Promise<void> {
  const waiting = new Set<Waiter>();
  const settle = (error: Error | null): void => {
    client.removeListener('ready', onReady);
    client.removeListener('end', onEnd);
    for (const waiter of waiting) {
      clearTimeout(waiter.timer);
      if (error === null) waiter.resolve();
      else waiter.reject(error);
    }
    waiting.clear();
  };
  const onReady = (): void => settle(null);
  const onEnd = (): void => settle(new StoreUnavailableError('redis client closed before it was ready'));
  return () => {
    const state = client.state();
    if (state === 'ready') return Promise.resolve();
    if (state === 'end') return Promise.reject(new StoreUnavailableError('redis client is closed (status "end")'));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          waiting.delete(waiter);
          if (waiting.size === 0) settle(null);
          reject(new StoreUnavailableError(`redis connection not ready within ${timeoutMs} ms (status "${client.state()}")`));
        }, timeoutMs),
      };
      waiting.add(waiter);
      if (waiting.size > 1) return;
      client.once('ready', onReady);
      client.once('end', onEnd);
      client.start?.();
    });
  };
}

/**
 * Wraps an ioredis client. Commands are sent only once the connection is `ready`, so a failure before that
 * is a `StoreUnavailableError` and a failure after it an unknown outcome.
 *
 * ```ts
 * const store = createRedisStore({ client: fromIoredis(new Redis(url), { readyTimeoutMs: 2_000 }) });
 * ```
 */
export function fromIoredis(client: IoredisClient, options?: IoredisOptions): RedisConnection {
  assertClient('fromIoredis needs an ioredis client or Cluster', client, ['call', 'once', 'removeListener']);
  const readyTimeoutMs = readyTimeoutOf('fromIoredis', options);
  const whenReady = readiness(
    {
      once: (event, listener) => client.once(event, listener),
      removeListener: (event, listener) => client.removeListener(event, listener),
      state: () => client.status,
      start: () => void (client.status === 'wait' && client.connect().catch(() => undefined)),
    },
    readyTimeoutMs,
  );
  const sendNow = (args: readonly string[]): Promise<unknown> =>
    (Reflect.apply(client.call, client, args) as Promise<unknown>).catch(ioredisFailure);
  const cluster = typeof (client as { nodes?: unknown }).nodes === 'function';
  return {
    send(args) {
      const crossSlot = cluster ? crossSlotReply(args) : null;
      if (crossSlot !== null) return Promise.reject(new RedisReplyError(crossSlot));
      // NOTE: the common case (ready) sends at once, without waiting a microtask.
      return client.status === 'ready' ? sendNow(args) : whenReady().then(() => sendNow(args));
    },
  };
}

/**
 * Wraps a node-redis v5 client (connect it first). node-redis never re-sends a command that was written,
 * and would keep a command queued for as long as it reconnects (for ever, with its defaults, if the server
 * stays down): leasefence hands it a command only once the client is ready, and fails it with
 * `StoreUnavailableError` when the client is not ready within `readyTimeoutMs`.
 *
 * ```ts
 * const client = await createClient({ url }).connect();
 * const store = createRedisStore({ client: fromNodeRedis(client, { readyTimeoutMs: 2_000 }) });
 * ```
 */
export function fromNodeRedis(client: NodeRedisClient, options?: IoredisOptions): RedisConnection {
  assertClient('fromNodeRedis needs a node-redis client', client, ['sendCommand']);
  const readyTimeoutMs = readyTimeoutOf('fromNodeRedis', options);
  const send = (args: readonly string[]): Promise<unknown> => sendNodeRedis(client, () => client.sendCommand([...args]));
  const { once, removeListener } = client;
  // NOTE: a client that does not say whether it is ready (an older or a hand-made one) is sent to as it is.
  if (typeof once !== 'function' || typeof removeListener !== 'function' || typeof client.isReady !== 'boolean') return { send };
  if (client.options?.disableOfflineQueue === true) return { send };
  const whenReady = readiness(
    {
      once: (event, listener) => once.call(client, event, listener),
      removeListener: (event, listener) => removeListener.call(client, event, listener),
      state: () => (!client.isOpen ? 'end' : client.isReady === true ? 'ready' : 'reconnecting'),
    },
    readyTimeoutMs,
  );
  return {
    // NOTE: a client never connected or closed is refused by `sendNodeRedis` itself, with its own message.
    send: (args) => (client.isReady === true || !client.isOpen ? send(args) : whenReady().then(() => send(args))),
  };
}

/** Sends on an open node-redis client or cluster, mapping its failures (see `RedisConnection.send`). */
async function sendNodeRedis(client: { readonly isOpen: boolean }, send: () => Promise<unknown>): Promise<unknown> {
  if (!client.isOpen) throw new StoreUnavailableError('redis client is not open (call connect() first, or it was closed)');
  try {
    return await send();
  } catch (error) {
    if (isError(error) && isNodeRedisReply(error)) throw new RedisReplyError(redactText(error.message), { cause: loggableCause(error) });
    // NOTE: both are thrown before anything is queued for writing.
    if (isError(error) && (error.message === 'The client is closed' || error.message === 'The client is offline')) {
      throw new StoreUnavailableError(error.message, { cause: loggableCause(error) });
    }
    throw error;
  }
}

/**
 * Wraps a node-redis v5 cluster client (connect it first). Each command goes to the master of its first
 * key (a script's first declared key; else the command's first argument), and node-redis follows `MOVED`
 * and `ASK`. A script whose keys span several slots is refused before sending (`CROSSSLOT`).
 *
 * ```ts
 * const cluster = await createCluster({ rootNodes: [{ url }] }).connect();
 * const store = createRedisStore({ client: fromNodeRedisCluster(cluster) });
 * ```
 */
export function fromNodeRedisCluster(client: NodeRedisClusterClient, options?: IoredisOptions): RedisConnection {
  assertClient('fromNodeRedisCluster needs a node-redis cluster client', client, ['sendCommand']);
  const readyTimeoutMs = readyTimeoutOf('fromNodeRedisCluster', options);
  const readinessByNode = new WeakMap<NodeRedisClient, () => Promise<void>>();
  /** Resolves once the master that will receive a command on `firstKey` is ready (at once when it is, or is unknown). */
  const masterReady = (firstKey: string | undefined): Promise<void> => {
    const node = firstKey === undefined ? undefined : client.slots?.[clusterSlot(firstKey)]?.master;
    if (node === undefined || typeof client.nodeClient !== 'function') return Promise.resolve();
    // NOTE: node-redis makes a node's client (and starts connecting it) at the first command to that node.
    if (node.client === undefined) client.nodeClient(node).catch(() => undefined);
    const nodeClient = node.client;
    if (nodeClient === undefined || nodeClient.isReady !== false || !nodeClient.isOpen || nodeClient.options?.disableOfflineQueue === true)
      return Promise.resolve();
    const { once, removeListener } = nodeClient;
    if (typeof once !== 'function' || typeof removeListener !== 'function') return Promise.resolve();
    let whenReady = readinessByNode.get(nodeClient);
    if (whenReady === undefined) {
      whenReady = readiness(
        {
          once: (event, listener) => once.call(nodeClient, event, listener),
          removeListener: (event, listener) => removeListener.call(nodeClient, event, listener),
          state: () => (!nodeClient.isOpen ? 'end' : nodeClient.isReady === true ? 'ready' : 'reconnecting'),
        },
        readyTimeoutMs,
      );
      readinessByNode.set(nodeClient, whenReady);
    }
    return whenReady();
  };
  return {
    async send(args) {
      const crossSlot = crossSlotReply(args);
      if (crossSlot !== null) throw new RedisReplyError(crossSlot);
      const keys = scriptKeys(args);
      const firstKey = keys === null ? args[1] : keys[0];
      // NOTE: a node's client queues a command for as long as it reconnects (for ever with the defaults
      // while the node is down), as a single client does: send only once the slot's master is ready.
      if (client.isOpen) await masterReady(firstKey);
      return sendNodeRedis(client, () => client.sendCommand(firstKey, false, [...args]));
    },
  };
}

/** Picks the wrapper for `client`: a `RedisConnection` as is, else ioredis or node-redis (client or cluster) by shape. */
export function toConnection(client: RedisClient): RedisConnection {
  let kind: 'ioredis' | 'cluster' | 'node-redis' | 'connection' | null = null;
  try {
    const shape = client as Partial<IoredisClient & NodeRedisClusterClient & RedisConnection>;
    if (typeof shape.call === 'function' && typeof shape.status === 'string') kind = 'ioredis';
    else if (typeof shape.sendCommand === 'function' && typeof shape.isOpen === 'boolean' && Array.isArray(shape.masters)) kind = 'cluster';
    else if (typeof shape.sendCommand === 'function' && typeof shape.isOpen === 'boolean') kind = 'node-redis';
    else if (typeof shape.send === 'function') kind = 'connection';
  } catch {
    // NOTE: a getter or Proxy that throws is no client either.
  }
  if (kind === 'ioredis') return fromIoredis(client as IoredisClient);
  if (kind === 'cluster') return fromNodeRedisCluster(client as NodeRedisClusterClient);
  if (kind === 'node-redis') return fromNodeRedis(client as NodeRedisClient);
  if (kind === 'connection') return client as RedisConnection;
  throw new InvalidArgumentError('`client` must be an ioredis client or Cluster, a node-redis v5 client or cluster, or a RedisConnection');
}

/** Refuses (`message`) what lacks any of the `methods` (read once: a getter or Proxy that throws is no client). */
function assertClient(message: string, client: unknown, methods: readonly string[]): void {
  let usable: boolean;
  try {
    usable =
      typeof client === 'object' &&
      client !== null &&
      methods.every((method) => typeof (client as Record<string, unknown>)[method] === 'function');
  } catch {
    usable = false;
  }
  if (!usable) throw new InvalidArgumentError(message);
}

/** The longest `readyTimeoutMs` accepted: what `setTimeout` can wait. */
const MAX_READY_TIMEOUT_MS = 2 ** 31 - 1;

/** `readyTimeoutMs` of a wrapper's options: a positive integer number of ms. @default 5_000 */
function readyTimeoutOf(what: string, options: unknown): number {
  const { readyTimeoutMs } = readOptions(`${what} options`, options, ['readyTimeoutMs']);
  if (readyTimeoutMs === undefined) return 5_000;
  if (
    typeof readyTimeoutMs !== 'number' ||
    !Number.isInteger(readyTimeoutMs) ||
    readyTimeoutMs <= 0 ||
    readyTimeoutMs > MAX_READY_TIMEOUT_MS
  ) {
    throw new InvalidArgumentError(`readyTimeoutMs must be a positive integer number of milliseconds, got ${describe(readyTimeoutMs)}`);
  }
  return readyTimeoutMs;
}
