/**
 * Token gates in Postgres, per client: the gate table (`createPostgresTokenGate`, the TokenGate contract)
 * and the one-statement `gatedUpsert` on a table the user owns.
 */
import { describe, expect, it } from 'vitest';
import { createPostgresTokenGate, gatedUpsert, type PostgresTokenGate } from '../../src/adapters/postgres/index.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { describeGateResetSpecs } from './gate-reset-specs.js';
import { freshTable, type PostgresClientKind } from './postgres-harness.js';
import type { PostgresSpecContext } from './postgres-specs.js';

export function describePostgresGateSpecs(ctx: () => PostgresSpecContext, kind: PostgresClientKind): void {
  describe('token gates', () => {
    it('the gate table refuses an older token and another key atomically, and runs the callback only when it passes', async () => {
      const { opened } = ctx();
      const gateTable = freshTable('lf_gate');
      const gate = createPostgresTokenGate({ client: opened.client, table: gateTable, leaseTable: null });
      await gate.migrate();
      await gate.migrate();
      const notes = `"${gateTable}_notes"`;
      await opened.client.query(`CREATE TABLE ${notes} (token bigint NOT NULL, note text NOT NULL)`);
      const write = (key: string, token: bigint, note: string) =>
        gate.write('report', { key, token } as never, async (tx) => {
          await tx.query(`INSERT INTO ${notes} (token, note) VALUES ($1, $2)`, [tx.token.toString(), note]);
          return note;
        });
      expect(await write('job', 5n, 'five')).toEqual({ ok: true, value: 'five', token: 5n });
      expect(await write('job', 5n, 'five again')).toEqual({ ok: true, value: 'five again', token: 5n });
      expect(await write('job', 4n, 'four')).toEqual({
        ok: false,
        reason: 'stale-token',
        resource: 'report',
        expected: { key: 'job', token: 4n },
        found: { key: 'job', token: 5n },
      });
      expect(await write('other', 9n, 'other')).toMatchObject({ ok: false, reason: 'key-mismatch', found: { key: 'job', token: 5n } });
      expect(await write('job', 7n, 'seven')).toMatchObject({ ok: true, token: 7n });
      await expect(
        write('job', 8n, 'x'.repeat(10)).then(() =>
          gate.write('report', { key: 'job', token: 9n } as never, () => Promise.reject(new Error('boom'))),
        ),
      ).rejects.toThrow('boom');
      // NOTE: the failed write's transaction rolled back, so the gate still records token 8, not 9.
      expect(await write('job', 8n, 'eight again')).toMatchObject({ ok: true, token: 8n });
      const { rows } = await opened.client.query(`SELECT note FROM ${notes} ORDER BY token, note`);
      expect((rows as Array<{ note: string }>).map((row) => row.note)).toEqual([
        'five',
        'five again',
        'seven',
        'eight again',
        'xxxxxxxxxx',
      ]);
    });

    it('with the lease table (the default), a forged handle (huge token, wrong secret) is refused by the fence and leaves the gate as it was; inspect and reset re-key a resource', async () => {
      const { opened, table } = ctx();
      const gate = createPostgresTokenGate({ client: opened.client, table: freshTable('lf_fgate'), leaseTable: table });
      await gate.migrate();
      const key = ctx().fresh('gated');
      const a = ctx().leasesFor('a');
      const lease = await a.claimOrThrow(key);
      const real = lease.fence();
      expect(await gate.write('report', real, (tx) => tx.token)).toEqual({ ok: true, value: lease.token, token: lease.token });
      let ran = false;
      const forged = { ...real, token: 2n ** 62n, secret: 'f'.repeat(32) };
      const refused = await gate.write('report', forged, () => (ran = true));
      // NOTE: the core's verdict on a token the store never issued; what matters is the fence refused it.
      expect(refused.ok).toBe(false);
      expect('resource' in refused).toBe(false);
      const wrongSecret = await gate.write('report', { ...real, secret: 'f'.repeat(32) }, () => (ran = true));
      expect(wrongSecret).toMatchObject({ ok: false, reason: 'wrong-secret' });
      expect(ran).toBe(false);
      expect(await gate.inspect('report')).toEqual({ resource: 'report', found: { key, token: lease.token } });
      expect(await gate.write('report', real, () => 'still')).toMatchObject({ ok: true, value: 'still' });
      await expect(gate.write('report', { key, token: lease.token }, () => 1)).rejects.toThrow(InvalidArgumentError);
      await a.release(lease);
      expect(await gate.write('report', real, () => 'released')).toMatchObject({ ok: false, reason: 'released' });
      const other = ctx().fresh('gated-other');
      const otherLease = await a.claimOrThrow(other);
      expect(await gate.write('report', otherLease.fence(), () => 1)).toMatchObject({ ok: false, reason: 'key-mismatch' });
      expect(await gate.reset('report')).toEqual({ ok: true, resource: 'report', found: { key, token: lease.token } });
      expect(await gate.inspect('report')).toEqual({ resource: 'report', found: null });
      expect(await gate.write('report', otherLease.fence(), () => 'rekeyed')).toMatchObject({ ok: true, value: 'rekeyed' });
      expect(await gate.inspect('report')).toEqual({ resource: 'report', found: { key: other, token: otherLease.token } });
    });

    let resetGate: PostgresTokenGate | undefined;
    describeGateResetSpecs(
      async () => {
        const { counting } = ctx();
        if (resetGate === undefined) {
          resetGate = createPostgresTokenGate({ client: counting.client, table: freshTable('lf_rgate'), leaseTable: null });
          await resetGate.migrate();
        }
        const gate = resetGate;
        return {
          gate,
          write: async (resource, key, token) => (await gate.write(resource, { key, token }, () => undefined)).ok,
          sentDuring: (run) => counting.statementsDuring(run),
        };
      },
      { raceRuns: 30 },
    );

    // NOTE: one connection (pg Client) or one in-process database (PGlite) cannot run the two at once.
    it.runIf(kind === 'pg-pool' || kind === 'postgresjs')(
      'a reset arriving while a newer gate write holds the row waits for it, then judges the row as committed: superseded, with the newer token found (pools: real concurrency)',
      async () => {
        const { opened } = ctx();
        const gateTable = freshTable('lf_rgate_lock');
        const gate = createPostgresTokenGate({ client: opened.client, table: gateTable, leaseTable: null });
        await gate.migrate();
        expect(await gate.write('report', { key: 'job', token: 5n }, () => undefined)).toMatchObject({ ok: true });
        let reset: ReturnType<typeof gate.reset> | undefined;
        const written = await gate.write('report', { key: 'job', token: 6n }, async () => {
          // The operator saw token 5; its reset arrives while token 6 is written but not yet committed.
          reset = gate.reset('report', { expectedToken: 5n, expectedKey: 'job' });
          const deadline = Date.now() + 10_000;
          for (;;) {
            const { rows } = await opened.client.query(
              `SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
              [`%${gateTable}%`],
            );
            if ((rows[0] as { waiting: number } | undefined)?.waiting === 1) break;
            if (Date.now() > deadline) throw new Error('the reset never waited for the gate row');
            await new Promise((wait) => setTimeout(wait, 20));
          }
        });
        expect(written).toMatchObject({ ok: true, token: 6n });
        expect(await reset).toEqual({
          ok: false,
          reason: 'superseded',
          resource: 'report',
          expected: { key: 'job', token: 5n },
          found: { key: 'job', token: 6n },
        });
        expect(await gate.inspect('report')).toEqual({ resource: 'report', found: { key: 'job', token: 6n } });
      },
    );

    it('gatedUpsert records the lease key and token on the row and refuses an older token without touching the row', async () => {
      const { opened } = ctx();
      const table = freshTable('lf_reports');
      await opened.client.query(
        `CREATE TABLE "${table}" (id int, part text, body text, fence_key text, fence_token bigint, PRIMARY KEY (id, part))`,
      );
      const upsert = (token: bigint, body: string, key = 'report:1') =>
        gatedUpsert(opened.client, { table, identity: { id: 1, part: 'a' }, values: { body }, lease: { key, token }, leaseTable: null });
      expect(await upsert(3n, 'three')).toEqual({ ok: true, value: { inserted: true }, token: 3n });
      expect(await upsert(3n, 'three again')).toEqual({ ok: true, value: { inserted: false }, token: 3n });
      expect(await upsert(2n, 'two')).toEqual({
        ok: false,
        reason: 'stale-token',
        resource: `${table}(id=1, part=a)`,
        expected: { key: 'report:1', token: 2n },
        found: { key: 'report:1', token: 3n },
      });
      expect(await upsert(9n, 'other key', 'report:2')).toMatchObject({
        ok: false,
        reason: 'key-mismatch',
        found: { key: 'report:1', token: 3n },
      });
      expect(await upsert(4n, 'four')).toMatchObject({ ok: true, value: { inserted: false } });
      const { rows } = await opened.client.query(
        `SELECT body, fence_key, fence_token::text AS token, xmin::text AS version FROM "${table}"`,
      );
      expect(rows).toEqual([{ body: 'four', fence_key: 'report:1', token: '4', version: expect.any(String) }]);
      const version = (rows[0] as { version: string }).version;
      await upsert(1n, 'stale');
      const after = await opened.client.query(`SELECT xmin::text AS version FROM "${table}"`);
      expect((after.rows[0] as { version: string }).version).toBe(version);
    });

    it('gatedUpsert with the lease table (the default) checks the full fence in the same statement: a forged or released handle writes nothing', async () => {
      const { opened, table: leaseTable } = ctx();
      const table = freshTable('lf_freports');
      await opened.client.query(`CREATE TABLE "${table}" (id int PRIMARY KEY, body text, fence_key text, fence_token bigint)`);
      const a = ctx().leasesFor('a');
      const lease = await a.claimOrThrow(ctx().fresh('upsert'));
      const upsert = (body: string, handle: Parameters<typeof gatedUpsert>[1]['lease']) =>
        gatedUpsert(opened.client, { table, identity: { id: 1 }, values: { body }, lease: handle, leaseTable });
      expect(await upsert('real', lease)).toEqual({ ok: true, value: { inserted: true }, token: lease.token });
      const forged = { ...lease.fence(), token: 2n ** 62n, secret: 'f'.repeat(32) };
      expect((await upsert('forged', forged)).ok).toBe(false);
      expect(await upsert('wrong secret', { ...lease.fence(), secret: 'f'.repeat(32) })).toMatchObject({
        ok: false,
        reason: 'wrong-secret',
      });
      await expect(upsert('token only', { key: lease.key, token: lease.token })).rejects.toThrow(InvalidArgumentError);
      await a.release(lease);
      expect(await upsert('released', lease)).toMatchObject({ ok: false, reason: 'released' });
      const { rows } = await opened.client.query(`SELECT body, fence_token::text AS token FROM "${table}"`);
      expect(rows).toEqual([{ body: 'real', token: String(lease.token) }]);
    });

    it('gatedUpsert refuses names that are not identifiers before any I/O', async () => {
      const { counting } = ctx();
      const before = counting.sent.length;
      const lease = { key: 'k', token: 1n };
      await expect(gatedUpsert(counting.client, { table: 'r; DROP TABLE x', identity: { id: 1 }, values: {}, lease })).rejects.toThrow(
        InvalidArgumentError,
      );
      await expect(gatedUpsert(counting.client, { table: 'r', identity: { 'id" = 1 OR "1': 1 }, values: {}, lease })).rejects.toThrow(
        InvalidArgumentError,
      );
      await expect(gatedUpsert(counting.client, { table: 'r', identity: { id: 1 }, values: { 'body"': 1 }, lease })).rejects.toThrow(
        InvalidArgumentError,
      );
      await expect(
        gatedUpsert(counting.client, { table: 'r', identity: { id: 1 }, values: {}, lease, tokenColumn: 'x y' }),
      ).rejects.toThrow(InvalidArgumentError);
      expect(counting.sent.length).toBe(before);
    });
  });
}
