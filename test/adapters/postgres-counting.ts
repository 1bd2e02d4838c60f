/**
 * A client wrapper that counts the statements leasefence sends (every `query` call, on the client, on a
 * pooled connection or inside a transaction) and records their text: each call is one round trip.
 */
import type { PostgresClient, PostgresQueryable } from '../../src/adapters/postgres/index.js';

export interface CountingClient {
  readonly client: PostgresClient;
  /** The statements sent while `run` ran. */
  statementsDuring(run: () => Promise<unknown>): Promise<string[]>;
  /** Statements sent so far. */
  readonly sent: string[];
}

/** Wraps `inner` so every statement is recorded. */
export function countingClient(inner: PostgresClient): CountingClient {
  const sent: string[] = [];
  const record = (text: string): void => void sent.push(text.trim().split(/\s+/).slice(0, 3).join(' '));
  const wrap = (queryable: PostgresQueryable): PostgresQueryable => ({
    query: (text, params) => {
      record(text);
      return queryable.query(text, params);
    },
  });
  const client: PostgresClient = {
    query: (text, params) => {
      record(text);
      return inner.query(text, params);
    },
  };
  if (inner.connect !== undefined) {
    client.connect = async () => {
      const connection = await inner.connect!();
      return { ...wrap(connection), release: (error?: Error | boolean) => connection.release(error) };
    };
  }
  if (inner.transaction !== undefined) {
    client.transaction = (run) => inner.transaction!((tx) => run(wrap(tx)));
  }
  return {
    client,
    sent,
    async statementsDuring(run) {
      const before = sent.length;
      await run();
      return sent.slice(before);
    },
  };
}
