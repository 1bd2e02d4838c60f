/**
 * Bring your own client. leasefence never imports a Postgres driver: it talks to whatever you pass through
 * this tiny structural interface. A pg `Pool` and a PGlite instance fit it as they are; postgres.js and a
 * single pg `Client` fit through `fromPostgresJs(sql)` and `fromPgClient(client)`.
 */
import { InvalidArgumentError } from '../../errors.js';
import { isConnectionFailure } from './failures.js';

/** Anything that runs one parameterised statement and returns its rows. */
export interface PostgresQueryable {
  /** Runs one statement with bind parameters and returns its rows. */
  query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
}

/**
 * A connection checked out of a pool (pg `PoolClient`): `release(error)` destroys a broken connection.
 * While leasefence holds it, it listens for `error` events (a pg connection that dies while checked out
 * emits one, which would crash the process without a listener).
 */
export interface PostgresPooledConnection extends PostgresQueryable {
  /** Returns the connection to its pool; with an error, destroys it. */
  release(error?: Error | boolean): void;
  /** Listens for the connection's `error` event. */
  on?(event: 'error', listener: (error: Error) => void): unknown;
  /** Stops listening for the connection's `error` event. */
  removeListener?(event: 'error', listener: (error: Error) => void): unknown;
}

/**
 * The client a Postgres store and token gate take. `query` runs single statements (each one round trip).
 * Fenced writes in a transaction need one of:
 * - `connect()`, returning a dedicated connection with `release()` (pg `Pool`), or
 * - `transaction(fn)`, running `fn` inside BEGIN ... COMMIT, rolling back when it throws (PGlite,
 *   `fromPostgresJs(sql)`, `fromPgClient(client)`).
 */
export interface PostgresClient extends PostgresQueryable {
  /**
   * Whether `query` (and `connect()`'s connections, and `transaction()`'s handle) also take pg's
   * `{ name, text, values }`, so that leasefence's statements are prepared once per connection. Detected
   * for a pg Pool; set by `fromPgClient` and `fromPostgresJs`.
   */
  readonly acceptsNamedStatements?: boolean;
  /** Checks out a dedicated connection (pg `Pool`). */
  connect?(): Promise<PostgresPooledConnection>;
  /** Runs `run` inside BEGIN ... COMMIT, rolling back when it throws. */
  transaction?<T>(run: (tx: PostgresQueryable) => Promise<T>): Promise<T>;
}

/** The subset of a postgres.js `sql` instance (or transaction) leasefence uses. */
export interface PostgresJsSql {
  /** postgres.js' `sql.unsafe`: one statement with bind parameters. */
  unsafe(text: string, params?: unknown[], options?: { readonly prepare?: boolean }): PromiseLike<ArrayLike<unknown>>;
}

/** A postgres.js `sql` instance: `unsafe` plus `begin`. */
export interface PostgresJsRoot extends PostgresJsSql {
  /** postgres.js' `sql.begin`: runs `run` in a transaction. */
  begin<T>(run: (tx: PostgresJsSql) => Promise<T>): Promise<unknown>;
}

/** pg's query config, which `send` (prepared.ts) passes for a statement to prepare. */
interface NamedQuery {
  readonly name: string;
  readonly text: string;
  readonly values: unknown[];
}

const PREPARE = { prepare: true } as const;

/**
 * Passes on a postgres.js failure; one that says the connection is gone only after a timer turn.
 * NOTE: postgres.js 3.4 rejects a lost connection's queries at the socket's 'error' but frees the
 * connection only at its 'close', a loop phase later; a query made in between (a caller that retries at
 * once, in a microtask or setImmediate) is written to the dead socket and never settles. After a timer
 * turn 'close' has been handled and the next query opens a new connection.
 */
async function afterConnectionClosed(error: unknown): Promise<never> {
  if (isConnectionFailure(error)) await new Promise((resolve) => setTimeout(resolve, 0));
  throw error;
}

