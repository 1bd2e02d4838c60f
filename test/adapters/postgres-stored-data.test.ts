/**
 * What Postgres keeps and hands back (issue 9.8, 9.10): a stored checkpoint that is not valid JSON does not
 * brick its key (it reads as an inspectable marker an operator can clear), and a claim refused because the
 * key is held does not carry the checkpoint back to every poller.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresClient, type PostgresStore } from '../../src/adapters/postgres/index.js';
import { createLeases } from '../../src/leases.js';
import { freshTable, sharedPostgresUrl } from './postgres-harness.js';

describe('postgres: stored data (pg Pool)', () => {
  let pool: pg.Pool;
  let table: string;
  let store: PostgresStore;
  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: await sharedPostgresUrl(), max: 4 });
    pool.on('error', () => undefined);
    table = freshTable('lf_stored');
    store = createPostgresStore({ client: pool, table });
    await store.migrate();
  });
  afterAll(async () => {
    await pool?.end();
  });

  it('a checkpoint that is not valid JSON reads as an unreadable-checkpoint marker in inspect and claim, and an operator can clear it', async () => {
    const [a, b] = [createLeases(store, { holder: 'a', ttlMs: 60_000 }), createLeases(store, { holder: 'b', ttlMs: 60_000 })];
    const first = await a.claimOrThrow('damaged');
    await a.checkpointOrThrow(first, { step: 1 });
    await pool.query(`UPDATE "${table}" SET checkpoint_json = '{"step": 1' WHERE key = 'damaged'`);
    const inspection = await a.inspect('damaged');
    expect(inspection.checkpoint?.value).toEqual({
      'leasefence:unreadable-checkpoint': true,
      reason: 'the stored checkpoint is not valid JSON',
      length: 10,
    });
    await a.revoke('damaged', { reason: 'damaged checkpoint' });
    const second = await b.claim('damaged');
    expect(second.ok).toBe(true);
    if (!second.ok) return;
    expect(second.checkpoint?.value).toMatchObject({ 'leasefence:unreadable-checkpoint': true });
    expect((await b.release(second.lease, { checkpoint: null })).ok).toBe(true);
    expect((await b.inspect('damaged')).checkpoint).toBeNull();
  });

  it.each([true, false])(
    'a claim refused because the key is held does not carry the checkpoint back; a re-delivered claim and a takeover do (prepared: %s)',
    async (prepare) => {
      const results: string[] = [];
      const client: PostgresClient = {
        acceptsNamedStatements: true,
        query: async (text, params) => {
          const result = await pool.query(text as never, params as never);
          results.push(JSON.stringify(result.rows));
          return result;
        },
      };
      const observed = createPostgresStore({ client, table, prepare });
      const [a, b] = [
        createLeases(observed, { holder: 'a', ttlMs: 60_000 }),
        createLeases(observed, { holder: 'b', ttlMs: 60_000, maxCheckpointBytes: 100_000 }),
      ];
      const lease = await b.claimOrThrow(`big:${prepare}`);
      await b.checkpointOrThrow(lease, { blob: 'x'.repeat(50_000) });
      results.length = 0;
      expect((await a.claim(`big:${prepare}`)).ok).toBe(false);
      expect(results.join('').length).toBeLessThan(2_000);
      const again = await observed.claim({
        key: `big:${prepare}`,
        holder: 'b',
        runId: null,
        secret: lease.fence().secret,
        ttlMs: 60_000,
        attributes: {},
        recovering: false,
      });
      expect(again.ok && again.checkpoint?.json.length).toBeGreaterThan(50_000);
      await b.release(lease);
      const taken = await a.claim(`big:${prepare}`);
      expect(taken.ok && JSON.stringify(taken.checkpoint?.value).length).toBeGreaterThan(50_000);
    },
  );
});
