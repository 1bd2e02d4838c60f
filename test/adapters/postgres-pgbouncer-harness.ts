/**
 * The Postgres store reached through a PgBouncer in transaction pooling mode (Debian's 1.18, started by
 * `test/support/pgbouncer.ts` in front of the run's cluster), for the shared suites and the pooler specs.
 * One PgBouncer per test file (started on first use, stopped with `stopBouncer()` in the file's afterAll
 * and at process exit). Every store here is created with `prepare: false`, what the docs prescribe behind
 * a transaction pooler; the specs that show what happens without it make their own.
 */
import pg from 'pg';
import postgres from 'postgres';
import { fromPostgresJs, type PostgresClient, type PostgresStore, type PostgresStoreOptions } from '../../src/adapters/postgres/index.js';
import type { StoreHarness } from '../../src/testing/index.js';
import { startPgBouncer, type PgBouncer } from '../support/pgbouncer.js';
import { freshTable, ledgerHarness, sharedPostgresUrl } from './postgres-harness.js';

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
    return ledgerHarness({
      table: freshTable(`lf_bounced_${kind.replace('-', '_')}`),
      open: async (poolSize) => openBouncedClient(kind, url, poolSize),
      // NOTE: both fenced-write forms through the pooler: the transaction (pg, or any write with a
      // checkpoint) and the one statement (postgres.js).
      statementForm: kind === 'postgresjs',
      storeOptions: BEHIND_POOLER,
    });
  };
}
