/**
 * Redis wake-ups for waiting claims: the RELEASE (while someone watches the key: `freed-interest.ts`), REVOKE and
 * SET_KEY_STATE scripts publish on the lease's "freed" channel (`<record key>:freed`, so it carries the lease's hash tag and lives in its Cluster slot)
 * when they end a grant, REMOVE when it deletes the record, DEQUEUE when the first waiter leaves a claimable
 * key to the next one, and `watchFreed` listens on a dedicated subscriber connection.
 *
 * Sharded pub/sub (SPUBLISH / SSUBSCRIBE, Redis 7): a sharded message stays within the slot's shard in a
 * Cluster instead of being broadcast to every node, and the scripts may publish it because the channel is
 * in their key's slot. On Redis before 7 the scripts PUBLISH and the subscriber falls back to SUBSCRIBE
 * (the server refuses SSUBSCRIBE as an unknown command); both sides pick by the server's version.
 */
import { InvalidArgumentError } from '../../errors.js';
import { createFreedSubscriptions, type FreedTransport } from '../freed-subscriptions.js';

/** The channel a lease's release and revoke publish on, from its record key (the scripts build the same name). */
export function freedChannelOf(recordKey: string): string {
  return `${recordKey}:freed`;
}

/**
 * Lua: publishes on the lease's freed channel (sharded on Redis 7+). Spliced into RELEASE (behind its `watched`
 * check, `freed-interest.ts`), REVOKE and
 * SET_KEY_STATE right where they end a grant, into REMOVE where it deletes the record, and into DEQUEUE where the
 * first waiter leaves a claimable key to the next, inside the script, so the message is sent exactly when the
 * change is applied.
 */
export const PUBLISH_FREED = (kind: 'released' | 'revoked' | 'state-changed' | 'removed' | 'dequeued'): string =>
  `redis.call(redis.REDIS_VERSION_NUM and 'SPUBLISH' or 'PUBLISH', KEYS[1] .. ':freed', '${kind}')`;

/** The parts of an ioredis client (v5 or v6) used as a subscriber connection. */
export interface IoredisSubscriber {
  /** Sharded subscribe (Redis 7 and newer). */
  ssubscribe(...channels: string[]): Promise<unknown>;
  /** Sharded unsubscribe (Redis 7 and newer). */
  sunsubscribe(...channels: string[]): Promise<unknown>;
  /** Subscribe (Redis before 7). */
  subscribe(...channels: string[]): Promise<unknown>;
  /** Unsubscribe (Redis before 7). */
  unsubscribe(...channels: string[]): Promise<unknown>;
  /** Receives `smessage` / `message` and `ready` events. */
  on(event: string, listener: (...args: string[]) => void): unknown;
  /** Receives one `ready` event (a subscribe waits for it: see `whenReady`). */
  once(event: string, listener: (...args: string[]) => void): unknown;
  /** ioredis' connection status. */
  readonly status: string;
}

/** The parts of a node-redis v5 client (connected, dedicated to subscriptions) used as a subscriber. */
export interface NodeRedisSubscriber {
  /** Sharded subscribe (Redis 7 and newer). */
  sSubscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  /** Sharded unsubscribe (Redis 7 and newer). */
  sUnsubscribe(channel: string, listener?: (message: string, channel: string) => void): Promise<unknown>;
  /** Subscribe (Redis before 7). */
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  /** Unsubscribe (Redis before 7). */
  unsubscribe(channel: string, listener?: (message: string, channel: string) => void): Promise<unknown>;
  /** Receives `ready` events (node-redis resubscribes by itself after a reconnect). */
  on(event: string, listener: (...args: string[]) => void): unknown;
  /** node-redis' connection state. */
  readonly isOpen: boolean;
}

/** A subscriber connection: an ioredis or node-redis client that issues no other commands. */
export type RedisSubscriber = IoredisSubscriber | NodeRedisSubscriber;

/**
 * The `subscriber` option: a dedicated connection (`client.duplicate()`; for node-redis, connected), which
 * you close at shutdown; or a function that makes one, called when a wait needs it: the store closes the
 * connection it returned once nobody waits, and calls the function again at the next wait.
 */
