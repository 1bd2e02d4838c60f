/**
 * Postgres-only specs, run once per client (pg Pool, pg Client, postgres.js, PGlite) by the tiny test
 * files: statements per operation, fenced writes in both forms, bad input refused before I/O, SQL
 * metacharacters, bigint tokens, the server's clock, and token gates.
 */
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createPostgresStore,
  fromPostgresJs,
  postgresLeaseSchemaSql,
  type PostgresClient,
  type PostgresStore,
} from '../../src/adapters/postgres/index.js';
import { InvalidArgumentError } from '../../src/errors.js';
import type { Lease } from '../../src/lease.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { countingClient, type CountingClient } from './postgres-counting.js';
import { freshTable, openPostgresClient, sharedPostgresUrl, type OpenedClient, type PostgresClientKind } from './postgres-harness.js';
import { describePostgresGateSpecs } from './postgres-gate-specs.js';
import { clientTarget, describePostgresRecordSpecs } from './postgres-record-specs.js';

/** What every spec file of one client kind shares: a counting client and a store on a fresh table. */
export interface PostgresSpecContext {
  readonly kind: PostgresClientKind;
  readonly opened: OpenedClient;
  readonly counting: CountingClient;
  readonly store: PostgresStore;
  readonly table: string;
  leasesFor(holder: string, ttlMs?: number | null): Leases<PostgresStore>;
  fresh(label: string): string;
}

