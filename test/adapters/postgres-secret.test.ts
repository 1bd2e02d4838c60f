/**
 * The lease secret in Postgres (issue 9.2, 9.4): the table keeps only its SHA-256, the secret never travels
 * to the server (no statement parameter carries it), no pre-image, inspection or refusal returns the
 * stored hash, tables of the old format are migrated in place, and no failure path (server error, statement
 * timeout, connection loss, never-migrated table) puts the secret into an error, its cause chain,
 * `util.inspect` or `JSON.stringify`.
 */
import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresClient, type PostgresStore } from '../../src/adapters/postgres/index.js';
import { isLeaseError } from '../../src/errors.js';
import type { Lease } from '../../src/lease.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { freshTable, sharedPostgresUrl } from './postgres-harness.js';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const secretOf = (lease: Lease): string => lease.fence().secret;

/** Everything a logger could print of `value`. */
function printed(value: unknown): string {
  const parts = [inspect(value, { depth: 10, showHidden: true })];
  for (let current: unknown = value, depth = 0; current instanceof Error && depth < 10; current = current.cause, depth += 1) {
    parts.push(String(current.message), String(current.stack));
  }
  try {
    parts.push(JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));
  } catch {
    parts.push('unserialisable');
  }
  return parts.join('\n');
}

/** A pool wrapper that records every parameter leasefence sends, on the pool and on checked-out connections. */
function recordingPool(pool: pg.Pool): { client: PostgresClient; params: unknown[] } {
  const params: unknown[] = [];
  const record = (text: unknown, values: unknown) => {
    const config = text as { values?: unknown[] } | string;
    params.push(
      ...(typeof config === 'object' && config !== null ? (config.values ?? []) : []),
      ...((values as unknown[] | undefined) ?? []),
    );
  };
  const client = {
    totalCount: 0,
    idleCount: 0,
    waitingCount: 0,
    query: (text: string, values?: unknown[]) => {
      record(text, values);
      return pool.query(text as never, values as never);
    },
    connect: async () => {
      const connection = await pool.connect();
      return {
        query: (text: string, values?: unknown[]) => {
          record(text, values);
          return connection.query(text as never, values as never);
        },
        release: (error?: Error | boolean) => connection.release(error as never),
        on: connection.on.bind(connection),
        removeListener: connection.removeListener.bind(connection),
      };
    },
  };
  return { client: client as unknown as PostgresClient, params };
}

