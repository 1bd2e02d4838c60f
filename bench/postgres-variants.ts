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
import pg from 'pg';
import { tableName } from '../src/adapters/postgres/identifier.js';
import { decodePreImage } from '../src/adapters/postgres/rows.js';
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
  return {
    name,
    async cycle(client, key) {
      const { rows } = await client.query({ name: `${name}-c`, text: claim, values: [key, 'bench', null, SECRET, TTL_MS, '{}', false] });
      const reply = await client.query({ name: `${name}-r`, text: release, values: releaseParams(key, (rows[0] as { r: unknown }).r) });
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
      const { rows } = await client.query<{ name: string; generic_plans: string; custom_plans: string }>('SELECT name, generic_plans, custom_plans FROM pg_catalog.pg_prepared_statements');
      console.log(`${variant.name}: ${rows.map((row) => `${row.name} generic ${row.generic_plans} custom ${row.custom_plans}`).join('; ')}`);
    }
    const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
    const rawUs = cpu.get(raw.name) ?? [];
    const storeUs = cpu.get(variants[1]?.name ?? '') ?? [];
    const ratio = (values: number[], to: number[]): string => median(values.map((value, round) => value / (to[round] ?? Number.NaN))).toFixed(2);
    console.log(`| variant | server CPU µs per claim + release (median of rounds) | ÷ raw (median of per-round ratios) | ÷ ${variants[1]?.name} |\n|---|---:|---:|---:|`);
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

/**
 * Counterfactual statement texts (NOT what the store sends; several are unsafe or unusable, as named): what
 * each piece of the store's statements costs on the server. Text surgery on this checkout's statements.
 */
function extraVariants(sql: ReturnType<typeof leaseStatements>): Variant[] {
  const finalSelect = /\nSELECT pg_catalog\.json_build_array\([\s\S]*\)::text AS r\n/;
  const nowMs = `pg_catalog.round(pg_catalog.date_part('epoch', clock.now) OPERATOR(pg_catalog.*) 1000::float8)::bigint`;
  const shortRelease = sql.release.replace(finalSelect, (select) => `\nSELECT CASE WHEN EXISTS (SELECT 1 FROM applied) THEN ${nowMs}::text ELSE ${select.slice(8, -6)} END AS r\n`);
  const silentRelease = sql.release.replace(/RETURNING pg_catalog\.pg_notify\([^)]*\)/, 'RETURNING 1');
  const unlocked = sql.release.replace(' FOR NO KEY UPDATE\n', '\n');
  const notMaterialized = sql.release.replace(/AS MATERIALIZED/g, 'AS');
  const noJson = sql.release.replace(finalSelect, '\nSELECT EXISTS (SELECT 1 FROM applied)::text AS r\n');
  const claimNoFunction = sql.claim.replace(/SELECT CASE WHEN clock\.locked[\s\S]*?\n  ELSE /, 'SELECT ').replace('\nEND AS r', ' AS r');
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
  ];
}

await main();