export function describePostgresAdapterSpecs(kind: PostgresClientKind): void {
  describe(`postgres adapter (${kind})`, () => {
    let context: PostgresSpecContext;
    let keyCount = 0;
    const ctx = (): PostgresSpecContext => context;

    beforeAll(async () => {
      const opened = await openPostgresClient(kind, kind === 'pglite' ? '' : await sharedPostgresUrl());
      const counting = countingClient(opened.client);
      const table = freshTable(`lf_specs_${kind.replace('-', '_')}`);
      const store = createPostgresStore({ client: counting.client, table });
      await store.migrate();
      await opened.client.query(`CREATE TABLE "${table}_out" (id int PRIMARY KEY, note text NOT NULL, token bigint)`);
      context = {
        kind,
        opened,
        counting,
        store,
        table,
        leasesFor: (holder, ttlMs = 60_000) => createLeases(store, { holder, ttlMs, maxCheckpointBytes: 4096 }),
        fresh: (label) => `${label}:${++keyCount}`,
      };
    });
    afterAll(async () => {
      await context?.opened.close();
    });

    const outRows = async (): Promise<Array<{ id: number; note: string }>> =>
      (await ctx().opened.client.query(`SELECT id, note FROM "${ctx().table}_out" ORDER BY id`)).rows as Array<{
        id: number;
        note: string;
      }>;

    it('sends exactly one statement per claim, renew, checkpoint, release, revoke, recover, inspect and fenced statement', async () => {
      const { counting, store } = ctx();
      const key = ctx().fresh('count');
      const a = ctx().leasesFor('a');
      const b = ctx().leasesFor('b');
      let lease = null as unknown as Lease;
      const steps: Array<[string, () => Promise<unknown>]> = [
        ['claim (first, inserts the row)', async () => (lease = await a.claimOrThrow(key))],
        ['claim (refused: held)', () => b.claim(key)],
        ['renew', () => a.renewOrThrow(lease)],
        ['checkpoint', () => a.checkpointOrThrow(lease, { step: 1 })],
        ['fenced statement', () => store.fencedStatement(lease, `SELECT fence.token FROM fence`)],
        ['inspect', () => a.inspect(key)],
        ['revoke', () => a.revoke(key, { reason: 'count', requireRecovery: true })],
        ['claim (takeover, recovering)', async () => (lease = await b.claimOrThrow(key, { recovering: true }))],
        ['recover', () => b.recover(lease, 'resume')],
        ['release', () => b.release(lease)],
        ['release (again: idempotent)', () => b.release(lease)],
        ['renew (refused: released)', () => b.renew(lease)],
      ];
      for (const [name, run] of steps) {
        const statements = await counting.statementsDuring(run);
        expect({ name, statements: statements.length }).toEqual({ name, statements: 1 });
      }
    });

    it('a fenced write is one transaction: BEGIN (pool), one locking statement, the callback statements, COMMIT (pool)', async () => {
      const leases = ctx().leasesFor('a');
      const lease = await leases.claimOrThrow(ctx().fresh('tx'));
      const statements = await ctx().counting.statementsDuring(() =>
        leases.fencedWriteOrThrow(lease, (tx) => tx.query(`INSERT INTO "${ctx().table}_out" (id, note) VALUES (1, 'tx')`)),
      );
      const pooled = ctx().kind === 'pg-pool';
      expect(statements).toEqual([
        ...(pooled ? ['BEGIN'] : []),
        'WITH pre AS',
        `INSERT INTO "${ctx().table}_out"`,
        ...(pooled ? ['COMMIT'] : []),
      ]);
      expect(await outRows()).toContainEqual({ id: 1, note: 'tx' });
      const withCheckpoint = await ctx().counting.statementsDuring(() =>
        leases.fencedWriteOrThrow(lease, (tx) => tx.query(`INSERT INTO "${ctx().table}_out" (id, note) VALUES (1002, 'tx')`), {
          checkpoint: { id: 1002 },
        }),
      );
      // NOTE: the checkpoint is one more statement in the same transaction, after the callback's.
      expect(withCheckpoint).toEqual([
        ...(pooled ? ['BEGIN'] : []),
        'WITH pre AS',
        `INSERT INTO "${ctx().table}_out"`,
        `UPDATE "${ctx().table}" AS`,
        ...(pooled ? ['COMMIT'] : []),
      ]);
    });

    it('a refused fenced write never runs its callback; a throwing callback rolls back all it wrote and its error propagates', async () => {
      const a = ctx().leasesFor('a');
      const key = ctx().fresh('refused');
      const stale = await a.claimOrThrow(key);
      await a.revoke(key, { reason: 'test' });
      let called = false;
      const refused = await a.fencedWrite(stale, () => {
        called = true;
      });
      expect(refused).toMatchObject({ ok: false, reason: 'revoked', expected: { token: stale.token }, found: { token: stale.token + 1n } });
      expect(called).toBe(false);

      const current = await a.claimOrThrow(key);
      const boom = new Error('callback failed');
      await expect(
        a.fencedWrite(current, async (tx) => {
          await tx.query(`INSERT INTO "${ctx().table}_out" (id, note) VALUES (2, 'rolled back')`);
          throw boom;
        }),
      ).rejects.toBe(boom);
      const duplicate = a.fencedWrite(current, async (tx) => {
        await tx.query(`INSERT INTO "${ctx().table}_out" (id, note) VALUES (3, 'first')`);
        await tx.query(`INSERT INTO "${ctx().table}_out" (id, note) VALUES (3, 'duplicate')`);
      });
      await expect(duplicate).rejects.toMatchObject({ code: '23505' });
      expect((await outRows()).filter((row) => row.id === 2 || row.id === 3)).toEqual([]);
    });

    it('fencedStatement tells a fenced refusal (with the core verdict) apart from a write that matched zero rows', async () => {
      const { store, table } = ctx();
      const a = ctx().leasesFor('a');
      const key = ctx().fresh('statement');
      const lease = await a.claimOrThrow(key);
      const insert = `INSERT INTO "${table}_out" (id, note, token) SELECT $1, $2, fence.token FROM fence RETURNING id, token`;
      const written = await store.fencedStatement<{ id: number; token: string }>(lease, insert, [10, 'first']);
      expect(written).toMatchObject({ ok: true, rowCount: 1, token: lease.token });
      expect(written.ok && written.rows.map((row) => [row.id, BigInt(row.token)])).toEqual([[10, lease.token]]);
      const missed = await store.fencedStatement(lease, `UPDATE "${table}_out" SET note = $1 FROM fence WHERE id = $2 RETURNING id`, [
        'x',
        999,
      ]);
      expect(missed).toEqual({ ok: true, rows: [], rowCount: 0, token: lease.token, now: expect.any(Number) });
      await a.release(lease);
      const refused = await store.fencedStatement(lease, `UPDATE "${table}_out" SET note = $1 FROM fence WHERE id = $2 RETURNING id`, [
        'stale',
        10,
      ]);
      expect(refused).toMatchObject({
        ok: false,
        reason: 'released',
        expected: { token: lease.token },
        found: { token: lease.token, holder: null },
      });
      expect((await outRows()).find((row) => row.id === 10)?.note).toBe('first');
    });

    it('fencedStatement refuses before I/O a statement that does not read fence or cannot be counted; an ungated write is rolled back', async () => {
      const { store, table, counting } = ctx();
      const a = ctx().leasesFor('a');
      const lease = await a.claimOrThrow(ctx().fresh('guard'));
      const before = counting.sent.length;
      await expect(store.fencedStatement(lease, `INSERT INTO "${table}_out" (id, note) VALUES (20, 'x') RETURNING id`)).rejects.toThrow(
        InvalidArgumentError,
      );
      await expect(store.fencedStatement(lease, `INSERT INTO "${table}_out" (id, note) SELECT 20, 'x' FROM fence`)).rejects.toThrow(
        InvalidArgumentError,
      );
      await expect(
        store.fencedStatement(lease, `UPDATE "${table}_out" SET note = $2 FROM fence WHERE id = $1 RETURNING 1`, [1]),
      ).rejects.toThrow(/\$2/);
      expect(counting.sent.length).toBe(before);
      await a.release(lease);
      const ungated = `INSERT INTO "${table}_out" (id, note) SELECT 21, 'ungated' WHERE EXISTS (SELECT 1) OR EXISTS (SELECT 1 FROM fence) RETURNING id`;
      await expect(store.fencedStatement(lease, ungated)).rejects.toThrow(/without reading "fence"/);
      expect((await outRows()).some((row) => row.id === 21)).toBe(false);
    });

    // NOTE: temp tables live in one session, so this runs on the single-connection clients only.
    it.runIf(kind === 'pg-client' || kind === 'pglite')(
      'fencedStatement shadows none of the user tables (pre, clock, written): only fence is reserved',
      async () => {
        const { store, opened } = ctx();
        for (const name of ['pre', 'clock', 'written'])
          await opened.client.query(`CREATE TEMP TABLE IF NOT EXISTS ${name} (id int, token bigint)`);
        const lease = await ctx().leasesFor('a').claimOrThrow(ctx().fresh('shadow'));
        for (const name of ['pre', 'clock', 'written']) {
          const outcome = await store.fencedStatement(
            lease,
            `INSERT INTO ${name} (id, token) SELECT 1, fence.token FROM fence RETURNING id, token::text AS token`,
          );
          expect(outcome).toMatchObject({ ok: true, rowCount: 1, rows: [{ id: 1, token: String(lease.token) }] });
          expect((await opened.client.query(`SELECT count(*)::int AS n FROM ${name}`)).rows).toEqual([{ n: 1 }]);
        }
      },
    );

    it('an SQL error of the user statement propagates unchanged and applies nothing', async () => {
      const { store, table } = ctx();
      const lease = await ctx().leasesFor('a').claimOrThrow(ctx().fresh('sqlerror'));
      const twice = `INSERT INTO "${table}_out" (id, note) SELECT 30 + g, 'dup' FROM fence, generate_series(0, 1) AS g UNION ALL SELECT 30, 'dup' FROM fence RETURNING id`;
      await expect(store.fencedStatement(lease, twice)).rejects.toMatchObject({ code: '23505' });
      expect((await outRows()).filter((row) => row.id === 30 || row.id === 31)).toEqual([]);
    });

    it('a wrapped statement text is checked again when it comes with another number of parameters', async () => {
      const { store, table, counting } = ctx();
      const lease = await ctx().leasesFor('a').claimOrThrow(ctx().fresh('rewrap'));
      const update = `UPDATE "${table}_out" SET note = $1 FROM fence WHERE id = $2 RETURNING id`;
      expect(await store.fencedStatement(lease, update, ['x', 404])).toMatchObject({ ok: true, rowCount: 0 });
      const before = counting.sent.length;
      await expect(store.fencedStatement(lease, update, ['x'])).rejects.toThrow(/\$2/);
      expect(counting.sent.length).toBe(before);
      expect(await store.fencedStatement(lease, update, ['y', 405])).toMatchObject({ ok: true, rowCount: 0 });
    });

    /** A fresh lease table whose claim function, once `sabotage()` ran, fails every call of it. */
    const sabotagedTable = async (): Promise<{ table: string; sabotage(): Promise<void> }> => {
      const table = freshTable('lf_claim_path');
      await createPostgresStore({ client: ctx().opened.client, table }).migrate();
      return {
        table,
        sabotage: async () =>
          void (await ctx().opened.client.query(
            `CREATE OR REPLACE FUNCTION "${table}_try_claim"(p_key text, p_holder text, p_run_id text, p_secret text, p_ttl_ms bigint, p_attributes jsonb, p_recovering boolean, p_expect jsonb, p_absent text[],
               p_waiters jsonb, p_queue_ttl_ms bigint, p_jump boolean)
             RETURNS text LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'claim function called'; END $$`,
          )),
      };
    };

    it.runIf(kind !== 'pglite')(
      'with prepared statements, a claim of a key whose row exists never enters plpgsql: only a first claim calls the claim function',
      async () => {
        const { table, sabotage } = await sabotagedTable();
        const store = createPostgresStore({ client: ctx().opened.client, table });
        const a = createLeases(store, { holder: 'a', ttlMs: 60_000 });
        const b = createLeases(store, { holder: 'b', ttlMs: 60_000 });
        const key = 'existing';
        const first = await a.claimOrThrow(key, { runId: 'r1' });
        await a.checkpointOrThrow(first, { step: 1 });
        await sabotage();
        expect(await b.claim(key)).toMatchObject({ ok: false, reason: 'held', token: first.token, holder: 'a', runId: 'r1' });
        // NOTE: the same holder and run are told their run already holds it (decided from the same held answer).
        expect(await a.claim(key, { runId: 'r1' })).toMatchObject({ ok: false, reason: 'run-already-acquired', token: first.token });
        await a.revoke(key, { reason: 'fast path', requireRecovery: true });
        expect(await b.claim(key)).toMatchObject({ ok: false, reason: 'recovery-required', token: first.token + 1n });
        const recovered = await b.claimOrThrow(key, { recovering: true });
        expect(recovered.token > first.token + 1n).toBe(true);
        await b.recover(recovered, 'resume');
        await b.release(recovered);
        const next = await a.claim(key);
        expect(next).toMatchObject({
          ok: true,
          previous: { kind: 'released', token: recovered.token, holder: 'b' },
          checkpoint: { value: { step: 1 }, token: recovered.token },
        });
        await expect(a.claim('new key')).rejects.toThrow(/claim function called/);
      },
    );

    it('without prepared statements, every claim is one call of the claim function (plpgsql keeps its plans)', async () => {
      const { table, sabotage } = await sabotagedTable();
      const store = createPostgresStore({ client: ctx().opened.client, table, prepare: false });
      const a = createLeases(store, { holder: 'a', ttlMs: 60_000 });
      const lease = await a.claimOrThrow('existing');
      await a.release(lease);
      await sabotage();
      await expect(a.claim('existing')).rejects.toThrow(/claim function called/);
    });

    it('keys, holders, runs, attributes and reasons full of SQL metacharacters are stored verbatim and inject nothing', async () => {
      const nasty = [
        `'); DROP TABLE "${ctx().table}"; --`,
        `$1 $2 \\'\\\\`,
        `" OR 1=1 --`,
        `key\nwith\tcontrol\u0001chars`,
        `ключ 🔑 ${'x'.repeat(1000)}`,
      ];
      for (const [index, key] of nasty.entries()) {
        const leases = ctx().leasesFor(nasty[(index + 1) % nasty.length]!);
        const lease = await leases.claimOrThrow(key, {
          runId: nasty[(index + 2) % nasty.length]!,
          attributes: { [nasty[index]!]: nasty[(index + 3) % nasty.length]! },
        });
        await leases.checkpointOrThrow(lease, { note: key }, { attributes: { [nasty[index]!]: nasty[(index + 3) % nasty.length]! } });
        const seen = await leases.inspect(key);
        expect(seen).toMatchObject({
          key,
          token: lease.token,
          grant: { holder: leases.holder, runId: lease.runId, attributes: lease.attributes },
          checkpoint: { value: { note: key } },
        });
        await leases.revoke(key, { reason: key, by: key });
        expect((await leases.inspect(key)).ending).toMatchObject({ kind: 'revoked', reason: key, by: key });
      }
      expect((await ctx().leasesFor('x').inspect(`'); DROP TABLE "${ctx().table}"; --`)).exists).toBe(true);
    });

    it('table names that are not identifiers are refused before any I/O; schema-qualified names work', async () => {
      for (const table of [`x"; DROP TABLE y; --`, 'a.b.c', '1abc', '', 'a-b', 'x'.repeat(49), 'public.'] as const) {
        expect(() => createPostgresStore({ client: ctx().counting.client, table })).toThrow(InvalidArgumentError);
      }
      expect(() => postgresLeaseSchemaSql(`leases"; DROP`)).toThrow(InvalidArgumentError);
      const qualified = createPostgresStore({ client: ctx().opened.client, table: `public.${freshTable('lf_qualified')}` });
      await qualified.migrate();
      const lease = await createLeases(qualified, { holder: 'q' }).claimOrThrow('k');
      expect((await createLeases(qualified, { holder: 'q' }).inspect('k')).grant?.token).toBe(lease.token);
    });

    it('an over-size checkpoint, a lone surrogate or a bad TTL is refused before any I/O and leaves the lease as it was', async () => {
      const leases = ctx().leasesFor('a');
      const key = ctx().fresh('bad');
      const lease = await leases.claimOrThrow(key);
      await leases.checkpointOrThrow(lease, { kept: true });
      const before = ctx().counting.sent.length;
      await expect(leases.checkpoint(lease, { blob: 'x'.repeat(5000) })).rejects.toThrow(InvalidArgumentError);
      await expect(leases.release(lease, { checkpoint: { blob: 'x'.repeat(5000) } })).rejects.toThrow(InvalidArgumentError);
      await expect(leases.claim('lone \uD800 surrogate')).rejects.toThrow(InvalidArgumentError);
      await expect(leases.claim(key, { attributes: { model: 'v\uDC00' } })).rejects.toThrow(InvalidArgumentError);
      await expect(leases.renew(lease, { ttlMs: -1 })).rejects.toThrow(InvalidArgumentError);
      expect(ctx().counting.sent.length).toBe(before);
      expect(await leases.inspect(key)).toMatchObject({
        token: lease.token,
        grant: { holder: 'a' },
        checkpoint: { value: { kept: true } },
      });
    });

    it('tokens past 2^53 round-trip exactly as bigint', async () => {
      const key = ctx().fresh('big');
      const leases = ctx().leasesFor('a');
      await leases.release(await leases.claimOrThrow(key));
      const high = 2n ** 53n + 5n;
      await ctx().opened.client.query(`UPDATE "${ctx().table}" SET token = $1::bigint, ending_token = $1::bigint WHERE key = $2`, [
        high.toString(),
        key,
      ]);
      const lease = await leases.claimOrThrow(key);
      expect(lease.token).toBe(high + 1n);
      await leases.checkpointOrThrow(lease, { step: 1 });
      expect(await leases.inspect(key)).toMatchObject({ token: high + 1n, checkpoint: { token: high + 1n }, ending: { token: high } });
      const forged = leases.restore({ ...lease.export(), token: (2n ** 63n - 1n).toString() });
      expect(await leases.renew(forged)).toMatchObject({ ok: false, reason: 'not-held' });
    });

    it("times come from the server's clock_timestamp(), in epoch milliseconds", async () => {
      const clock = async (): Promise<number> =>
        Number(
          (
            (await ctx().opened.client.query(`SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS ms`)).rows[0] as {
              ms: string;
            }
          ).ms,
        );
      const before = await clock();
      const lease = await ctx().leasesFor('a', 5_000).claimOrThrow(ctx().fresh('clock'));
      const after = await clock();
      expect(lease.acquiredAt).toBeGreaterThanOrEqual(before);
      expect(lease.acquiredAt).toBeLessThanOrEqual(after);
      expect(lease.expiresAt).toBe(lease.acquiredAt! + 5_000);
    });

    it.runIf(kind === 'pg-pool')(
      'refuses, with the fix, clients it cannot drive: a bare pg Client, a PoolClient, a transforming postgres.js',
      async () => {
        const url = await sharedPostgresUrl();
        const client = new pg.Client({ connectionString: url });
        const pool = new pg.Pool({ connectionString: url, max: 1 });
        const camel = postgres(url, { transform: postgres.camel, max: 1 });
        try {
          expect(() => createPostgresStore({ client: client as unknown as PostgresClient })).toThrow(/fromPgClient/);
          const pooled = await pool.connect();
          expect(() => createPostgresStore({ client: pooled as unknown as PostgresClient })).toThrow(/fromPgClient/);
          pooled.release();
          expect(() => fromPostgresJs(camel)).toThrow(/transform/);
          expect(() => createPostgresStore({ client: {} as PostgresClient })).toThrow(InvalidArgumentError);
        } finally {
          await pool.end();
          await camel.end({ timeout: 1 });
        }
      },
    );

    describePostgresGateSpecs(ctx, kind);
  });
  describePostgresRecordSpecs(clientTarget(kind));
}
