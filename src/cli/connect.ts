/**
 * Opens a store from a URL (`postgres://...`, `postgresql://...`, `redis://...`, `rediss://...`), with
 * the driver loaded from the user's project: `pg` for Postgres; `ioredis`, else `redis`, for Redis.
 * leasefence itself depends on none of them.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createPostgresStore, createPostgresTokenGate } from '../adapters/postgres/index.js';
import { createRedisStore, createRedisTokenGate } from '../adapters/redis/index.js';
import type { RedisClient } from '../adapters/redis/connection.js';
import type { OperatorGate } from '../operator.js';
import type { Store } from '../store.js';
import { CliError, EXIT } from './exit-codes.js';

/** Where the CLI looks for `--store`'s options. */
export interface StoreSettings {
  readonly url: string;
  /** Postgres: the lease table. */
  readonly table?: string;
  /** Postgres: the token gate's table. */
  readonly gateTable?: string;
  /** Redis: the adapter's key namespace. */
  readonly prefix?: string;
  /** Directories to load drivers from, in order. @default [process.cwd()] */
  readonly searchPaths?: readonly string[];
}

/** An opened store, its gate (when the backend has one) and how to close its connection. */
export interface OpenedStore {
  readonly store: Store;
  readonly gate: unknown;
  close(): Promise<void>;
}

/**
 * Loads `name` from the first of `searchPaths` that has it installed (the user's project, and its parents' node_modules);
 * `null` when none has it.
 */
export async function loadDriver(name: string, searchPaths: readonly string[]): Promise<unknown> {
  for (const directory of searchPaths) {
    try {
      const resolved = createRequire(join(directory, 'package.json')).resolve(name);
      return await import(pathToFileURL(resolved).href);
    } catch {
      // NOTE: not installed there; try the next place.
    }
  }
  return null;
}

const missing = (drivers: string, scheme: string): CliError =>
  new CliError(EXIT.unavailable, `${scheme} needs the ${drivers} package in your project: npm install ${drivers.split(' or ')[0] ?? drivers}`);

/** The module's default export when it has one (CommonJS drivers loaded through `import`). */
const moduleOf = <T>(loaded: unknown): T => ((loaded as { default?: T }).default ?? loaded) as T;

/** Opens the store (and gate) that `settings.url` names. */
export async function openStore(settings: StoreSettings): Promise<OpenedStore> {
  const { url } = settings;
  const searchPaths = settings.searchPaths ?? [process.cwd()];
  const scheme = /^([a-z]+):\/\//i.exec(url)?.[1]?.toLowerCase();
  if (scheme === 'postgres' || scheme === 'postgresql') {
    const pg = await loadDriver('pg', searchPaths);
    if (pg === null) throw missing('pg', 'a postgres:// store');
    const { Pool } = moduleOf<{ Pool: new (options: object) => { end(): Promise<void>; on(event: string, listener: () => void): void } }>(pg);
    const pool = new Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 5_000 });
    pool.on('error', () => undefined);
    const client = pool as never;
    const store = createPostgresStore({ client, ...(settings.table === undefined ? {} : { table: settings.table }) });
    const gate = createPostgresTokenGate({ client, ...(settings.gateTable === undefined ? {} : { table: settings.gateTable }) });
    return { store, gate, close: () => pool.end() };
  }
  if (scheme === 'redis' || scheme === 'rediss') {
    const prefix = settings.prefix === undefined ? {} : { prefix: settings.prefix };
    const ioredis = await loadDriver('ioredis', searchPaths);
    if (ioredis !== null) {
      const loaded = ioredis as { Redis?: new (url: string, options: object) => RedisClient & { disconnect(): void; on(event: string, listener: () => void): void } };
      const Redis = loaded.Redis ?? moduleOf<NonNullable<typeof loaded.Redis>>(ioredis);
      const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
      client.on('error', () => undefined);
      return { store: createRedisStore({ client, ...prefix }), gate: createRedisTokenGate({ client, ...prefix }), close: async () => client.disconnect() };
    }
    const nodeRedis = await loadDriver('redis', searchPaths);
    if (nodeRedis === null) throw missing('ioredis or redis', 'a redis:// store');
    const { createClient } = moduleOf<{ createClient(options: object): RedisClient & { connect(): Promise<unknown>; close(): Promise<void>; on(event: string, listener: () => void): void } }>(nodeRedis);
    const client = createClient({ url, socket: { reconnectStrategy: false } });
    client.on('error', () => undefined);
    try {
      await client.connect();
    } catch (error) {
      throw new CliError(EXIT.unavailable, `cannot connect to ${redactUrl(url)}: ${error instanceof Error ? error.message : String(error)}`);
    }
    return { store: createRedisStore({ client, ...prefix }), gate: createRedisTokenGate({ client, ...prefix }), close: () => client.close() };
  }
  throw new CliError(EXIT.usage, `--store must be a postgres://, postgresql://, redis:// or rediss:// URL, got ${JSON.stringify(redactUrl(url))}`);
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:/@]*:)[^@]*@/i, '$1***@');
}

/** The gate's operator methods, when its backend has them yet. */
export function operatorGateOf(gate: unknown): OperatorGate | undefined {
  const candidate = gate as Partial<OperatorGate> | null;
  return candidate !== null && typeof candidate?.inspect === 'function' && typeof candidate.reset === 'function' ? (candidate as OperatorGate) : undefined;
}