describe('postgres: the lease secret (pg Pool)', () => {
  let url: string;
  let pool: pg.Pool;
  let table: string;
  let store: PostgresStore;
  let leases: Leases<PostgresStore>;
  beforeAll(async () => {
    url = await sharedPostgresUrl();
    pool = new pg.Pool({ connectionString: url, max: 6 });
    pool.on('error', () => undefined);
    table = freshTable('lf_secret');
    store = createPostgresStore({ client: pool, table });
    await store.migrate();
    leases = createLeases(store, { holder: 'a', ttlMs: 60_000 });
  });
  afterAll(async () => {
    await pool?.end();
  });

  it('the row keeps the SHA-256 of the secret, never the secret; no statement parameter carries the secret', async () => {
    const recording = recordingPool(pool);
    const recorded = createPostgresStore({ client: recording.client, table });
    const a = createLeases(recorded, { holder: 'a', ttlMs: 60_000 });
    const b = createLeases(recorded, { holder: 'b', ttlMs: 60_000 });
    const lease = await a.claimOrThrow('row');
    await a.renewOrThrow(lease);
    await a.checkpointOrThrow(lease, { step: 1 });
    await a.fencedWriteOrThrow(lease, () => 1, { checkpoint: { step: 2 } });
    await recorded.fencedStatement(lease, 'SELECT fence.token FROM fence');
    await a.revoke('row', { reason: 'drill', requireRecovery: true });
    const second = await b.claimOrThrow('row', { recovering: true });
    await b.recover(second, 'resume');
    await b.release(second);
    const secrets = [secretOf(lease), secretOf(second)];
    const sent = recording.params.map(String).join('\n');
    for (const secret of secrets) expect(sent).not.toContain(secret);
    const third = await a.claimOrThrow('row');
    const { rows } = await pool.query(`SELECT * FROM "${table}" WHERE key = 'row'`);
    expect(JSON.stringify(rows)).not.toContain(secretOf(third));
    expect((rows[0] as { secret_hash: string }).secret_hash).toBe(sha256(secretOf(third)));
    expect(Object.keys(rows[0] as object)).not.toContain('secret');
  });

  it('a refused renew (wrong secret) and inspect never see the stored secret or its hash; a re-delivered claim is recognised by its hash', async () => {
    const lease = await leases.claimOrThrow('refused');
    // NOTE: export() where the handle has it (the secret is out of toJSON there), toJSON() before.
    const exported = (lease as unknown as { export?: () => ReturnType<Lease['toJSON']> }).export?.() ?? lease.toJSON();
    const forged = leases.restore({ ...exported, secret: 'f'.repeat(32) });
    const refused = await leases.renew(forged);
    expect(refused).toMatchObject({ ok: false, reason: 'wrong-secret' });
    const inspection = await leases.inspect('refused');
    for (const shown of [refused, inspection]) {
      expect(printed(shown)).not.toContain(secretOf(lease));
      expect(printed(shown)).not.toContain(sha256(secretOf(lease)));
    }
    const again = await store.claim({
      key: 'refused',
      holder: 'a',
      runId: null,
      secret: secretOf(lease),
      ttlMs: 60_000,
      attributes: {},
      recovering: false,
    });
    expect(again).toMatchObject({ ok: true, token: lease.token });
  });

  it('no failure path puts the secret (or its hash) into an error: server error, statement timeout, connection loss', async () => {
    const lease = await leases.claimOrThrow('failures');
    const failures: unknown[] = [];
    const capture = (run: () => Promise<unknown>) =>
      run().then(
        () => failures.push(new Error('no failure')),
        (error: unknown) => failures.push(error),
      );
    // A server error in a fenced statement (the user's SQL), and in a fenced transaction.
    await capture(() => store.fencedStatement(lease, 'SELECT 1 / 0 FROM fence'));
    await capture(() => leases.fencedWrite(lease, (tx) => tx.query('SELECT $1::int', ['not a number'])));
    // A statement timeout.
    const slow = new pg.Pool({ connectionString: url, max: 2, statement_timeout: 50 });
    slow.on('error', () => undefined);
    try {
      const slowLeases = createLeases(createPostgresStore({ client: slow, table }), { holder: 'a', ttlMs: 60_000 });
      const slowLease = await slowLeases.claimOrThrow('failures:slow');
      await capture(() => slowLeases.fencedWrite(slowLease, (tx) => tx.query('SELECT pg_sleep(1)')));
      await capture(() =>
        createPostgresStore({ client: slow, table }).fencedStatement(slowLease, 'SELECT fence.token FROM fence, pg_sleep(1)'),
      );
    } finally {
      await slow.end();
    }
    // Connection loss mid-transaction.
    await capture(() =>
      leases.fencedWrite(lease, async (tx) => {
        const { rows } = await tx.query('SELECT pg_backend_pid() AS pid');
        await pool.query('SELECT pg_terminate_backend($1)', [(rows[0] as { pid: number }).pid]);
        await tx.query('SELECT 1');
      }),
    );
    // A never-migrated table.
    await capture(() => createLeases(createPostgresStore({ client: pool, table: freshTable('lf_none') }), { holder: 'a' }).claim('k'));
    expect(failures.map((failure) => (failure as Error).message)).not.toContain('no failure');
    expect(failures.length).toBe(6);
    for (const failure of failures) {
      expect(printed(failure)).not.toContain(secretOf(lease));
      expect(printed(failure)).not.toContain(sha256(secretOf(lease)));
    }
    expect(failures.filter((failure) => isLeaseError(failure)).length).toBeGreaterThanOrEqual(3);
  });
});
