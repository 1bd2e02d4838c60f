/**
 * The Postgres store's harness for the shared suites, for every client leasefence supports: pg Pool, a
 * single pg Client (through `fromPgClient`), postgres.js (through `fromPostgresJs`) and PGlite. On a real
 * server it uses the run's shared cluster (`LEASEFENCE_PG_URL`, from the global setup) or, when a file runs
 * alone, one this worker starts. Each harness works on its own lease table; `connect()` opens a new pool or
 * client (real connections of its own; PGlite has only one, so it returns the same store); the ledger is a
 * table written inside the fenced write; `expireNow` sets `expires_at` to the server's clock.
 *
 * Half the clients append to the ledger with the transaction form (`fencedWrite`), the other half with the
 * one-statement form (`fencedStatement`), so the shared suites cover both.
 */
import { randomBytes } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import postgres from 'postgres';
import {
  createPostgresStore,
  fromPgClient,
  fromPostgresJs,
  type PostgresClient,
  type PostgresStore,
  type PostgresStoreOptions,
} from '../../src/adapters/postgres/index.js';
import type { FencedWriteOutcome } from '../../src/fence/operations.js';
import type { StoreHarness } from '../../src/testing/index.js';
import { startPostgres, type PostgresServer } from '../support/postgres-server.js';

/** The clients leasefence/postgres supports. */
export type PostgresClientKind = 'pg-pool' | 'pg-client' | 'postgresjs' | 'pglite';

let ownServer: Promise<PostgresServer> | null = null;
let sharedLite: Promise<PGlite> | null = null;

/** The URL of the run's shared cluster, or of one started for this test worker (stopped at exit). */
export async function sharedPostgresUrl(): Promise<string> {
  const url = process.env['LEASEFENCE_PG_URL'];
  if (url !== undefined && url !== '') return url;
  ownServer ??= startPostgres();
  return (await ownServer).url;
}

/** A table name no other test uses. */
export const freshTable = (label = 'lf'): string => `${label}_${randomBytes(5).toString('hex')}`;

/** An opened client of `kind` and how to close it. */
export interface OpenedClient {
  readonly client: PostgresClient;
  close(): Promise<void>;
}

/** Opens a client of `kind` on `url` (PGlite ignores the URL: it is an in-process database). */
export async function openPostgresClient(kind: PostgresClientKind, url: string, poolSize = 4): Promise<OpenedClient> {
  switch (kind) {
    case 'pg-pool': {
      const pool = new pg.Pool({ connectionString: url, max: poolSize });
      pool.on('error', () => undefined);
      return { client: pool, close: () => pool.end() };
    }
    case 'pg-client': {
      const client = new pg.Client({ connectionString: url });
      client.on('error', () => undefined);
      await client.connect();
      return { client: fromPgClient(client), close: () => client.end() };
    }
    case 'postgresjs': {
      const sql = postgres(url, { max: poolSize, onnotice: () => undefined });
      return { client: fromPostgresJs(sql), close: () => sql.end({ timeout: 1 }) };
    }
    case 'pglite': {
      // NOTE: one PGlite per test worker (starting one costs seconds); every harness uses its own tables.
      sharedLite ??= PGlite.create();
      return { client: await sharedLite, close: async () => undefined };
    }
  }
}

const usesStatementForm = (kind: PostgresClientKind): boolean => kind === 'pg-client' || kind === 'postgresjs';

/** Builds a harness factory for one client kind (`storeOptions`: for every store it creates). */
export function makePostgresHarness(
  kind: PostgresClientKind,
  storeOptions?: LedgerHarnessSetup['storeOptions'],
): () => Promise<StoreHarness<PostgresStore>> {
  return async () => {
    const url = kind === 'pglite' ? '' : await sharedPostgresUrl();
    return ledgerHarness({
      table: freshTable(`lf_${kind.replace('-', '_')}`),
      open: (poolSize) => openPostgresClient(kind, url, poolSize),
      // NOTE: PGlite has only one connection: `connect()` returns the same store.
      oneConnection: kind === 'pglite',
      statementForm: usesStatementForm(kind),
      ...(storeOptions === undefined ? {} : { storeOptions }),
    });
  };
}

/** What a ledger harness is built from (see `ledgerHarness`). */
export interface LedgerHarnessSetup {
  readonly table: string;
  /** Opens a client (the harness's own with 4 connections, each `connect()` one with 2). */
  readonly open: (poolSize: number) => Promise<OpenedClient>;
  /** `connect()` returns the harness's own store instead of opening a client. */
  readonly oneConnection?: boolean;
  /** Appends with the one-statement form (`fencedStatement`) unless a checkpoint is given; else `fencedWrite`. */
  readonly statementForm: boolean;
  /** Options for every store the harness creates. */
  readonly storeOptions?: Pick<PostgresStoreOptions, 'prepare' | 'leaseCommit'>;
}

/**
 * A harness on `table` whose ledger is a table written inside the fenced write; `expireNow` sets
 * `expires_at` (and an item's `available_at`) to the server's clock.
 */
export async function ledgerHarness(setup: LedgerHarnessSetup): Promise<StoreHarness<PostgresStore>> {
  const { table, storeOptions } = setup;
  const ledger = `"${table}_ledger"`;
  const main = await setup.open(4);
  const closers: Array<() => Promise<void>> = [() => main.close()];
  const store = createPostgresStore({ client: main.client, table, ...storeOptions });
  await store.migrate();
  await main.client.query(
    `CREATE TABLE ${ledger} (seq bigserial PRIMARY KEY, key text NOT NULL, entry text NOT NULL, token bigint NOT NULL)`,
  );
  let keys = 0;
  return {
    store,
    connect: async () => {
      if (setup.oneConnection === true) return store;
      const opened = await setup.open(2);
      closers.push(() => opened.close());
      return createPostgresStore({ client: opened.client, table, ...storeOptions });
    },
    appendUnderFence: async (leases, lease, entry, options): Promise<FencedWriteOutcome<unknown>> => {
      // NOTE: the one-statement form has no checkpoint option: a write with a checkpoint uses the transaction.
      if (!setup.statementForm || options !== undefined) {
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
    // NOTE: the INSERT runs in the fenced transaction; a refusal after it rolls the transaction back.
    fencedAppend: (fence, entry, options, refuse) =>
      store.fencedWrite(
        fence,
        async (tx) => {
          await tx.query(`INSERT INTO ${ledger} (key, entry, token) VALUES ($1, $2, $3)`, [fence.key, entry, tx.token.toString()]);
          if (refuse !== undefined) tx.refuse(refuse.code, refuse.detail);
        },
        options,
      ),
    readLedger: async (key) => {
      const { rows } = await main.client.query(`SELECT entry FROM ${ledger} WHERE key = $1 ORDER BY seq`, [key]);
      return (rows as Array<{ entry: string }>).map((row) => row.entry);
    },
    expireNow: async (key) => {
      await main.client.query(
        // NOTE: an item's availability (claim-next) moves with its expiry, as every statement keeps it.
        `UPDATE "${table}" SET expires_at = date_trunc('milliseconds', clock_timestamp()),
           available_at = CASE WHEN item_set IS NULL OR recovery_required THEN NULL
             ELSE GREATEST(item_due_at, date_trunc('milliseconds', clock_timestamp()), held_until) END
         WHERE key = $1 AND holder IS NOT NULL AND expires_at > clock_timestamp()`,
        [key],
      );
    },
    advanceClock: null,
    freshKey: (label = 'key') => `${label}:${++keys}:${randomBytes(4).toString('hex')}`,
    close: async () => void (await Promise.all(closers.map((close) => close()))),
  };
}
