/**
 * A Postgres listing page costs O(limit): its one statement is an index range scan that reads at most
 * `limit` rows of the lease table, however large the table and wherever the cursor is.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/adapters/postgres/index.js';
import { listStatement } from '../../src/adapters/postgres/list.js';
import { tableName } from '../../src/adapters/postgres/identifier.js';
import { createOperator } from '../../src/operator.js';
import { freshTable, sharedPostgresUrl } from '../adapters/postgres-harness.js';

interface PlanNode {
  readonly 'Node Type': string;
  readonly 'Relation Name'?: string;
  readonly 'Actual Rows': number;
  readonly Plans?: readonly PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

describe('list: postgres cost', () => {
  let pool: pg.Pool;
  const table = freshTable('lcost');
  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: await sharedPostgresUrl(), max: 2 });
    await createPostgresStore({ client: pool, table }).migrate();
    await pool.query(
      `INSERT INTO ${table} (key, token, state) SELECT 'job:' || lpad(i::text, 6, '0'), 1, '{}' FROM generate_series(1, 20000) AS i`,
    );
    await pool.query(`INSERT INTO ${table} (key, token, state) SELECT 'other:' || i, 1, '{}' FROM generate_series(1, 5000) AS i`);
    await pool.query(`ANALYZE ${table}`);
  });
  afterAll(async () => pool.end());

  it('reads at most `limit` rows per page, through the key index, from any cursor', async () => {
    for (const [cursor, prefix] of [
      ['', ''],
      ['job:010000', 'job:'],
      ['', 'other:'],
      ['job:019990', 'job:'],
    ] as const) {
      const { rows } = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${listStatement(tableName(table))}`,
        [cursor, prefix, 50],
      );
      const nodes = nodesOf(rows[0]!['QUERY PLAN'][0].Plan);
      const scans = nodes.filter((node) => node['Relation Name'] === table);
      expect(scans.map((node) => node['Node Type'])).toEqual(['Index Scan']);
      expect(scans[0]!['Actual Rows']).toBeLessThanOrEqual(50);
    }
  });

  it('ends a prefix listing at the first key past the prefix (code-point collation)', async () => {
    const operator = createOperator(createPostgresStore({ client: pool, table }));
    const page = await operator.list({ prefix: 'job:01999', limit: 20 });
    expect(page.leases.map((lease) => lease.key)).toEqual(Array.from({ length: 10 }, (_, i) => `job:01999${i}`));
    expect(page.cursor).toBeNull();
  });
});
