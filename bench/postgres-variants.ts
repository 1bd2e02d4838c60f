/**
 * Server CPU per claim + release of statement variants, side by side: each variant runs its claim and
 * release as prepared statements on a connection of its own (one backend, its CPU read from
 * `/proc/<pid>/sched`), in interleaved rounds, fsync off (the CPU, not the disk). The store's statements,
 * the raw single-statement baseline, and the counterfactual texts below.
 *
 *   npx tsx bench/postgres-variants.ts     (BENCH_N=150 cycles per variant per round, 21 rounds, medians)
 *   BENCH_COMPARE=/tmp/before/src BENCH_VARIANTS=0 npx tsx bench/postgres-variants.ts   (this checkout's
 *     statements against another checkout's, e.g. `git archive main src | tar -x -C /tmp/before`)
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { tableName } from '../src/adapters/postgres/identifier.js';
import { claimPreImageJson, decodePreImage, epochMs, NOW, preImageJson } from '../src/adapters/postgres/rows.js';
import { claimable, claimFunction, claimSet, type ClaimTerms } from '../src/adapters/postgres/claim-rule.js';
import { freedChannelOf } from '../src/adapters/postgres/freed-channel.js';
import { fenceHolds } from '../src/adapters/postgres/statements.js';
import { secretHash } from '../src/adapters/postgres/secret-hash.js';
import { leaseStatements } from '../src/adapters/postgres/statements.js';
import { tokenFloorAt } from '../src/adapters/postgres/token-floor.js';
import { createPostgresStore } from '../src/adapters/postgres/index.js';
import { mintToken } from '../src/fence/token.js';
import { startPostgres } from '../test/support/postgres-server.js';
import { runtimeNs } from './postgres-probes.js';
import { RAW_CLAIM, RAW_RELEASE, RAW_SCHEMA } from './postgres-raw.js';

const N = Number(process.env['BENCH_N'] ?? 150);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 21);
const TTL_MS = 600_000;

interface Variant {
  readonly name: string;
  /** One claim + release on `client` for `key`. */
  cycle(client: pg.Client, key: string): Promise<void>;
}

const SECRET = secretHash('bench-secret');

/** The store's release parameters after a claim of `key` whose reply was `r`. */
function releaseParams(key: string, r: unknown): unknown[] {
  const { now, record } = decodePreImage(r, 'bench-secret');
  const token = mintToken(record?.token ?? 0n, tokenFloorAt(now));
  return [key, token.toString(), SECRET, 'bench', null, '{}', 'keep', null];
}

/** A leasefence-shaped variant: `claim` and `release` texts with the store's parameters. */
function leasefence(name: string, claim: string, release: string): Variant {
  // NOTE: prepared statement names are cut at 63 bytes by Postgres; the variants' names are longer.
  const id = createHash('sha1').update(name).digest('hex').slice(0, 16);
  return {
    name,
    async cycle(client, key) {
      const { rows } = await client.query({ name: `${id}-c`, text: claim, values: [key, 'bench', null, SECRET, TTL_MS, '{}', false] });
      const reply = await client.query({ name: `${id}-r`, text: release, values: releaseParams(key, (rows[0] as { r: unknown }).r) });
      if (reply.rows.length !== 1) throw new Error(`${name}: release returned ${reply.rows.length} rows`);
    },
  };
}

const raw: Variant = {
  name: 'raw single-statement claim/release',
  async cycle(client, key) {
    const { rows } = await client.query<{ token: string }>({ name: 'raw-c', text: RAW_CLAIM, values: [key, 'bench', TTL_MS] });
    await client.query({ name: 'raw-r', text: RAW_RELEASE, values: [key, 'bench', rows[0]?.token] });
  },
};

