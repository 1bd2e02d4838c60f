/**
 * The `listener` option of the Postgres store for tests: each call opens a new pg `Client` on `url` (the store
 * LISTENs on it), with a swallowed 'error' (tests kill and restart servers under it); `close` ends every one.
 */
import pg from 'pg';

export interface PgListenerFactory {
  /** Pass as `createPostgresStore({ listener })`. */
  readonly listener: () => Promise<pg.Client>;
  /** Ends every client `listener` opened. */
  readonly close: () => Promise<void>;
}

export function pgListenerFactory(url: string): PgListenerFactory {
  const opened = new Set<pg.Client>();
  return {
    listener: async () => {
      const client = new pg.Client({ connectionString: url });
      client.on('error', () => undefined);
      await client.connect();
      opened.add(client);
      return client;
    },
    close: async () => {
      await Promise.all([...opened].map((client) => client.end().catch(() => undefined)));
    },
  };
}
