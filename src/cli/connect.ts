/**
 * Opens a store from a URL (`postgres://...`, `postgresql://...`, `redis://...`, `rediss://...`,
 * `sqlite:/path/file.db`, `etcd://host:port[,host:port...]` or an etcd member's `http://` / `https://` client
 * URL), with the driver loaded from the project that installed leasefence (or `--driver-path`, see
 * `drivers.ts`): `pg` for Postgres; `ioredis`, else `redis`, for Redis; `better-sqlite3`, else Node's built-in
 * `node:sqlite`, for SQLite; `etcd3` for etcd. leasefence itself depends on none of them.
 */
import { existsSync } from 'node:fs';
import { createEtcdStore, type EtcdClient } from '../adapters/etcd/index.js';
import { createPostgresStore, createPostgresTokenGate } from '../adapters/postgres/index.js';
import { createRedisStore, createRedisTokenGate } from '../adapters/redis/index.js';
import type { RedisClient } from '../adapters/redis/connection.js';
import { createSqliteStore, createSqliteTokenGate, type SqliteClient } from '../adapters/sqlite/index.js';
import type { OperatorGate } from '../operator.js';
import type { Store } from '../store.js';
import { driverDirectory, installDirectories, loadDriver } from './drivers.js';
import { CliError, EXIT } from './exit-codes.js';
import { describeStoreUrl, schemeOf, sqlitePathOf } from './store-url.js';

/** Where the CLI looks for `--store`'s options. */
export interface StoreSettings {
  readonly url: string;
  /** Postgres and SQLite: the lease table. */
  readonly table?: string;
  /** Postgres and SQLite: the token gate's table. */
  readonly gateTable?: string;
  /** Redis and etcd: the adapter's key namespace. */
  readonly prefix?: string;
  /** `--driver-path`: load drivers from this project directory (or `node_modules`) only. @default leasefence's own install */
  readonly driverPath?: string;
}

/** An opened store, its gate (when the backend has one) and how to close its connection. */
export interface OpenedStore {
  readonly store: Store;
  readonly gate: unknown;
  close(): Promise<void>;
}

/** The `node_modules` directories drivers may come from. */
const driverDirectories = (settings: StoreSettings): string[] =>
  settings.driverPath === undefined ? installDirectories() : [driverDirectory(settings.driverPath)];

const missing = (drivers: string, store: string, directories: readonly string[]): CliError =>
  new CliError(
    EXIT.unavailable,
    `${store} needs the ${drivers} package installed next to leasefence (looked in ${directories.join(', ') || 'no directory'}): npm install ${drivers.split(' or ')[0] ?? drivers}, or pass --driver-path DIR`,
  );

/** The module's default export when it has one (CommonJS drivers loaded through `import`). */
const moduleOf = <T>(loaded: unknown): T => ((loaded as { default?: T }).default ?? loaded) as T;

/** Opens the store (and gate) that `settings.url` names. */
export async function openStore(settings: StoreSettings): Promise<OpenedStore> {
  const { url } = settings;
  const directories = driverDirectories(settings);
  const scheme = schemeOf(url);
  const hierarchical = /^[a-z][a-z0-9+.-]*:\/\//i.test(url);
  if ((scheme === 'postgres' || scheme === 'postgresql') && hierarchical) {
    const pg = await loadDriver('pg', directories);
    if (pg === null) throw missing('pg', 'a postgres:// store', directories);
    const { Pool } = moduleOf<{ Pool: new (options: object) => { end(): Promise<void>; on(event: string, listener: () => void): void } }>(
      pg,
    );
    const pool = new Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 5_000 });
    pool.on('error', () => undefined);
    const client = pool as never;
    const store = createPostgresStore({ client, ...(settings.table === undefined ? {} : { table: settings.table }) });
    const gate = createPostgresTokenGate({ client, ...(settings.gateTable === undefined ? {} : { table: settings.gateTable }) });
    return { store, gate, close: () => pool.end() };
  }
  if ((scheme === 'redis' || scheme === 'rediss') && hierarchical) return openRedis(settings, directories);
  if (scheme === 'sqlite') return openSqlite(settings, directories);
  if ((scheme === 'etcd' || scheme === 'http' || scheme === 'https') && hierarchical) return openEtcd(settings, scheme, directories);
  throw new CliError(
    EXIT.usage,
    `--store must be a postgres://, postgresql://, redis://, rediss://, sqlite:, etcd:// or http(s):// (etcd) URL, got ${describeStoreUrl(url)}`,
  );
}