async function main(): Promise<void> {
  const server = await startPostgres({ settings: { fsync: 'off' } });
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  const clients: pg.Client[] = [];
  try {
    const migrating = new pg.Pool({ connectionString: server.url, max: 1 });
    await createPostgresStore({ client: migrating }).migrate();
    await migrating.end();
    for (const statement of RAW_SCHEMA) await admin.query(statement);
    if (process.env['BENCH_VARIANTS'] !== '0') for (const statement of FUNCTION_VARIANTS_DDL) await admin.query(statement);
    const sql = leaseStatements(tableName('leasefence_leases'));
    const variants: Variant[] = [raw, leasefence('leasefence (this checkout)', sql.claim, sql.release)];
    const compare = process.env['BENCH_COMPARE'];
    if (compare !== undefined) {
      const other = (await import(`${compare}/adapters/postgres/statements.ts`)) as { leaseStatements: typeof leaseStatements };
      const before = other.leaseStatements(tableName('leasefence_leases'));
      variants.push(leasefence(`leasefence (${compare})`, before.claim, before.release));
    }
    if (process.env['BENCH_VARIANTS'] !== '0') variants.push(...extraVariants(sql));
    const cpu = new Map<string, number[]>(variants.map((variant) => [variant.name, []]));
    const opened = await Promise.all(
      variants.map(async (variant) => {
        const client = new pg.Client({ connectionString: server.url });
        clients.push(client);
        await client.connect();
        await client.query('INSERT INTO leasefence_leases (key, token) VALUES ($1, 1) ON CONFLICT DO NOTHING', [`v:${variant.name}`]);
        const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? 0;
        for (let i = 0; i < 50; i += 1) await variant.cycle(client, `v:${variant.name}`);
        return { variant, client, pid };
      }),
    );
    for (let round = 0; round < ROUNDS; round += 1) {
      const shift = round % opened.length;
      const order = [...opened.slice(shift), ...opened.slice(0, shift)];
      for (const { variant, client, pid } of round % 2 === 0 ? order : order.reverse()) {
        const before = runtimeNs(pid);
        for (let i = 0; i < N; i += 1) await variant.cycle(client, `v:${variant.name}`);
        cpu.get(variant.name)?.push((runtimeNs(pid) - before) / 1000 / N);
      }
    }
    for (const { variant, client } of opened) {
      const { rows } = await client.query<{ name: string; generic_plans: string; custom_plans: string }>(
        'SELECT name, generic_plans, custom_plans FROM pg_catalog.pg_prepared_statements',
      );
      console.log(
        `${variant.name}: ${rows.map((row) => `${row.name} generic ${row.generic_plans} custom ${row.custom_plans}`).join('; ')}`,
      );
    }
    const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
    const rawUs = cpu.get(raw.name) ?? [];
    const storeUs = cpu.get(variants[1]?.name ?? '') ?? [];
    const ratio = (values: number[], to: number[]): string =>
      median(values.map((value, round) => value / (to[round] ?? Number.NaN))).toFixed(2);
    console.log(
      `| variant | server CPU µs per claim + release (median of rounds) | ÷ raw (median of per-round ratios) | ÷ ${variants[1]?.name} |\n|---|---:|---:|---:|`,
    );
    for (const variant of variants) {
      const us = cpu.get(variant.name) ?? [];
      console.log(`| ${variant.name} | ${median(us).toFixed(1)} | ${ratio(us, rawUs)} | ${ratio(us, storeUs)} |`);
    }
  } finally {
    for (const client of clients) await client.end();
    await admin.end();
    await server.stop();
  }
}

/** Lower bounds: the same row changes as one plain UPDATE each, without lock-then-decide or pre-image. */
const LOWER_CLAIM = `UPDATE leasefence_leases SET token = token + 1, holder = $2, run_id = $3, secret_hash = $4, acquired_at = clock_timestamp(),
  expires_at = clock_timestamp() + ($5::float8 * '1 millisecond'::interval), attributes = $6::jsonb
WHERE key = $1 AND (holder IS NULL OR expires_at <= clock_timestamp()) AND (NOT recovery_required OR $7::boolean)
RETURNING pg_catalog.json_build_array(0, true, key, (token - 1)::text)::text AS r`;
const LOWER_RELEASE = `UPDATE leasefence_leases SET holder = NULL, run_id = NULL, secret_hash = NULL, acquired_at = NULL, expires_at = NULL, attributes = NULL,
  ending_kind = 'released', ending_token = token, ending_holder = holder, ending_run_id = run_id, ending_at = clock_timestamp()
WHERE key = $1 AND token = $2::bigint AND secret_hash = $3 AND holder = $4 AND run_id IS NOT DISTINCT FROM $5 AND attributes @> $6::jsonb AND expires_at > clock_timestamp() AND $7::text IS NOT NULL AND $8::text IS NULL
RETURNING 1 AS r`;

