/**
 * Vitest globalSetup of the `stores` and `long` projects (test/support/tiers.ts; the `unit` project starts no
 * server): ONE ephemeral PostgreSQL and ONE ephemeral redis-server (AOF) for the whole run, so
 * `npm test` needs nothing running beforehand. Test files find them through `process.env.LEASEFENCE_PG_URL`
 * and `process.env.LEASEFENCE_REDIS_URL` (set here, before the forked workers start, which inherit the
 * environment) and must use fresh keys / their own tables, since the servers are shared. Tests that restart
 * or kill a server start their own with startPostgres / startRedis.
 *
 * A variable that is already set (a disposable server the developer provides, as the start helpers' error
 * messages suggest) is used as it is, and that server is neither started nor stopped here.
 *
 * Both servers are stopped by the teardown at the end of the run, also when tests fail. An interrupted run
 * (SIGINT, SIGTERM) never reaches the teardown: vitest answers those signals with `process.exit()`, and
 * then the `exit` hooks of startPostgres / startRedis stop the servers and remove their temp dirs.
 */
import pg from 'pg';
import { Redis } from 'ioredis';
import { startPostgres, type PostgresServer } from './postgres-server.js';
import { startRedis, type RedisServer } from './redis-server.js';

/** The variables this setup exports to every test worker. */
export const PG_URL_VARIABLE = 'LEASEFENCE_PG_URL';
export const REDIS_URL_VARIABLE = 'LEASEFENCE_REDIS_URL';

async function postgresVersion(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ server_version: string }>('SHOW server_version');
    return rows[0]?.server_version ?? 'unknown';
  } finally {
    await client.end();
  }
}

async function redisVersion(url: string): Promise<{ version: string; aof: string }> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await client.connect();
  try {
    const version = /redis_version:(\S+)/.exec(await client.info('server'))?.[1] ?? 'unknown';
    const aof = (await client.config('GET', 'appendonly')) as string[];
    return { version, aof: aof[1] ?? 'unknown' };
  } finally {
    client.disconnect();
  }
}

/** A server for the run: one this setup started, or one the environment names (nothing to stop then). */
interface Provisioned {
  readonly url: string;
  readonly server: { stop(): Promise<void> } | null;
}

/** Uses `$variable` when set (a disposable server the developer provides), else starts a throwaway one. */
async function provision(variable: string, start: () => Promise<{ url: string; stop(): Promise<void> }>): Promise<Provisioned> {
  const given = process.env[variable];
  if (given !== undefined && given !== '') return { url: given, server: null };
  const server = await start();
  return { url: server.url, server };
}

/** Stops whatever this setup started; throws one error listing every failure. */
async function stopAll(provisioned: ReadonlyArray<Provisioned | undefined>): Promise<void> {
  const results = await Promise.allSettled(provisioned.map((entry) => entry?.server?.stop()));
  const errors = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
  if (errors.length > 0) throw new AggregateError(errors, 'stopping the test servers failed');
}

const where = (server: PostgresServer | RedisServer, dir: string): string => `on ${server.host}:${server.port}, ${dir}`;

export default async function setup(): Promise<() => Promise<void>> {
  let postgresServer: PostgresServer | undefined;
  let redisServer: RedisServer | undefined;
  const starts = await Promise.allSettled([
    provision(PG_URL_VARIABLE, async () => (postgresServer = await startPostgres())),
    provision(REDIS_URL_VARIABLE, async () => (redisServer = await startRedis({ persistence: 'aof' }))),
  ]);
  const [postgres, redis] = starts.map((start) => (start.status === 'fulfilled' ? start.value : undefined));
  if (postgres === undefined || redis === undefined) {
    await stopAll([postgres, redis]).catch(() => undefined);
    const reasons = starts.flatMap((start) => (start.status === 'rejected' ? [start.reason as unknown] : []));
    throw new AggregateError(reasons, `could not start the test servers: ${reasons.map(String).join('; ')}`);
  }

  try {
    const [pgVersion, redisInfo] = await Promise.all([postgresVersion(postgres.url), redisVersion(redis.url)]);
    const pgWhere = postgresServer === undefined ? `at $${PG_URL_VARIABLE}` : where(postgresServer, `data in ${postgresServer.dataDir}`);
    const redisWhere = redisServer === undefined ? `at $${REDIS_URL_VARIABLE}` : where(redisServer, `dir ${redisServer.dir}`);
    console.log(`test postgres ${pgVersion} ${pgWhere}`);
    console.log(`test redis-server ${redisInfo.version} ${redisWhere} (appendonly ${redisInfo.aof})`);
  } catch (error) {
    await stopAll([postgres, redis]).catch(() => undefined);
    throw error;
  }
  process.env[PG_URL_VARIABLE] = postgres.url;
  process.env[REDIS_URL_VARIABLE] = redis.url;

  return async () => {
    // NOTE: nothing is printed here: teardown runs after the reporters, and the closing `Tests:` line of
    // closing-line-reporter.ts must stay the last line of the run.
    await stopAll([postgres, redis]);
  };
}
