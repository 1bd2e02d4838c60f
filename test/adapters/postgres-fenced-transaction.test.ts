/**
 * The Postgres fenced transaction (issue 8): a fenced write saves its checkpoint atomically with the
 * write, never deadlocks against itself or another write of the same lease, cannot outlive its grant on
 * the server, and a claim that meets a holder mid-transaction answers `held` at once.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, fromPgClient, type PostgresStore } from '../../src/adapters/postgres/index.js';
import { isLeaseError, isStoreFailure } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { freshTable, sharedPostgresUrl } from './postgres-harness.js';

describe('postgres fenced transaction (pg Pool)', () => {
  let pool: pg.Pool;
  let store: PostgresStore;
  let table: string;
  let keys = 0;
  const fresh = (label: string) => `${label}:${++keys}`;
  const leasesFor = (holder: string, ttlMs: number | null = 60_000): Leases<PostgresStore> => createLeases(store, { holder, ttlMs });
  const outRows = async (key: string) =>
    ((await pool.query(`SELECT note FROM "${table}_out" WHERE key = $1 ORDER BY id`, [key])).rows as Array<{ note: string }>).map(
      (row) => row.note,
    );

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: await sharedPostgresUrl(), max: 6, lock_timeout: 20_000 });
    pool.on('error', () => undefined);
    table = freshTable('lf_ftx');
    store = createPostgresStore({ client: pool, table, fencedTransactionMarginMs: 200 });
    await store.migrate();
    await pool.query(`CREATE TABLE "${table}_out" (id serial PRIMARY KEY, key text NOT NULL, note text NOT NULL)`);
  });
  afterAll(async () => {
    await pool?.end();
  });

  it('a fenced write with a checkpoint saves both, stamped with its token; a callback that throws saves neither', async () => {
    const a = leasesFor('a');
    const key = fresh('cp');
    const lease = await a.claimOrThrow(key);
    const outcome = await a.fencedWrite(lease, (tx) => tx.query(`INSERT INTO "${table}_out" (key, note) VALUES ($1, 'batch 1')`, [key]), {
      checkpoint: { batch: 1 },
    });
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    expect(outcome.checkpoint).toEqual({ json: '{"batch":1}', token: lease.token, writtenAt: outcome.now });
    const failed = a.fencedWrite(
      lease,
      async (tx) => {
        await tx.query(`INSERT INTO "${table}_out" (key, note) VALUES ($1, 'batch 2')`, [key]);
        throw new Error('the export failed');
      },
      { checkpoint: { batch: 2 } },
    );
    await expect(failed).rejects.toThrow('the export failed');
    expect(await outRows(key)).toEqual(['batch 1']);
    const inspection = await a.inspect(key);
    expect(inspection.checkpoint).toMatchObject({ value: { batch: 1 }, token: lease.token, writtenAt: outcome.now });
  });

  it('a fenced write with a checkpoint resolves a pending recovery, as checkpoint() does', async () => {
    const [a, b, c] = [leasesFor('a'), leasesFor('b'), leasesFor('c')];
    const key = fresh('recovery');
    const first = await a.claimOrThrow(key);
    await a.checkpointOrThrow(first, { batch: 7 });
    await a.revoke(key, { reason: 'stuck', requireRecovery: true });
    const recovering = await b.claimOrThrow(key, { recovering: true });
    await b.fencedWriteOrThrow(recovering, (tx) => tx.query(`INSERT INTO "${table}_out" (key, note) VALUES ($1, 'redo 7')`, [key]), {
      checkpoint: { batch: 8 },
    });
    expect((await b.inspect(key)).recoveryRequired).toBe(false);
    expect((await b.release(recovering)).ok).toBe(true);
    expect((await c.claim(key)).ok).toBe(true);
  });

  it('release with an explicit checkpoint decision resolves a pending recovery (clear or set); keep leaves it pending', async () => {
    for (const [decision, options, pending] of [
      ['clear', { checkpoint: null }, false],
      ['set', { checkpoint: { done: true } }, false],
      ['keep', {}, true],
    ] as const) {
      const [a, b, c] = [leasesFor('a'), leasesFor('b'), leasesFor('c')];
      const key = fresh(`release-${decision}`);
      const first = await a.claimOrThrow(key);
      await a.checkpointOrThrow(first, { batch: 3 });
      await a.revoke(key, { reason: 'stuck', requireRecovery: true });
      const recovering = await b.claimOrThrow(key, { recovering: true });
      expect((await b.release(recovering, options)).ok).toBe(true);
      expect({ decision, pending: (await b.inspect(key)).recoveryRequired }).toEqual({ decision, pending });
      const claim = await c.claim(key);
      expect({ decision, claimed: claim.ok }).toEqual({ decision, claimed: !pending });
    }
  });

  it('concurrent fenced writes with checkpoints of one lease neither deadlock nor fail: they queue', async () => {
    const a = leasesFor('a');
    const key = fresh('concurrent');
    const lease = await a.claimOrThrow(key);
    const writes = Array.from({ length: 4 }, (_, index) =>
      a.fencedWrite(
        lease,
        async (tx) => {
          await tx.query(`INSERT INTO "${table}_out" (key, note) VALUES ($1, $2)`, [key, `w${index}`]);
          await tx.query('SELECT pg_sleep(0.05)');
        },
        { checkpoint: { last: index } },
      ),
    );
    // NOTE: a plain fenced write (FOR SHARE) in the middle as well.
    writes.push(a.fencedWrite(lease, (tx) => tx.query(`INSERT INTO "${table}_out" (key, note) VALUES ($1, 'plain')`, [key])) as never);
    const outcomes = await Promise.all(writes);
    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, true, true, true, true]);
    expect((await outRows(key)).length).toBe(5);
  });

  it('checkpoint, renew, release or a fenced write of the same lease inside the callback fail fast (no self-deadlock) and apply nothing', async () => {
    const a = leasesFor('a');
    const key = fresh('self');
    const lease = await a.claimOrThrow(key);
    const started = performance.now();
    const attempts: Array<[string, () => Promise<unknown>]> = [
      ['checkpoint', () => a.checkpoint(lease, { inner: true })],
      ['renew', () => a.renew(lease)],
      ['release', () => a.release(lease)],
      ['fencedWrite', () => a.fencedWrite(lease, () => 1, { checkpoint: 1 })],
      ['claim', () => leasesFor('b').claim(key)],
    ];
    for (const [name, attempt] of attempts) {
      const outcome = await a.fencedWrite(lease, async (tx) => {
        await tx.query(`INSERT INTO "${table}_out" (key, note) VALUES ($1, 'inner')`, [key]);
        return attempt().then(
          () => 'no error',
          (error: unknown) => (isLeaseError(error, 'INVALID_ARGUMENT') ? (error as Error).message : `other: ${String(error)}`),
        );
      });
      expect(outcome.ok).toBe(true);
      if (outcome.ok) expect({ name, message: outcome.value }).toEqual({ name, message: expect.stringContaining('would wait forever') });
    }
    expect(performance.now() - started).toBeLessThan(5_000);
    const inspection = await a.inspect(key);
    expect(inspection.checkpoint).toBeNull();
    expect(inspection.grant?.token).toBe(lease.token);
    expect(inspection.grant?.expiresAt).toBe(lease.expiresAt);
  });

  it('a claim that meets a live lease whose holder is mid-transaction answers held at once (no lock wait)', async () => {
    const [a, b] = [leasesFor('a'), leasesFor('b')];
    const key = fresh('held');
    const lease = await a.claimOrThrow(key);
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const write = a.fencedWrite(lease, async () => {
      entered();
      await blocked;
    });
    await inside;
    const started = performance.now();
    const claim = await b.claim(key).finally(release);
    const elapsed = performance.now() - started;
    expect((await write).ok).toBe(true);
    expect(claim.ok).toBe(false);
    if (!claim.ok) expect(claim.reason).toBe('held');
    expect(elapsed).toBeLessThan(1_000);
  });

  it('a holder that stops talking mid-transaction loses its session soon after its grant expires; the next claim takes over', async () => {
    const [a, b] = [leasesFor('a', 1_000), leasesFor('b')];
    const key = fresh('frozen');
    const lease = await a.claimOrThrow(key);
    let resume!: () => void;
    const frozen = new Promise<void>((resolve) => (resume = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const write = a.fencedWrite(lease, async (tx) => {
      entered();
      await frozen;
      await tx.query(`INSERT INTO "${table}_out" (key, note) VALUES ($1, 'late')`, [key]);
    });
    await inside;
    const started = performance.now();
    let claimed = false;
    while (!claimed && performance.now() - started < 10_000) {
      const claim = await b.claim(key);
      claimed = claim.ok;
      if (!claimed) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const takeover = performance.now() - started;
    resume();
    const late = await write.then(
      (outcome) => outcome,
      (error: unknown) => error,
    );
    expect(claimed).toBe(true);
    // NOTE: the grant had at most 1 s left; the margin is 200 ms; the rest is polling and scheduling slack.
    expect(takeover).toBeLessThan(1_000 + 200 + 800);
    expect(isStoreFailure(late) || (late as { ok?: boolean }).ok === false).toBe(true);
    expect(await outRows(key)).toEqual([]);
  });

  it('a live holder cannot send statements past its grant: the write is refused as expired and rolled back', async () => {
    const a = leasesFor('a', 300);
    const key = fresh('overrun');
    const lease = await a.claimOrThrow(key);
    const outcome = await a.fencedWrite(lease, async (tx) => {
      await tx.query(`INSERT INTO "${table}_out" (key, note) VALUES ($1, 'early')`, [key]);
      await new Promise((resolve) => setTimeout(resolve, 400));
      await tx.query(`INSERT INTO "${table}_out" (key, note) VALUES ($1, 'late')`, [key]);
    });
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect(outcome.reason).toBe('expired');
    expect(await outRows(key)).toEqual([]);
  });

  it('a statement timeout inside the fenced transaction is a StoreUnavailableError (nothing applied)', async () => {
    const a = leasesFor('a', 400);
    const key = fresh('timeout');
    const lease = await a.claimOrThrow(key);
    const failed = await a
      .fencedWrite(lease, async (tx) => {
        await tx.query(`INSERT INTO "${table}_out" (key, note) VALUES ($1, 'slow')`, [key]);
        await tx.query('SELECT pg_sleep(5)');
      })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(isLeaseError(failed, 'STORE_UNAVAILABLE')).toBe(true);
    expect(await outRows(key)).toEqual([]);
  });
});

describe('postgres fenced transaction on one connection (fromPgClient)', () => {
  it('any statement of the store inside a fenced write callback fails fast instead of queueing behind the transaction forever', async () => {
    const connection = new pg.Client({ connectionString: await sharedPostgresUrl() });
    connection.on('error', () => undefined);
    await connection.connect();
    try {
      const store = createPostgresStore({ client: fromPgClient(connection), table: freshTable('lf_ftx_one') });
      await store.migrate();
      const leases = createLeases(store, { holder: 'a', ttlMs: 60_000 });
      const lease = await leases.claimOrThrow('one');
      const started = performance.now();
      const outcome = await leases.fencedWrite(lease, () =>
        leases.inspect('another key').then(
          () => 'no error',
          (error: unknown) => (isLeaseError(error, 'INVALID_ARGUMENT') ? (error as Error).message : `other: ${String(error)}`),
        ),
      );
      expect(outcome.ok && outcome.value).toContain('one connection');
      expect(performance.now() - started).toBeLessThan(2_000);
      expect((await leases.inspect('one')).grant?.token).toBe(lease.token);
    } finally {
      await connection.end();
    }
  });
});
