/**
 * Operator and function hijack (issue 9.1): a role that can create objects in a schema on the app's
 * search_path defines exact-match operators and functions (the types leasefence's statements used to
 * mix: bigint = numeric, double precision * integer, bigint * interval, text || bigint) and functions of
 * the names it calls, each recording that it ran. Every operation still works, and none of that code runs.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, createPostgresTokenGate } from '../../src/adapters/postgres/index.js';
import { createLeases } from '../../src/leases.js';
import { freshTable, sharedPostgresUrl } from './postgres-harness.js';

const HOSTILE = 'lf_hostile';

/** A hostile operator or function: records its call in lf_hostile.calls, then does what pg_catalog's would. */
const spy = (name: string, args: string, returns: string, body: string): string => `
CREATE FUNCTION ${HOSTILE}.${name}(${args}) RETURNS ${returns} LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  INSERT INTO ${HOSTILE}.calls (what) VALUES ('${name}(${args})');
  RETURN ${body};
END $$`;

const HOSTILE_DDL = [
  `DROP SCHEMA IF EXISTS ${HOSTILE} CASCADE`,
  `CREATE SCHEMA ${HOSTILE}`,
  `CREATE TABLE ${HOSTILE}.calls (what text)`,
  spy('eq_bigint_numeric', 'a bigint, b numeric', 'boolean', 'a::numeric OPERATOR(pg_catalog.=) b'),
  `CREATE OPERATOR ${HOSTILE}.= (LEFTARG = bigint, RIGHTARG = numeric, FUNCTION = ${HOSTILE}.eq_bigint_numeric)`,
  spy('mul_float_int', 'a double precision, b integer', 'double precision', 'a OPERATOR(pg_catalog.*) b::float8'),
  `CREATE OPERATOR ${HOSTILE}.* (LEFTARG = double precision, RIGHTARG = integer, FUNCTION = ${HOSTILE}.mul_float_int)`,
  spy('mul_bigint_interval', 'a bigint, b interval', 'interval', 'a::float8 OPERATOR(pg_catalog.*) b'),
  `CREATE OPERATOR ${HOSTILE}.* (LEFTARG = bigint, RIGHTARG = interval, FUNCTION = ${HOSTILE}.mul_bigint_interval)`,
  spy('cat_text_bigint', 'a text, b bigint', 'text', 'a OPERATOR(pg_catalog.||) b::text'),
  `CREATE OPERATOR ${HOSTILE}.|| (LEFTARG = text, RIGHTARG = bigint, FUNCTION = ${HOSTILE}.cat_text_bigint)`,
  spy('add_bigint_int', 'a bigint, b integer', 'bigint', 'a OPERATOR(pg_catalog.+) b::bigint'),
  `CREATE OPERATOR ${HOSTILE}.+ (LEFTARG = bigint, RIGHTARG = integer, FUNCTION = ${HOSTILE}.add_bigint_int)`,
  spy('round', 'a double precision', 'double precision', 'pg_catalog.round(a)'),
  spy('date_part', 'a text, b timestamp with time zone', 'double precision', 'pg_catalog.date_part(a, b)'),
  spy('date_trunc', 'a text, b timestamp with time zone', 'timestamp with time zone', 'pg_catalog.date_trunc(a, b)'),
  spy('clock_timestamp', '', 'timestamp with time zone', 'pg_catalog.clock_timestamp()'),
  spy('set_config', 'a text, b text, c boolean', 'text', 'pg_catalog.set_config(a, b, c)'),
  spy('current_setting', 'a text', 'text', 'pg_catalog.current_setting(a)'),
  spy('to_timestamp', 'a double precision', 'timestamp with time zone', 'pg_catalog.to_timestamp(a)'),
  spy('hashtext', 'a text', 'integer', 'pg_catalog.hashtext(a)'),
];

describe('postgres: a hostile schema first on the search_path', () => {
  let url: string;
  let admin: pg.Pool;
  let hostile: pg.Pool;
  beforeAll(async () => {
    url = await sharedPostgresUrl();
    admin = new pg.Pool({ connectionString: url, max: 2 });
    for (const statement of HOSTILE_DDL) await admin.query(statement);
    hostile = new pg.Pool({ connectionString: url, max: 4, options: `-c search_path=${HOSTILE},public` });
    hostile.on('error', () => undefined);
  });
  afterAll(async () => {
    await hostile?.end();
    await admin?.query(`DROP SCHEMA IF EXISTS ${HOSTILE} CASCADE`);
    await admin?.end();
  });

  it('every operation works and no hostile operator or function ever runs (schema-qualified table)', async () => {
    const table = `public.${freshTable('lf_hijack')}`;
    const bare = table.split('.')[1]!;
    // NOTE: a function of the claim function's name and exact signature, first on the path.
    await admin.query(
      spy(
        `${bare}_try_claim`,
        'p_key text, p_holder text, p_run_id text, p_secret text, p_ttl_ms bigint, p_attributes jsonb, p_recovering boolean',
        'text',
        "'[0, false]'",
      ),
    );
    const store = createPostgresStore({ client: hostile, table });
    await store.migrate();
    await hostile.query(`CREATE TABLE public."${bare}_out" (id serial PRIMARY KEY, key text NOT NULL, token bigint NOT NULL)`);
    const a = createLeases(store, { holder: 'a', ttlMs: 60_000 });
    const b = createLeases(store, { holder: 'b', ttlMs: 60_000 });
    const lease = await a.claimOrThrow('k');
    expect((await b.claim('k')).ok).toBe(false);
    await a.renewOrThrow(lease);
    await a.checkpointOrThrow(lease, { step: 1 });
    await a.fencedWriteOrThrow(
      lease,
      (tx) => tx.query(`INSERT INTO public."${bare}_out" (key, token) VALUES ($1, $2)`, [lease.key, tx.token.toString()]),
      { checkpoint: { step: 2 } },
    );
    const statement = await store.fencedStatement(
      lease,
      `INSERT INTO public."${bare}_out" (key, token) SELECT fence.key, fence.token FROM fence RETURNING 1`,
    );
    expect(statement.ok).toBe(true);
    await a.inspect('k');
    await a.revoke('k', { reason: 'drill', requireRecovery: true });
    const recovering = await b.claimOrThrow('k', { recovering: true });
    await b.recover(recovering, 'resume');
    expect((await b.release(recovering)).ok).toBe(true);
    expect((await a.claim('k2')).ok).toBe(true);
    const gate = createPostgresTokenGate({ client: hostile, table: `public.${freshTable('lf_hijack_gate')}`, leaseTable: table });
    await gate.migrate();
    const fresh = await a.claimOrThrow('k3');
    expect((await gate.write('report', fresh.fence(), () => 1)).ok).toBe(true);
    expect((await admin.query(`SELECT what FROM ${HOSTILE}.calls`)).rows).toEqual([]);
  });
});
