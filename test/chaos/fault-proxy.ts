/**
 * A loopback TCP fault proxy in front of a server (testing.md §4): one per worker, so a fault can hit one
 * worker while the others carry on. Faults: latency, partition (bytes are held, as TCP retransmitting into
 * a void, and delivered on heal), reset of every connection, and a lost reply followed by a reset (replies
 * are swallowed, then the connection is cut: the request was applied, the client cannot know).
 * Bytes are never dropped silently otherwise: that would desynchronise the RESP and pg protocols.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

/** A running proxy and its fault switches. */
export interface FaultProxy {
  /** The port clients connect to. */
  readonly port: number;
  /** Delays every chunk in both directions by `ms` (order kept). */
  latency(ms: number): void;
  /** Holds every byte in both directions until `heal()`. */
  partition(): void;
  heal(): void;
  /** Resets every open connection (the client sees ECONNRESET). */
  resetAll(): void;
  /**
   * Swallows replies from the server for `until` ms (or until the promise `until` settles), then resets every
   * connection. Resolves after the reset.
   */
  loseRepliesThenReset(until: number | Promise<unknown>): Promise<void>;
  /** Sends new connections to `port` from now on and resets the open ones (a failover's new primary). */
  retarget(port: number): void;
  /** Open connections. */
  connections(): number;
  close(): Promise<void>;
}

interface Pair {
  readonly client: Socket;
  readonly upstream: Socket;
}

/** Starts a proxy on a free loopback port in front of `targetPort`. */
export async function startFaultProxy(targetPort: number, host = '127.0.0.1'): Promise<FaultProxy> {
  const state = { latencyMs: 0, hold: false, swallowReplies: false, targetPort };
  const pairs = new Set<Pair>();
  const held: Array<() => void> = [];
  const server: Server = createServer((client) => {
    client.setNoDelay(true);
    const upstream = connect(state.targetPort, host);
    upstream.setNoDelay(true);
    const pair = { client, upstream };
    pairs.add(pair);
    const pipe = (from: Socket, to: Socket, isReply: boolean): void => {
      let releaseAt = 0;
      from.on('data', (chunk: Buffer) => {
        if (isReply && state.swallowReplies) return;
        const deliver = (): void => {
          releaseAt = Math.max(releaseAt, Date.now() + state.latencyMs);
          const wait = releaseAt - Date.now();
          const send = (): void => {
            if (!to.destroyed) to.write(chunk);
          };
          if (wait <= 0) send();
          else setTimeout(send, wait);
        };
        if (state.hold) held.push(deliver);
        else deliver();
      });
    };
    pipe(client, upstream, false);
    pipe(upstream, client, true);
    const close = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) {
      socket.on('error', close);
      socket.on('close', close);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('fault proxy has no port');
  const resetAll = (): void => {
    for (const pair of [...pairs]) {
      pair.client.resetAndDestroy();
      pair.upstream.destroy();
      pairs.delete(pair);
    }
  };
  return {
    port: address.port,
    latency: (ms) => {
      state.latencyMs = ms;
    },
    partition: () => {
      state.hold = true;
    },
    heal: () => {
      state.hold = false;
      for (const deliver of held.splice(0)) deliver();
    },
    resetAll,
    loseRepliesThenReset: async (until) => {
      state.swallowReplies = true;
      await (typeof until === 'number' ? new Promise((resolve) => setTimeout(resolve, until)) : until.catch(() => undefined));
      resetAll();
      state.swallowReplies = false;
    },
    retarget: (port) => {
      state.targetPort = port;
      resetAll();
    },
    connections: () => pairs.size,
    close: async () => {
      state.hold = false;
      held.length = 0;
      resetAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