async function openRedis(settings: StoreSettings, directories: readonly string[]): Promise<OpenedStore> {
  const { url } = settings;
  const prefix = settings.prefix === undefined ? {} : { prefix: settings.prefix };
  const ioredis = await loadDriver('ioredis', directories);
  if (ioredis !== null) {
    const loaded = ioredis as {
      Redis?: new (url: string, options: object) => RedisClient & { disconnect(): void; on(event: string, listener: () => void): void };
    };
    const Redis = loaded.Redis ?? moduleOf<NonNullable<typeof loaded.Redis>>(ioredis);
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
    client.on('error', () => undefined);
    return {
      store: createRedisStore({ client, ...prefix }),
      gate: createRedisTokenGate({ client, ...prefix }),
      close: async () => client.disconnect(),
    };
  }
  const nodeRedis = await loadDriver('redis', directories);
  if (nodeRedis === null) throw missing('ioredis or redis', 'a redis:// store', directories);
  const { createClient } = moduleOf<{
    createClient(
      options: object,
    ): RedisClient & { connect(): Promise<unknown>; close(): Promise<void>; on(event: string, listener: () => void): void };
  }>(nodeRedis);
  const client = createClient({ url, socket: { reconnectStrategy: false } });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    throw new CliError(
      EXIT.unavailable,
      `cannot connect to ${describeStoreUrl(url)}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return { store: createRedisStore({ client, ...prefix }), gate: createRedisTokenGate({ client, ...prefix }), close: () => client.close() };
}

/** How long one etcd call may take: without a deadline, a call to a frozen member waits for ever. */
const ETCD_DEADLINE_MS = 5_000;

/**
 * etcd (`etcd://host:port,host:port` is every member over plain HTTP; `http://` and `https://` name members
 * the same way, comma-separated): one etcd3 client over every member, a deadline on each unary call. A
 * `user:password@` before the hosts is etcd's own authentication. Opening connects to nothing: an unreachable
 * cluster fails the first call (StoreUnavailableError, exit 5).
 */
async function openEtcd(settings: StoreSettings, scheme: string, directories: readonly string[]): Promise<OpenedStore> {
  const etcd3 = await loadDriver('etcd3', directories);
  if (etcd3 === null) throw missing('etcd3', 'an etcd store', directories);
  const rest = settings.url.slice(scheme.length + '://'.length);
  // NOTE: the LAST '@' ends the user info, whatever a password holds (as describeStoreUrl splits it).
  const at = rest.lastIndexOf('@');
  const userInfo = at < 0 ? '' : rest.slice(0, at);
  const location = (at < 0 ? rest : rest.slice(at + 1)).split(/[/?#]/, 1)[0] ?? '';
  const protocol = scheme === 'https' ? 'https' : 'http';
  const hosts = location
    .split(',')
    .filter((host) => host !== '')
    .map((host) => `${protocol}://${host}`);
  if (hosts.length === 0) throw new CliError(EXIT.usage, `--store ${scheme}:// needs at least one host:port`);
  const colon = userInfo.indexOf(':');
  const decode = (text: string): string => {
    try {
      return decodeURIComponent(text);
    } catch {
      throw new CliError(EXIT.usage, `--store ${scheme}://: the user info is not valid percent-encoding`);
    }
  };
  const auth =
    userInfo === ''
      ? {}
      : {
          auth: {
            username: decode(colon < 0 ? userInfo : userInfo.slice(0, colon)),
            password: decode(colon < 0 ? '' : userInfo.slice(colon + 1)),
          },
        };
  const { Etcd3 } = moduleOf<{ Etcd3: new (options: object) => EtcdClient & { close(): void } }>(etcd3);
  const client = new Etcd3({
    hosts,
    ...auth,
    dialTimeout: ETCD_DEADLINE_MS,
    defaultCallOptions: (context: { isStream: boolean }) => (context.isStream ? {} : { deadline: Date.now() + ETCD_DEADLINE_MS }),
  });
  const prefix = settings.prefix === undefined ? {} : { prefix: settings.prefix };
  // NOTE: etcd has no token gate of its own (gate data outside etcd with that store's gate).
  return { store: createEtcdStore({ client, ...prefix }), gate: null, close: async () => client.close() };
}

/** A SQLite connection constructor: better-sqlite3's `Database` or node:sqlite's `DatabaseSync`. */
type SqliteConnect = new (path: string) => SqliteClient & { close(): void };

/** better-sqlite3 from the install (or --driver-path), else Node's built-in node:sqlite (Node 22+), else `null`. */
async function sqliteDriver(directories: readonly string[]): Promise<SqliteConnect | null> {
  const betterSqlite = await loadDriver('better-sqlite3', directories);
  if (betterSqlite !== null) return moduleOf<SqliteConnect>(betterSqlite);
  try {
    // NOTE: a built-in: nothing is read from disk. The specifier is a variable so bundlers and Node 20 leave it alone.
    const builtin = 'node:sqlite';
    return ((await import(builtin)) as { DatabaseSync: SqliteConnect }).DatabaseSync;
  } catch {
    return null;
  }
}

async function openSqlite(settings: StoreSettings, directories: readonly string[]): Promise<OpenedStore> {
  const path = sqlitePathOf(settings.url);
  if (path === '') throw new CliError(EXIT.usage, '--store sqlite: needs a file path: sqlite:/path/to/leases.db');
  // NOTE: both drivers create a missing file; an operator's typo must not leave an empty database behind.
  if (!existsSync(path)) throw new CliError(EXIT.notFound, `no SQLite database at ${path}`);
  const Database = await sqliteDriver(directories);
  if (Database === null) throw missing('better-sqlite3', 'a sqlite: store (on Node 20; Node 22+ has node:sqlite built in)', directories);
  const database = new Database(path);
  const store = createSqliteStore({ client: database, ...(settings.table === undefined ? {} : { table: settings.table }) });
  const gate = createSqliteTokenGate({ store, ...(settings.gateTable === undefined ? {} : { table: settings.gateTable }) });
  return { store, gate, close: async () => database.close() };
}

/** The gate's operator methods, when its backend has them yet. */
export function operatorGateOf(gate: unknown): OperatorGate | undefined {
  const candidate = gate as Partial<OperatorGate> | null;
  return candidate !== null && typeof candidate?.inspect === 'function' && typeof candidate.reset === 'function'
    ? (candidate as OperatorGate)
    : undefined;
}
