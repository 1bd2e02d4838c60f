/**
 * An exporter process, written the way the README's quick start tells a user to: claim the export key,
 * resume from the inherited checkpoint, export each batch with `fencedWrite(..., { checkpoint })`, release
 * after a few batches, claim again. It stops at every kill point (see protocol.ts) until the harness says go.
 */
import pg from 'pg';
import { Redis } from 'ioredis';
import { createPostgresStore, type PostgresWriteContext } from '../../src/adapters/postgres/index.js';
import { createRedisStore, fromIoredis, hashTagOf, type RedisConnection, type RedisWriteContext } from '../../src/adapters/redis/index.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import type { Lease } from '../../src/lease.js';
import type { Store } from '../../src/store.js';
import type { ExporterMessage, ExporterSetup, ExportProgress, HarnessReply, KillPoint } from './protocol.js';

const setup = JSON.parse(process.env['EXACTLY_ONCE_WORKER'] ?? '') as ExporterSetup;

let waiting: (() => void) | null = null;
process.on('message', (message: HarnessReply) => {
  if (message.type === 'go') waiting?.();
});
// NOTE: if the harness dies, do not linger.
process.on('disconnect', () => process.exit(0));

/** Announces a kill point and waits for the harness to let the exporter go on (or to kill it). */
function point(at: KillPoint, batch: number, token: bigint): Promise<void> {
  return new Promise((resolve) => {
    waiting = resolve;
    process.send?.({ type: 'point', point: at, batch, token: token.toString() } satisfies ExporterMessage);
  });
}

/** The batch and token the request being sent belongs to, for the `request-sent` point. */
let current: { batch: number; token: bigint } | null = null;

/** A store whose commit request announces `request-sent` right after it was handed to the socket. */
interface Exporting {
  readonly store: Store;
  write(lease: Lease, batch: number): (context: never) => Promise<void> | void;
  close(): Promise<void>;
}

async function afterSend<T>(reply: Promise<T>): Promise<T> {
  // NOTE: the reply may fail while the exporter waits at the point (a NOSCRIPT the store then retries with
  // EVAL); handled here so it is not an unhandled rejection, and still returned to the store as it is.
  reply.catch(() => undefined);
  if (current !== null) {
    const { batch, token } = current;
    current = null;
    await point('request-sent', batch, token);
  }
  return reply;
}

function postgresExporting(): Exporting {
  const pool = new pg.Pool({
    connectionString: setup.url,
    max: 2,
    application_name: `exporter-${setup.proc}`,
    idle_in_transaction_session_timeout: 10_000,
  });
  pool.on('error', () => undefined);
  const watched = new Proxy(pool, {
    get(target, property) {
      if (property === 'connect') {
        return async () => {
          const connection = await target.connect();
          return new Proxy(connection, {
            get(inner, name) {
              const value: unknown = Reflect.get(inner, name, inner);
              if (name !== 'query' || typeof value !== 'function') return typeof value === 'function' ? value.bind(inner) : value;
              return (...args: unknown[]) => {
                const reply = (value as (...params: unknown[]) => Promise<unknown>).apply(inner, args);
                return args[0] === 'COMMIT' ? afterSend(reply) : reply;
              };
            },
          });
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    store: createPostgresStore({ client: watched, table: setup.leaseTable }),
    write: (lease, batch) => async (tx: PostgresWriteContext) => {
      await tx.query(`INSERT INTO ${setup.target} (batch, token, proc) VALUES ($1, $2, $3)`, [batch, tx.token.toString(), setup.proc]);
      await point('in-write', batch, lease.token);
      current = { batch, token: lease.token };
    },
    close: () => pool.end(),
  };
}

function redisExporting(): Exporting {
  const client = new Redis(setup.url, { maxRetriesPerRequest: 1, connectionName: `exporter-${setup.proc}` });
  client.on('error', () => undefined);
  const target = `${hashTagOf(setup.key)}:${setup.target}`;
  const ioredis = fromIoredis(client);
  const connection: RedisConnection = {
    send: (args) => {
      const reply = ioredis.send(args);
      return args.includes(target) ? afterSend(reply) : reply;
    },
  };
  return {
    store: createRedisStore({ client: connection }),
    write: (lease, batch) => (tx: RedisWriteContext) => {
      void tx.call('HINCRBY', target, String(batch), '1');
      current = { batch, token: lease.token };
    },
    close: async () => void client.disconnect(),
  };
}

/** Exports up to `perGrant` batches under one grant, from where the inherited checkpoint says. */
async function exportUnder(leases: Leases, exporting: Exporting, lease: Lease, from: number): Promise<number> {
  let next = from;
  await point('claimed', next, lease.token);
  for (let done = 0; done < setup.perGrant && next < setup.batches; done += 1) {
    await point('before-write', next, lease.token);
    const progress: ExportProgress = { next: next + 1 };
    const write = exporting.write(lease, next) as (context: unknown) => Promise<void>;
    const written =
      setup.mode === 'atomic' ? await leases.fencedWrite(lease, write, { checkpoint: progress }) : await leases.fencedWrite(lease, write);
    current = null;
    if (!written.ok) return next;
    await point('after-write', next, lease.token);
    if (setup.mode === 'two-step') {
      if (!(await leases.checkpoint(lease, progress)).ok) return next;
      await point('after-checkpoint', next, lease.token);
    }
    next += 1;
    if (!(await leases.renew(lease)).ok) return next;
  }
  return next;
}

async function main(): Promise<void> {
  const exporting = setup.store === 'postgres' ? postgresExporting() : redisExporting();
  const leases = createLeases(exporting.store, { holder: setup.proc, ttlMs: setup.ttlMs });
  for (;;) {
    const claimed = await leases.claim(setup.key).catch(() => null);
    if (claimed === null || !claimed.ok) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      continue;
    }
    const { lease } = claimed;
    const from = (claimed.checkpoint?.value as ExportProgress | undefined)?.next ?? 0;
    if (from >= setup.batches) {
      await leases.release(lease);
      process.send?.({ type: 'done', token: lease.token.toString() } satisfies ExporterMessage);
      break;
    }
    const next = await exportUnder(leases, exporting, lease, from);
    await leases.release(lease).catch(() => undefined);
    await point('after-release', next, lease.token);
  }
  await exporting.close();
  process.disconnect?.();
}

main().catch((error: unknown) => {
  console.error(`exporter ${setup.proc} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
});