/**
 * A query result of postgres.js (an array of rows) as `{ rows }`. A pg query config (from leasefence's own
 * statements) is sent prepared. NOTE: postgres.js sends a parameterised `unsafe` query that is not
 * prepared as Parse + Describe, waits for the parameter types, then Bind + Execute: two round trips. A
 * prepared one is described once per connection, then takes one. The instance's own `prepare: false`
 * (for pgbouncer in transaction mode) still wins.
 */
function queryVia(sql: PostgresJsSql, closed: () => unknown = () => null): PostgresQueryable['query'] {
  return async (text, params = []) => {
    // NOTE: on a transaction whose connection closed, postgres.js would write to a socket that is gone.
    const gone = closed();
    if (gone !== null) throw gone;
    const named = text as unknown as NamedQuery | string;
    const sent = typeof named === 'string' ? sql.unsafe(named, params) : sql.unsafe(named.text, named.values, PREPARE);
    const result = await Promise.resolve(sent).catch(afterConnectionClosed);
    return { rows: Array.from(result) };
  };
}

/**
 * Adapts a postgres.js `sql` instance: statements go through `sql.unsafe(text, params)` (bind parameters,
 * never interpolated; leasefence's own statements prepared, unless the store says `prepare: false`),
 * transactions through `sql.begin`.
 *
 * ```ts
 * import postgres from 'postgres';
 * const store = createPostgresStore({ client: fromPostgresJs(postgres(url)) });
 * ```
 */
export function fromPostgresJs(sql: PostgresJsRoot): PostgresClient {
  // NOTE: leasefence reads its rows by column name and value; an instance that renames columns or rewrites
  // values or rows (e.g. `transform: postgres.camel`) would garble them, so it is refused up front.
  let transformed: boolean;
  try {
    if (
      (typeof sql !== 'function' && typeof sql !== 'object') ||
      sql === null ||
      typeof sql.unsafe !== 'function' ||
      typeof sql.begin !== 'function'
    )
      throw new InvalidArgumentError('not an sql instance');
    const transform = (sql as { options?: { transform?: Record<string, { from?: unknown } | undefined> } }).options?.transform;
    transformed = ['column', 'value', 'row'].some((part) => typeof transform?.[part]?.from === 'function');
  } catch {
    throw new InvalidArgumentError('fromPostgresJs needs a postgres.js sql instance (postgres(url))');
  }
  if (transformed) {
    throw new InvalidArgumentError(
      'fromPostgresJs needs an sql instance without result transforms (transform.column/value/row); create a separate postgres() instance for leasefence',
    );
  }
  return {
    acceptsNamedStatements: true,
    query: queryVia(sql),
    transaction: <T>(run: (tx: PostgresQueryable) => Promise<T>): Promise<T> => postgresJsTransaction(sql, run),
  };
}

/**
 * postgres.js's transaction `sql`, refusing (with the close error) to make a statement once the connection
 * closed: as a tagged template or function, and through `unsafe` and `file`. NOTE: postgres.js would write it
 * to the connection whose socket is gone (see `postgresJsTransaction`).
 */
function refusingWhenClosed(tx: PostgresJsSql, closed: () => unknown): PostgresJsSql {
  const refuse = (): void => {
    const gone = closed();
    if (gone !== null) throw gone;
  };
  return new Proxy(tx, {
    apply(target, self, args) {
      refuse();
      return Reflect.apply(target as unknown as (...params: unknown[]) => unknown, self, args);
    },
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if ((name !== 'unsafe' && name !== 'file') || typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        refuse();
        return Reflect.apply(value, target, args);
      };
    },
  });
}

/** A promise that never settles. */
const never = <T>(): Promise<T> => new Promise<T>(() => undefined);

