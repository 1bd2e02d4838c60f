/**
 * Runs leasefence's statements and transactions on the user's client, turning driver errors into typed
 * failures according to the phase they happened in (see `failures.ts`).
 */
import { InvalidArgumentError } from '../../errors.js';
import type { PostgresClient, PostgresPooledConnection, PostgresQueryable } from './client.js';
import { classifyFailure as classify, isConnectionFailure, isServerError, type FailurePhase, type SchemaCheck } from './failures.js';
import { acceptsNamedStatements, send } from './prepared.js';

/** Raised inside a transaction body to roll it back without an error reaching the caller. */
class Rollback<T> {
  constructor(readonly value: T) {}
}

/** What a transaction body can do besides querying: end the transaction with ROLLBACK and a value. */
export interface TransactionControl {
  rollbackWith<T>(value: T): never;
}

/** Statement and transaction runner over one client. */
export interface Session {
  /** One autocommit statement: one round trip. */
  statement(text: string, params: unknown[], operation: string): Promise<unknown[]>;
  /**
   * Runs `body` inside BEGIN ... COMMIT on a dedicated connection. Errors of leasefence's own statements
   * are classified by the body; an error the body throws rolls back and propagates unchanged; failures of
   * BEGIN / connecting are `StoreUnavailableError`, connection loss during COMMIT `OutcomeUnknownError`.
   */
  transaction<T>(body: (tx: PostgresQueryable, control: TransactionControl) => Promise<T>, operation: string): Promise<T>;
  /** Sends one of leasefence's own statements on `queryable` (a transaction's connection), prepared where possible. */
  run(queryable: PostgresQueryable, text: string, params: unknown[]): Promise<{ rows: unknown[] }>;
  /** Whether the client can run transactions. */
  readonly transactional: boolean;
  /** Whether leasefence's statements are sent prepared (planned once per connection). */
  readonly prepared: boolean;
  /** `classifyFailure` with this session's schema check (a never-migrated table names its fix). */
  classifyFailure(error: unknown, phase: FailurePhase, operation: string): unknown;
}

/**
 * Checks a connection out of the pool with an `error` listener attached until it is released: a pg
 * connection that dies while checked out emits `error`, which would otherwise be an uncaught exception.
 */
async function checkOut(
  client: PostgresClient,
  operation: string,
  classifyFailure: Session['classifyFailure'],
): Promise<{ connection: PostgresPooledConnection; release(broken: boolean): void }> {
  let dead = false;
  const onError = (): void => {
    dead = true;
  };
  let connection: PostgresPooledConnection;
  try {
    connection = await connectListening(client, onError);
  } catch (error) {
    throw classifyFailure(error, 'connect', operation);
  }
  return {
    connection,
    release(broken) {
      connection.removeListener?.('error', onError);
      connection.release(broken || dead ? true : undefined);
    },
  };
}

/** A pool's `connect` called with a callback (pg-pool's form) or without (a promise). */
type ConnectEither = (callback: (error: unknown, connection?: PostgresPooledConnection) => void) => unknown;

/** Whether `value` is a checked-out connection (not the `undefined` a wrapper's promise resolves to). */
function isConnection(value: unknown): value is PostgresPooledConnection {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { query?: unknown }).query === 'function' &&
    typeof (value as { release?: unknown }).release === 'function'
  );
}

/**
 * `client.connect()` with `onError` listening on the connection from the moment the pool hands it over.
 * NOTE: pg-pool hands a new connection over from inside the socket's data handler (at ReadyForQuery), with
 * its own `error` listener already removed; when the same chunk also carries an ErrorResponse (a server
 * shutting down: 57P01), pg emits `error` before any promise continuation runs, and with no listener that
 * crashes the process (seen in test/waiting-stores/cross-process.test.ts). Its callback form runs
 * synchronously there, so the listener is on before the next message is parsed.
 *
 * A wrapped `connect` (instrumentation) may answer through the callback, its promise, or both: an `async`
 * pass-through resolves `undefined` before the callback delivers the connection; a promise-only wrapper
 * ignores the callback. The checkout settles once, with the first connection handed over or the first
 * failure; a promise that resolves with no connection is waiting for the callback; another connection
 * handed over after that (a wrapper that checked out twice) is released at once, never leaked.
 */
function connectListening(client: PostgresClient, onError: () => void): Promise<PostgresPooledConnection> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let taken: PostgresPooledConnection | null = null;
    const take = (connection: PostgresPooledConnection): void => {
      if (settled) {
        // NOTE: the same connection again (a wrapper that calls back and resolves it) is already ours.
        if (connection !== taken) connection.release();
        return;
      }
      settled = true;
      taken = connection;
      connection.on?.('error', onError);
      resolve(connection);
    };
    const fail = (error: unknown): void => {
      if (settled) return;
      settled = true;
      reject(error);
    };
    const connect = client.connect as unknown as ConnectEither;
    let returned: unknown;
    try {
      returned = connect.call(client, (error, connection) => {
        if (error !== null && error !== undefined) fail(error);
        else if (isConnection(connection)) take(connection);
        else fail(new Error('the pool handed over no connection'));
      });
    } catch (error) {
      fail(error);
      return;
    }
    if (typeof (returned as { then?: unknown } | null | undefined)?.then === 'function') {
      (returned as Promise<unknown>).then((value) => {
        if (isConnection(value)) take(value);
      }, fail);
    }
  });
}

const control: TransactionControl = {
  rollbackWith(value) {
    throw new Rollback(value);
  },
};

