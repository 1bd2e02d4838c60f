/**
 * Bytes on the wire, for the tests that bound what a store sends: what a redis-server sent to all its
 * clients (`INFO stats` total_net_output_bytes; give the test a server of its own, so nothing else moves
 * the counter), and what the sockets of a pg pool's connections received.
 */
import type { Redis } from 'ioredis';
import type pg from 'pg';

/** The bytes the redis-server behind `admin` sent while `work` ran (including the first INFO reply, about 1.5 KiB). */
export async function redisBytesSent(admin: Redis, work: () => Promise<unknown>): Promise<number> {
  const sent = async (): Promise<number> => Number(/total_net_output_bytes:(\d+)/.exec(await admin.info('stats'))?.[1]);
  const before = await sent();
  await work();
  return (await sent()) - before;
}

/**
 * Counts what the socket of every connection `pool` opens receives; the returned function runs `work` and
 * returns the bytes received while it ran. Call it before the pool opens a connection.
 */
export function pgBytesReceived(pool: pg.Pool): (work: () => Promise<unknown>) => Promise<number> {
  let counting = false;
  let received = 0;
  pool.on('connect', (client) => {
    const socket = (client as unknown as { connection: { stream: NodeJS.ReadableStream } }).connection.stream;
    socket.on('data', (chunk: Buffer) => {
      if (counting) received += chunk.length;
    });
  });
  return async (work) => {
    received = 0;
    counting = true;
    try {
      await work();
    } finally {
      counting = false;
    }
    return received;
  };
}