/** The claim function's terms (schema.ts), for the lean claim function below. */
const FUNCTION_TERMS: ClaimTerms = {
  now: 'now_at',
  holder: 'p_holder',
  runId: 'p_run_id',
  secret: 'p_secret',
  ttlMs: 'p_ttl_ms',
  attributes: 'p_attributes',
  recovering: 'p_recovering',
  expectValues: 'NULL::jsonb',
  expectAbsent: 'NULL::text[]',
};
const RELEASE_PARAMS = ['p_key', 'p_token', 'p_secret', 'p_holder', 'p_run_id', 'p_attrs'];

/**
 * Item 2 of round three: the same decisions as plpgsql functions, whose statements keep their plans for the
 * session and whose simple expressions skip the executor. The lean claim: one SELECT ... FOR NO KEY
 * UPDATE by key, decide, one UPDATE by key (a missing row goes to the store's claim function). The
 * release: the same, returning the pre-image, or only now and applied (`short`) when it applied.
 */
function releaseFunctionDdl(name: string, short: boolean): string {
  const holds = fenceHolds((index) => RELEASE_PARAMS[index - 1] ?? 'NULL', 'now_at');
  const preImage = preImageJson('fence', 'pre.', 'now_at', 'applied', 'p_secret');
  return `CREATE OR REPLACE FUNCTION ${name}(p_key text, p_token text, p_secret text, p_holder text, p_run_id text, p_attrs text, p_mode text, p_json text)
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE pre leasefence_leases; now_at timestamptz; applied boolean := false;
BEGIN
  SELECT * INTO pre FROM leasefence_leases AS l WHERE l.key = p_key FOR NO KEY UPDATE;
  now_at := ${NOW};
  IF FOUND AND ${holds} THEN
    UPDATE leasefence_leases AS l SET holder = NULL, run_id = NULL, secret_hash = NULL, acquired_at = NULL, expires_at = NULL, attributes = NULL,
      ending_kind = 'released', ending_token = pre.token, ending_holder = pre.holder, ending_run_id = pre.run_id,
      ending_at = now_at, ending_reason = NULL, ending_by = NULL,
      checkpoint_json = CASE p_mode WHEN 'keep' THEN l.checkpoint_json WHEN 'clear' THEN NULL ELSE p_json END,
      checkpoint_token = CASE p_mode WHEN 'keep' THEN l.checkpoint_token WHEN 'clear' THEN NULL ELSE pre.token END,
      checkpoint_written_at = CASE p_mode WHEN 'keep' THEN l.checkpoint_written_at WHEN 'clear' THEN NULL ELSE now_at END,
      recovery_required = CASE p_mode WHEN 'keep' THEN l.recovery_required ELSE false END
    WHERE l.key = p_key;
    applied := true;
    IF pre.waited_until > now_at THEN
      PERFORM pg_catalog.pg_notify('${freedChannelOf(tableName('leasefence_leases'))}', p_key);
    END IF;
    ${short ? `RETURN pg_catalog.json_build_array(${epochMs('now_at')}, true)::text;` : ''}
  END IF;
  RETURN ${preImage};
END
$fn$`;
}

const LEAN_CLAIM_DDL = `CREATE OR REPLACE FUNCTION bench_lean_claim(
  p_key text, p_holder text, p_run_id text, p_secret text, p_ttl_ms bigint, p_attributes jsonb, p_recovering boolean)
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE pre leasefence_leases; now_at timestamptz; applied boolean := false;
BEGIN
  SELECT * INTO pre FROM leasefence_leases AS l WHERE l.key = p_key FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RETURN ${claimFunction(tableName('leasefence_leases'))}(p_key, p_holder, p_run_id, p_secret, p_ttl_ms, p_attributes, p_recovering, NULL, NULL);
  END IF;
  now_at := ${NOW};
  IF ${claimable(FUNCTION_TERMS)} THEN
    UPDATE leasefence_leases AS l SET ${claimSet(FUNCTION_TERMS, 'NULL::bigint')} WHERE l.key = p_key;
    applied := true;
  END IF;
  RETURN ${claimPreImageJson('pre.', 'now_at', 'applied', 'p_secret', 'NULL::bigint')};
END
$fn$`;

