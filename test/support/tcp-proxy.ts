/**
 * A loopback TCP proxy that loses replies on demand: `dropNextReply()` makes the proxy swallow the next
 * bytes the server sends back and reset the client's connection (TCP RST), so the request reached the
 * server and ran, but the client never hears about it. New connections go through normally afterwards
 * (the client reconnects). For "lost reply" tests of any client/server pair.
 *
 * ```ts
 * const proxy = await startTcpProxy({ port: server.port });
 * const client = new Redis(proxy.port, proxy.host);
 * proxy.dropNextReply();
 * await client.incr('n'); // ran on the server; the reply was lost and the connection reset
 * await proxy.close();
 * ```
 */
import { connect, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  readonly host: string;
  readonly port: number;
  /** Swallow the next reply chunk from the server and reset that client connection. */
  dropNextReply(): void;
  /** How many replies were dropped so far. */
  readonly dropped: number;
  /** Resets every open connection at once (without dropping anything in flight on purpose). */
  resetAll(): void;
  /** Stops listening and resets every open connection. */
  close(): Promise<void>;
}

export interface TcpProxyTarget {
  readonly host?: string;
  readonly port: number;
}

/** Starts a proxy on a free loopback port in front of `target`. */
export function startTcpProxy(target: TcpProxyTarget): Promise<TcpProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let dropArmed = false;
  let dropped = 0;

  const server = createServer((client) => {
    const upstream = connect({ host: target.host ?? '127.0.0.1', port: target.port });
    const pair = { client, upstream };
    pairs.add(pair);
    const end = (): void => {
      pairs.delete(pair);
      if (!client.destroyed) client.resetAndDestroy();
      if (!upstream.destroyed) upstream.destroy();
    };
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => {
      if (dropArmed) {
        dropArmed = false;
        dropped += 1;
        end();
        return;
      }
      client.write(chunk);
    });
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (typeof address !== 'object' || address === null) return reject(new Error('proxy has no address'));
      const resetAll = (): void => {
        for (const { client, upstream } of [...pairs]) {
          client.resetAndDestroy();
          upstream.destroy();
        }
        pairs.clear();
      };
      resolve({
        host: '127.0.0.1',
        port: address.port,
        dropNextReply: () => {
          dropArmed = true;
        },
        get dropped() {
          return dropped;
        },
        resetAll,
        close: () =>
          new Promise<void>((done) => {
            resetAll();
            server.close(() => done());
          }),
      });
    });
  });
}