export type RedisSubscriberOption = RedisSubscriber | (() => RedisSubscriber | Promise<RedisSubscriber>);

const NOT_A_SUBSCRIBER = '`subscriber` must be an ioredis client or a connected node-redis v5 client (or a function returning one)';

const UNSHARDED_CLUSTER =
  '`subscriber`: an ioredis Cluster needs the option `shardedSubscribers: true` (without it, it never emits sharded messages, so no wait would be woken)';

/** Whether `subscriber` is an ioredis Cluster that cannot deliver sharded messages. */
function isUnshardedIoredisCluster(subscriber: RedisSubscriber): boolean {
  const cluster = subscriber as { isCluster?: unknown; options?: { shardedSubscribers?: unknown } };
  // NOTE: ioredis' Cluster sends SSUBSCRIBE to its one plain subscriber connection and forwards only its
  // `message` / `pmessage` events: `smessage` is forwarded by the per-shard subscribers alone.
  return cluster.isCluster === true && cluster.options?.shardedSubscribers !== true;
}

/** Closes a connection the `subscriber` factory made (node-redis `destroy`, ioredis `disconnect`), ignoring failures. */
function closeMade(subscriber: RedisSubscriber): void {
  const client = subscriber as { destroy?: () => unknown; disconnect?: () => unknown };
  try {
    // NOTE: node-redis' `disconnect` is a deprecated alias of `destroy`; ioredis has no `destroy`.
    const closing = typeof client.destroy === 'function' ? client.destroy() : client.disconnect?.();
    void Promise.resolve(closing).catch(() => undefined);
  } catch {
    // NOTE: a connection that is already closed is what we want.
  }
}

/** Whether a failure says the server does not know sharded pub/sub (Redis before 7). */
const isUnknownCommand = (error: unknown): boolean => error instanceof Error && /unknown command/i.test(error.message);

/** One subscriber connection as a `FreedTransport`, in sharded or classic pub/sub. */
interface Pubsub {
  subscribe(channel: string, sharded: boolean): Promise<unknown>;
  unsubscribe(channel: string, sharded: boolean): Promise<unknown>;
}

function isIoredis(subscriber: RedisSubscriber): subscriber is IoredisSubscriber {
  return (
    typeof (subscriber as Partial<IoredisSubscriber>).ssubscribe === 'function' &&
    typeof (subscriber as Partial<IoredisSubscriber>).status === 'string'
  );
}

function isNodeRedis(subscriber: RedisSubscriber): subscriber is NodeRedisSubscriber {
  return typeof (subscriber as Partial<NodeRedisSubscriber>).sSubscribe === 'function';
}

/**
 * Resolves once an ioredis connection that is between its `connect` and `ready` events (status `connect`)
 * is ready. NOTE: in that window ioredis writes a command flagged `loading` (SUBSCRIBE and SSUBSCRIBE are)
 * at once, before its own ready check (INFO); the connection is then in subscriber mode, the ready check is
 * refused ("Connection in subscriber mode") and ioredis drops and reopens the connection. In any other
 * status the subscribe is safe to send: ready, queued until ready (`connecting`, `reconnecting`), starting
 * the connection (`wait`, lazyConnect) or refused (`end`). One that never gets ready is left to the watch's
 * `subscribeTimeoutMs`.
 */
function whenReady(subscriber: IoredisSubscriber): Promise<void> {
  if (subscriber.status !== 'connect') return Promise.resolve();
  return new Promise((resolve) => subscriber.once('ready', () => resolve()));
}