const FUNCTION_VARIANTS_DDL = [releaseFunctionDdl('bench_release', false), releaseFunctionDdl('bench_short_release', true), LEAN_CLAIM_DDL];
const RELEASE_CALL = `SELECT bench_release($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text) AS r`;
const SHORT_RELEASE_CALL = `SELECT bench_short_release($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text) AS r`;
const LEAN_CLAIM_CALL = `SELECT bench_lean_claim($1::text, $2::text, $3::text, $4::text, $5::bigint, $6::text::jsonb, $7::boolean) AS r`;

/**
 * Counterfactual statement texts (NOT what the store sends; several are unsafe or unusable, as named): what
 * each piece of the store's statements costs on the server. Text surgery on this checkout's statements.
 */
function extraVariants(sql: ReturnType<typeof leaseStatements>): Variant[] {
  const finalSelect = /\nSELECT pg_catalog\.json_build_array\([\s\S]*\)::text AS r\n/;
  const nowMs = epochMs(`COALESCE(pre.now, ${NOW})`);
  const shortRelease = sql.release.replace(
    finalSelect,
    (select) => `\nSELECT CASE WHEN EXISTS (SELECT 1 FROM applied) THEN ${nowMs}::text ELSE ${select.slice(8, -6)} END AS r\n`,
  );
  const silentRelease = sql.release.replace(/RETURNING CASE WHEN [^\n]*pg_notify\([^)]*\) END/, 'RETURNING 1');
  const unlocked = sql.release.replace(' FOR NO KEY UPDATE\n', '\n');
  const notMaterialized = sql.release.replace(/AS MATERIALIZED/g, 'AS');
  const noJson = sql.release.replace(finalSelect, '\nSELECT EXISTS (SELECT 1 FROM applied)::text AS r\n');
  const claimNoFunction = sql.claim
    .replace(/SELECT CASE WHEN pre\.key IS NULL[\s\S]*?\n {2}ELSE /, 'SELECT ')
    .replace('\nEND AS r', ' AS r');
  const claimNoSkip = sql.claim.replace(' SKIP LOCKED', '');
  return [
    leasefence('release: short success row, JSON pre-image only on refusal', sql.claim, shortRelease),
    leasefence('release: no JSON at all (unusable)', sql.claim, noJson),
    leasefence('release: no pg_notify', sql.claim, silentRelease),
    leasefence('release: pre without its row lock (unsafe)', sql.claim, unlocked),
    leasefence('release: CTEs not MATERIALIZED (unsafe)', sql.claim, notMaterialized),
    leasefence('claim: without the CASE calling the claim function (unusable)', claimNoFunction, sql.release),
    leasefence('claim: without SKIP LOCKED', claimNoSkip, sql.release),
    leasefence('release: one UPDATE, no pre-image (unsafe), claim as is', sql.claim, LOWER_RELEASE),
    leasefence('claim and release: one UPDATE each, no pre-image (unsafe)', LOWER_CLAIM, LOWER_RELEASE),
    leasefence('plpgsql: claim function (as sent unprepared), release function', sql.claimCall, RELEASE_CALL),
    leasefence('plpgsql: lean claim function, release function', LEAN_CLAIM_CALL, RELEASE_CALL),
    leasefence('plpgsql: lean claim function, release function with a short success row', LEAN_CLAIM_CALL, SHORT_RELEASE_CALL),
    leasefence('plpgsql: lean claim function, release as is', LEAN_CLAIM_CALL, sql.release),
    leasefence('plpgsql: claim as is, release function', sql.claim, RELEASE_CALL),
  ];
}

await main();
