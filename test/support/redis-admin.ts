/**
 * Admin connections to the servers of a test topology (Cluster nodes, Sentinels, replicas): one plain
 * ioredis connection per port, opened on first use, all closed by `close()`.
 */
import { Redis } from 'ioredis';

/** The admin connections of one topology. */
export interface AdminConnections {
  /** The connection to `127.0.0.1:port` (opened on first use). */
  admin(port: number): Redis;
  /** Closes every connection opened so far. */
  close(): void;
}

export function adminConnections(): AdminConnections {
  const connections = new Map<number, Redis>();
  return {
    admin(port) {
      let connection = connections.get(port);
      if (connection === undefined) {
        // NOTE: no retries and a command timeout: a dead or frozen process fails fast instead of hanging a helper.
        connection = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 0, commandTimeout: 2_000, retryStrategy: () => 100 });
        connection.on('error', () => undefined);
        connections.set(port, connection);
      }
      return connection;
    },
    close() {
      for (const connection of connections.values()) connection.disconnect();
    },
  };
}