/**
 * The client's `connect` and `transaction`, or `InvalidArgumentError` for what is no client (read once: a
 * getter or Proxy that throws is no client either).
 */
function readClient(client: PostgresClient): {
  readonly connect: PostgresClient['connect'] | undefined;
  readonly transaction: PostgresClient['transaction'] | undefined;
} {
  let shape: { query: unknown; connect: unknown; transaction: unknown; single: boolean };
  try {
    if (typeof client !== 'object' || client === null) throw new InvalidArgumentError('no object');
    const { query, connect, transaction } = client;
    shape = {
      query,
      connect,
      transaction,
      single: 'connectionParameters' in client || typeof (client as { release?: unknown }).release === 'function',
    };
  } catch {
    shape = { query: undefined, connect: undefined, transaction: undefined, single: false };
  }
  if (
    typeof shape.query !== 'function' ||
    (shape.connect !== undefined && typeof shape.connect !== 'function') ||
    (shape.transaction !== undefined && typeof shape.transaction !== 'function')
  ) {
    throw new InvalidArgumentError(
      'leasefence/postgres needs a client with query(text, params): a pg Pool, PGlite, fromPostgresJs(sql) or fromPgClient(client)',
    );
  }
  // NOTE: a single pg Client (or a PoolClient) also has connect(), with another meaning (open this
  // connection); treating it as a pool would fail on first use, so it is refused here with the fix.
  if (shape.connect !== undefined && shape.single) {
    throw new InvalidArgumentError(
      'a single pg Client or PoolClient cannot be used as a pool: pass the Pool, or wrap the client with fromPgClient(client)',
    );
  }
  return { connect: shape.connect as PostgresClient['connect'], transaction: shape.transaction as PostgresClient['transaction'] };
}

/** Creates the session of a client. */
export function createSession(
  client: PostgresClient,
  options: { readonly prepare?: boolean; readonly schema?: SchemaCheck } = {},
): Session {
  const { connect, transaction } = readClient(client);
  const classifyFailure = (error: unknown, phase: FailurePhase, operation: string): unknown =>
    classify(error, phase, operation, options.schema);
  const named = options.prepare !== false && acceptsNamedStatements(client);
  const run = (queryable: PostgresQueryable, text: string, params: unknown[]) => send(queryable, text, params, named);

  const statement = async (text: string, params: unknown[], operation: string): Promise<unknown[]> => {
    if (connect === undefined) {
      try {
        return (await run(client, text, params)).rows;
      } catch (error) {
        throw classifyFailure(error, 'statement', operation);
      }
    }
    const checkedOut = await checkOut(client, operation, classifyFailure);
    try {
      const { rows } = await run(checkedOut.connection, text, params);
      checkedOut.release(false);
      return rows;
    } catch (error) {
      checkedOut.release(!isServerError(error) || isConnectionFailure(error));
      throw classifyFailure(error, 'statement', operation);
    }
  };

  const viaPool = async <T>(body: (tx: PostgresQueryable, control: TransactionControl) => Promise<T>, operation: string): Promise<T> => {
    const checkedOut = await checkOut(client, operation, classifyFailure);
    const { connection } = checkedOut;
    let broken = false;
    try {
      try {
        await connection.query('BEGIN');
      } catch (error) {
        broken = isConnectionFailure(error);
        throw classifyFailure(error, 'before-commit', operation);
      }
      let value: T;
      try {
        value = await body(connection, control);
      } catch (error) {
        // NOTE: a failed ROLLBACK means the connection is gone, and the server rolls back on its own.
        await connection.query('ROLLBACK').catch(() => {
          broken = true;
        });
        if (error instanceof Rollback) return error.value as T;
        if (isConnectionFailure(error)) broken = true;
        throw error;
      }
      try {
        await connection.query('COMMIT');
      } catch (error) {
        if (isConnectionFailure(error)) broken = true;
        throw classifyFailure(error, 'commit', operation);
      }
      return value;
    } finally {
      checkedOut.release(broken);
    }
  };

  const viaCallback = async <T>(
    body: (tx: PostgresQueryable, control: TransactionControl) => Promise<T>,
    operation: string,
  ): Promise<T> => {
    let bodyReturned = false;
    let thrownByBody: { error: unknown } | null = null;
    try {
      return await (transaction as NonNullable<typeof transaction>).call<
        PostgresClient,
        [(tx: PostgresQueryable) => Promise<T>],
        Promise<T>
      >(client, async (tx) => {
        try {
          const value = await body(tx, control);
          bodyReturned = true;
          return value;
        } catch (error) {
          thrownByBody = { error };
          throw error;
        }
      });
    } catch (error) {
      if (error instanceof Rollback) return error.value as T;
      if (thrownByBody !== null && error === (thrownByBody as { error: unknown }).error) throw error;
      // NOTE: only an error after the body returned can come from COMMIT; anything earlier rolled back.
      throw classifyFailure(error, bodyReturned ? 'commit' : 'before-commit', operation);
    }
  };

  return {
    statement,
    run,
    transactional: connect !== undefined || transaction !== undefined,
    prepared: named,
    classifyFailure,
    transaction(body, operation) {
      if (connect !== undefined) return viaPool(body, operation);
      if (transaction !== undefined) return viaCallback(body, operation);
      return Promise.reject(
        new InvalidArgumentError(
          `${operation} needs a transaction: pass a client with connect() (pg Pool) or transaction() (PGlite, fromPostgresJs(sql), fromPgClient(client))`,
        ),
      );
    },
  };
}