/** Wires `subscriber`'s messages and reconnects to `deliver` / `deliverAll`. */
function pubsubOf(subscriber: RedisSubscriber, deliver: (channel: string) => void, deliverAll: () => void): Pubsub {
  if (isUnshardedIoredisCluster(subscriber)) throw new InvalidArgumentError(UNSHARDED_CLUSTER);
  // NOTE: both clients resubscribe by themselves after a reconnect; messages published meanwhile are lost,
  // so every watcher is woken once the connection is ready again (not at its first connect).
  let connected = (subscriber as Partial<IoredisSubscriber>).status === 'ready' || (subscriber as { isReady?: boolean }).isReady === true;
  subscriber.on('ready', () => {
    if (connected) deliverAll();
    connected = true;
  });
  if (isIoredis(subscriber)) {
    const onMessage = (channel: string): void => deliver(channel);
    subscriber.on('smessage', onMessage);
    subscriber.on('message', onMessage);
    return {
      subscribe: async (channel, sharded) => {
        await whenReady(subscriber);
        return sharded ? subscriber.ssubscribe(channel) : subscriber.subscribe(channel);
      },
      unsubscribe: (channel, sharded) => (sharded ? subscriber.sunsubscribe(channel) : subscriber.unsubscribe(channel)),
    };
  }
  if (isNodeRedis(subscriber)) {
    const onMessage = (_message: string, channel: string): void => deliver(channel);
    return {
      subscribe: (channel, sharded) => (sharded ? subscriber.sSubscribe(channel, onMessage) : subscriber.subscribe(channel, onMessage)),
      unsubscribe: (channel, sharded) =>
        sharded ? subscriber.sUnsubscribe(channel, onMessage) : subscriber.unsubscribe(channel, onMessage),
    };
  }
  throw new InvalidArgumentError(NOT_A_SUBSCRIBER);
}

/** Options of `createRedisFreed`. */
export interface RedisFreedOptions {
  readonly subscriber: RedisSubscriberOption;
  readonly subscribeTimeoutMs: number;
}

/** `Store.watchFreed` for the Redis store, keyed by record key. */
export function createRedisFreed(options: RedisFreedOptions): (recordKey: string, onFreed: () => void) => Promise<() => void> {
  const given = options.subscriber;
  if (typeof given !== 'function' && !isIoredis(given) && !isNodeRedis(given)) throw new InvalidArgumentError(NOT_A_SUBSCRIBER);
  if (typeof given !== 'function' && isUnshardedIoredisCluster(given)) throw new InvalidArgumentError(UNSHARDED_CLUSTER);
  const made = typeof given === 'function';
  let pubsub: Promise<Pubsub & { readonly subscriber: RedisSubscriber }> | undefined;
  let sharded = true;
  /** Channels subscribed or being subscribed: a made connection is closed when none is left. */
  const channels = new Set<string>();
  const connect = async (): Promise<Pubsub & { readonly subscriber: RedisSubscriber }> => {
    const { subscriber } = options;
    const connection = typeof subscriber === 'function' ? await subscriber() : subscriber;
    try {
      return { ...pubsubOf(connection, subscriptions.deliver, subscriptions.deliverAll), subscriber: connection };
    } catch (error) {
      if (made) closeMade(connection);
      throw error;
    }
  };
  const transport: FreedTransport = {
    async subscribe(channel) {
      channels.add(channel);
      // NOTE: a failed connect is forgotten, so the next watch asks the factory again.
      pubsub ??= connect();
      const connecting = pubsub;
      connecting.catch(() => {
        if (pubsub === connecting) pubsub = undefined;
      });
      const connection = await connecting;
      try {
        await connection.subscribe(channel, sharded);
      } catch (error) {
        if (!sharded || !isUnknownCommand(error)) throw error;
        sharded = false;
        await connection.subscribe(channel, sharded);
      }
    },
    async unsubscribe(channel) {
      channels.delete(channel);
      const connecting = pubsub;
      if (made && channels.size === 0) {
        // NOTE: the factory's connection would keep the process alive; closing it ends every subscription,
        // and the next wait asks the factory for a new one.
        pubsub = undefined;
        const connection = await connecting?.catch(() => undefined);
        if (connection !== undefined) closeMade(connection.subscriber);
        return;
      }
      await (await connecting)?.unsubscribe(channel, sharded);
    },
  };
  const subscriptions = createFreedSubscriptions(transport, options.subscribeTimeoutMs);
  return (recordKey, onFreed) => subscriptions.watch(freedChannelOf(recordKey), onFreed);
}
