/**
 * The Postgres store reached through a PgBouncer in transaction pooling mode (Debian's 1.18, started by
 * `test/support/pgbouncer.ts` in front of the run's cluster), for the shared suites and the pooler specs.
 * One PgBouncer per test file (started on first use, stopped with `stopBouncer()` in the file's afterAll
 * and at process exit). Every store here is created with `prepare: false`, what the docs prescribe behind
 * a transaction pooler; the specs that show what happens without it make their own.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import postgres from 'postgres';
import {
  createPostgresStore,
  fromPostgresJs,
  type PostgresClient,
  type PostgresStore,
  type PostgresStoreOptions,
} from '../../src/adapters/postgres/index.js';
import type { FencedWriteOutcome } from '../../src/fence/operations.js';
import type { StoreHarness } from '../../src/testing/index.js';
import { startPgBouncer, type PgBouncer } from '../support/pgbouncer.js';
import { freshTable, sharedPostgresUrl } from './postgres-harness.js';

/** The clients tested through the pooler. */
export type BouncedClientKind = 'pg-pool' | 'postgresjs';

let bouncer: Promise<PgBouncer> | null = null;

/** This file's PgBouncer (transaction mode) in front of the run's cluster. */
export function pgBouncer(): Promise<PgBouncer> {
  bouncer ??= sharedPostgresUrl().then((url) => startPgBouncer(url, { poolMode: 'transaction', poolSize: 8 }));
  return bouncer;
}

/** Stops this file's PgBouncer, if one was started. */
export async function stopBouncer(): Promise<void> {
  const started = bouncer;
  bouncer = null;
  if (started !== null) await (await started).stop();
}

/** An opened client and how to close it. */
export interface BouncedClient {
  readonly client: PostgresClient;
  close(): Promise<void>;
}

/**
 * A client of `kind` on `url`. postgres.js prepares its tagged-template statements unless told `prepare:
 * false` (its own documented setting for PgBouncer in transaction mode); pg prepares only named statements.
 */
export function openBouncedClient(kind: BouncedClientKind | 'postgresjs-prepared', url: string, poolSize = 4): BouncedClient {
  if (kind === 'pg-pool') {
    const pool = new pg.Pool({ connectionString: url, max: poolSize });
    pool.on('error', () => undefined);
    return { client: pool, close: () => pool.end() };
  }
  // NOTE: 'postgresjs-prepared' leaves the instance's own default (prepare: true): leasefence's statements
  // are then prepared only if the store says so.
  const sql = postgres(url, { max: poolSize, prepare: kind === 'postgresjs-prepared', onnotice: () => undefined });
  return { client: fromPostgresJs(sql), close: () => sql.end({ timeout: 1 }) };
}

/** Store options for the pooler: `prepare: false`. */
export const BEHIND_POOLER: Pick<PostgresStoreOptions, 'prepare'> = { prepare: false };

/** A harness factory for the shared suites: every statement and transaction goes through PgBouncer. */
export function makeBouncedHarness(kind: BouncedClientKind): () => Promise<StoreHarness<PostgresStore>> {
  return async () => {
    const { url } = await pgBouncer();
    const table = freshTable(`lf_bounced_${kind.replace('-', '_')}`);
    const ledger = `"${table}_ledger"`;
    const main = openBouncedClient(kind, url);
    const closers: Array<() => Promise<void>> = [() => main.close()];
    const store = createPostgresStore({ client: main.client, table, ...BEHIND_POOLER });
    await store.migrate();
    await main.client.query(
      `CREATE TABLE ${ledger} (seq bigserial PRIMARY KEY, key text NOT NULL, entry text NOT NULL, token bigint NOT NULL)`,
    );
    let keys = 0;
    return {
      store,
      connect: async () => {
        const opened = openBouncedClient(kind, url, 2);
        closers.push(() => opened.close());
        return createPostgresStore({ client: opened.client, table, ...BEHIND_POOLER });
      },
      appendUnderFence: async (leases, lease, entry, options): Promise<FencedWriteOutcome<unknown>> => {
        // NOTE: both fenced-write forms through the pooler: the transaction (pg, or any write with a
        // checkpoint) and the one statement (postgres.js).
        if (kind === 'pg-pool' || options !== undefined) {
          return leases.fencedWrite(
            lease,
            (tx) =>
              tx.query(`INSERT INTO ${ledger} (key, entry, token) VALUES ($1, $2, $3) RETURNING seq`, [
                lease.key,
                entry,
                tx.token.toString(),
              ]),
            options,
          );
        }
        const outcome = await leases.store.fencedStatement(
          lease,
          `INSERT INTO ${ledger} (key, entry, token) SELECT fence.key, $1, fence.token FROM fence RETURNING seq`,
          [entry],
        );
        return outcome.ok ? { ok: true, value: outcome.rows, token: outcome.token, checkpoint: null, now: outcome.now } : outcome;
      },
      readLedger: async (key) => {
        const { rows } = await main.client.query(`SELECT entry FROM ${ledger} WHERE key = $1 ORDER BY seq`, [key]);
        return (rows as Array<{ entry: string }>).map((row) => row.entry);
      },
      expireNow: async (key) => {
        await main.client.query(
          `UPDATE "${table}" SET expires_at = date_trunc('milliseconds', clock_timestamp())
           WHERE key = $1 AND holder IS NOT NULL AND expires_at > clock_timestamp()`,
          [key],
        );
      },
      advanceClock: null,
      freshKey: (label = 'key') => `${label}:${++keys}:${randomBytes(4).toString('hex')}`,
      close: async () => void (await Promise.all(closers.map((close) => close()))),
    };
  };
}