/**
 * `run` in a postgres.js transaction. NOTE: when the connection closes while `run` is still running (the
 * server ended the session at the fenced transaction's bound, or the network failed), postgres.js rejects
 * `begin` at once, and when `run` settles later it sends ROLLBACK (or COMMIT) on that connection, whose
 * socket is gone: in postgres.js 3.4.9 an uncaught TypeError ("Cannot read properties of null (reading
 * 'write')") in a setImmediate, which ends the process. So after a close the promise handed to `begin`
 * never settles (it is collected with the transaction), statements on the transaction's `query` and `sql`
 * fail with the close error, and the outcome is `run`'s, as with pg: its error (a fenced write's `expired` refusal),
 * or the close error when it returned (nothing was committed).
 */
async function postgresJsTransaction<T>(sql: PostgresJsRoot, run: (tx: PostgresQueryable) => Promise<T>): Promise<T> {
  let closedBy: unknown = null;
  let body: Promise<{ readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown }> | null = null;
  let bodySettled = false;
  try {
    return (await sql.begin((tx) => {
      // NOTE: the transaction handle also carries postgres.js's own `sql` (tagged templates inside a fenced write).
      const closed = (): unknown => closedBy;
      body = run({ query: queryVia(tx, closed), sql: refusingWhenClosed(tx, closed) } as PostgresQueryable).then(
        (value) => ({ ok: true, value }) as const,
        (error: unknown) => ({ ok: false, error }) as const,
      );
      return body.then((settled) => {
        bodySettled = true;
        if (closedBy !== null) return never<T>();
        if (settled.ok) return settled.value;
        throw settled.error;
      });
    })) as T;
  } catch (error) {
    const pending = body as Promise<{ readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown }> | null;
    if (pending === null || bodySettled || !isConnectionFailure(error)) return afterConnectionClosed(error);
    closedBy = error;
    const settled = await pending;
    if (!settled.ok) throw settled.error;
    return afterConnectionClosed(error);
  }
}

/** Clients made by `fromPgClient`: one connection, which a transaction holds until it ends. */
const oneConnection = new WeakSet<object>();

/**
 * Whether every statement of `client` shares one connection (`fromPgClient`, PGlite), so that a statement
 * sent while a transaction is open queues behind it.
 */
export function sharesOneConnection(client: PostgresClient): boolean {
  if (oneConnection.has(client)) return true;
  // NOTE: PGlite is one in-process backend; its instances have `exec` and `waitReady`, which no pool has.
  const candidate = client as { exec?: unknown; waitReady?: unknown };
  return client.connect === undefined && typeof candidate.exec === 'function' && 'waitReady' in candidate;
}

/**
 * Adapts ONE connection (a connected pg `Client`, or any single-connection queryable): statements and
 * transactions take turns, so that no statement of another operation lands inside a fenced transaction.
 * Prefer a pool in production: a single connection serialises every lease operation of the process.
 *
 * ```ts
 * const client = new pg.Client(url);
 * await client.connect();
 * const store = createPostgresStore({ client: fromPgClient(client) });
 * ```
 */
export function fromPgClient(connection: PostgresQueryable): PostgresClient {
  // NOTE: a pg Client takes `{ name, text, values }` configs too; `query` passes its first argument through.
  let pgClient: boolean;
  try {
    if (typeof connection !== 'object' || connection === null || typeof connection.query !== 'function')
      throw new InvalidArgumentError('no connection');
    pgClient = 'connectionParameters' in connection;
  } catch {
    throw new InvalidArgumentError('fromPgClient needs one connection with query(text, params): a connected pg Client');
  }
  let tail: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(task: () => Promise<T>): Promise<T> => {
    const result = tail.then(task, task);
    tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  };
  const adapted: PostgresClient = {
    acceptsNamedStatements: pgClient,
    query: (text, params) => exclusive(() => connection.query(text, params)),
    transaction: <T>(run: (tx: PostgresQueryable) => Promise<T>): Promise<T> =>
      exclusive(async () => {
        await connection.query('BEGIN');
        let value: T;
        try {
          value = await run(connection);
        } catch (error) {
          await connection.query('ROLLBACK').catch(() => undefined);
          throw error;
        }
        await connection.query('COMMIT');
        return value;
      }),
  };
  oneConnection.add(adapted);
  return adapted;
}
