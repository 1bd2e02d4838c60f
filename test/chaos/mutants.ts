/**
 * Planted bugs: variants of the real Postgres and Redis adapters, each broken in one classic way, run
 * against the real servers. The chaos checker must fail every one of them (mutants.test.ts):
 *
 * - `unfenced-write`: the fenced write runs the user's write without checking the grant (the store trusts
 *   the client's belief that it still holds the lease);
 * - `blind-renew`: renew writes the caller's grant back with a new expiry without comparing it with the
 *   current one (`SET key me PX ttl`), resurrecting a grant that expired or was taken over;
 * - `racy-claim`: claim reads the record, decides in the client, then writes token + 1 in a second round
 *   trip, so two claimers can both win. Between its read and its write the racy claim waits (bounded) for a
 *   second claimer of the same key to have read too (see `meetPartner`): the exposing interleaving is
 *   scripted, not left to a 10 ms window.
 *
 * Everything else is the real adapter.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import type { Redis } from 'ioredis';
import type Database from 'better-sqlite3';
import type { SqliteWriteContext } from '../../src/adapters/sqlite/index.js';
import { hashSecret } from '../../src/store-entry.js';
import type { PostgresWriteContext } from '../../src/adapters/postgres/index.js';
import { secretHash } from '../../src/adapters/postgres/secret-hash.js';
import { RedisKey, type RedisWriteContext } from '../../src/adapters/redis/index.js';
import type { ClaimCommand, StoreClaimOutcome, StoreInspection } from '../../src/fence/operations.js';
import type { Store } from '../../src/store.js';
import { LEASE_TABLE } from './backend-postgres.js';
import { redisRecordKey } from './backend-redis.js';
import { SQLITE_LEASE_TABLE } from './backend-sqlite.js';
import { refuseWrite } from '../../src/write-refusal.js';

/** The planted bugs. */
export type MutantName = 'unfenced-write' | 'blind-renew' | 'racy-claim';

/** Every planted bug, in the order the tests run them. */
export const MUTANTS: readonly MutantName[] = ['unfenced-write', 'blind-renew', 'racy-claim'];

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** How long a racy claim waits inside its read-write gap for a second claimer. */
const PARTNER_WAIT_MS = 3000;

/**
 * The rendezvous of racy claims (across worker processes, through a file per key in
 * `LEASEFENCE_RACY_CLAIM_DIR`): claimers that read the key as free pair up in arrival order; the first of a
 * pair waits, after its read, until the second has read too, so both write the same token. A claimer without
 * a partner goes on after `PARTNER_WAIT_MS`, as a plain read-then-write claim.
 */
async function meetPartner(key: string): Promise<void> {
  const dir = process.env['LEASEFENCE_RACY_CLAIM_DIR'] ?? join(tmpdir(), 'leasefence-racy-claim');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${Buffer.from(key).toString('hex')}.arrivals`);
  const arrivalsOf = (): number => readFileSync(path, 'utf8').length;
  // NOTE: one byte per arrival; an append of one byte is atomic, so arrival numbers are unique.
  appendFileSync(path, '.');
  const arrival = arrivalsOf();
  if (arrival % 2 === 0) return;
  const until = performance.now() + PARTNER_WAIT_MS;
  while (performance.now() < until && arrivalsOf() <= arrival) await sleep(5);
}

/** What the racy claim decides in the client from an inspection made one round trip earlier. */
function decideFromInspection(inspection: StoreInspection, command: ClaimCommand): StoreClaimOutcome | null {
  const grant = inspection.grant;
  if (grant === null || !grant.live) return null;
  return {
    ok: false,
    reason: 'held',
    key: command.key,
    token: grant.token,
    holder: grant.holder,
    runId: grant.runId,
    acquiredAt: grant.acquiredAt,
    expiresAt: grant.expiresAt,
    now: inspection.now,
  };
}

function granted(inspection: StoreInspection, command: ClaimCommand, token: bigint, now: number): StoreClaimOutcome {
  const expiresAt = command.ttlMs === null ? null : now + command.ttlMs;
  const grant = inspection.grant;
  const previous =
    grant === null
      ? inspection.ending
      : {
          kind: 'expired' as const,
          token: grant.token,
          holder: grant.holder,
          runId: grant.runId,
          at: grant.expiresAt ?? now,
          reason: null,
          by: null,
        };
  return { ok: true, key: command.key, token, acquiredAt: now, expiresAt, previous, checkpoint: inspection.checkpoint, now };
}

/** Writes a grant over the key's record whatever is stored; resolves with the store's now. */
type BlindGrant = (
  key: string,
  token: bigint,
  holder: string,
  secret: string,
  runId: string | null,
  ttlMs: number | null,
) => number | Promise<number>;

/** Plants `blind-renew` or `racy-claim` in `mutant` through `blindGrant` (Postgres plants only the claim here). */
function plantBlindGrant<C>(
  name: 'blind-renew' | 'racy-claim',
  mutant: ReturnType<typeof delegatingStore<C>>,
  store: Store<C>,
  blindGrant: BlindGrant,
): void {
  if (name === 'blind-renew') {
    mutant.renew = async ({ fence, ttlMs }) => {
      const now = await blindGrant(fence.key, fence.token, fence.holder, fence.secret, fence.runId, ttlMs);
      return { ok: true, key: fence.key, token: fence.token, expiresAt: ttlMs === null ? null : now + ttlMs, now };
    };
    return;
  }
  mutant.claim = async (command) => {
    const inspection = await store.inspect(command.key);
    const held = decideFromInspection(inspection, command);
    if (held !== null) return held;
    await meetPartner(command.key);
    const token = inspection.token + 1n;
    const now = await blindGrant(command.key, token, command.holder, command.secret, command.runId, command.ttlMs);
    return granted(inspection, command, token, now);
  };
}

/** A store that forwards every method to `store`: a mutant replaces the one method it breaks. */
export function delegatingStore<C>(store: Store<C>): { -readonly [M in keyof Store<C>]: Store<C>[M] } {
  return {
    id: store.id,
    claim: (c) => store.claim(c),
    dequeue: (c) => store.dequeue(c),
    renew: (c) => store.renew(c),
    checkpoint: (c) => store.checkpoint(c),
    release: (c) => store.release(c),
    revoke: (c) => store.revoke(c),
    recover: (c) => store.recover(c),
    inspect: (k) => store.inspect(k),
    fencedWrite: (f, w, options) => store.fencedWrite(f, w, options),
    setKeyState: (c) => store.setKeyState(c),
    remove: (c) => store.remove(c),
    // NOTE: semaphores are optional; a mutant of a store that has them keeps them (the semaphore workload's).
    ...(store.acquirePermit === undefined ? {} : { acquirePermit: store.acquirePermit.bind(store) }),
  };
}

// ---------------------------------------------------------------------------------------------- Postgres

const PG_NOW = `(extract(epoch FROM date_trunc('milliseconds', clock_timestamp())) * 1000)::bigint::text`;

/** Wraps the real Postgres store with the planted bug `name`. */
export function postgresMutant(name: MutantName, store: Store<PostgresWriteContext>, pool: pg.Pool): Store<PostgresWriteContext> {
  const mutant = delegatingStore(store);
  if (name === 'unfenced-write') {
    mutant.fencedWrite = async (fence, write) => {
      const connection = await pool.connect();
      try {
        await connection.query('BEGIN');
        const { rows } = await connection.query<{ now: string }>(`SELECT ${PG_NOW} AS now`);
        const now = Number(rows[0]?.now);
        const query = connection.query.bind(connection) as unknown as PostgresWriteContext['query'];
        const value = await write({ query, connection, key: fence.key, token: fence.token, now, refuse: refuseWrite });
        await connection.query('COMMIT');
        return { ok: true, value, token: fence.token, checkpoint: null, now };
      } finally {
        connection.release();
      }
    };
  } else if (name === 'blind-renew') {
    mutant.renew = async ({ fence, ttlMs }) => {
      const { rows } = await pool.query<{ now: string; expires: string }>(
        `UPDATE ${LEASE_TABLE} SET token = $2, holder = $3, secret_hash = $4, run_id = $5,
           expires_at = date_trunc('milliseconds', clock_timestamp()) + $6 * interval '1 millisecond'
         WHERE key = $1 RETURNING ${PG_NOW} AS now, (extract(epoch FROM expires_at) * 1000)::bigint::text AS expires`,
        [fence.key, fence.token.toString(), fence.holder, secretHash(fence.secret), fence.runId, ttlMs],
      );
      const row = rows[0];
      return { ok: true, key: fence.key, token: fence.token, expiresAt: Number(row?.expires), now: Number(row?.now) };
    };
  } else {
    // NOTE: the write of a racy claim: the caller's grant over the row, whatever is stored.
    plantBlindGrant(name, mutant, store, async (key, token, holder, secret, runId, ttlMs) => {
      const { rows } = await pool.query<{ now: string }>(
        `INSERT INTO ${LEASE_TABLE} AS l (key, token, holder, run_id, secret_hash, acquired_at, expires_at, attributes)
         VALUES ($1, $2, $3, $4, $5, date_trunc('milliseconds', clock_timestamp()), date_trunc('milliseconds', clock_timestamp()) + $6 * interval '1 millisecond', '{}')
         ON CONFLICT (key) DO UPDATE SET token = EXCLUDED.token, holder = EXCLUDED.holder, run_id = EXCLUDED.run_id, secret_hash = EXCLUDED.secret_hash,
           acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at, attributes = EXCLUDED.attributes
         RETURNING (extract(epoch FROM acquired_at) * 1000)::bigint::text AS now`,
        [key, token.toString(), holder, runId, secretHash(secret), ttlMs],
      );
      return Number(rows[0]?.now);
    });
  }
  return mutant;
}

// ------------------------------------------------------------------------------------------------- Redis

const REDIS_NOW = `local t = redis.call('TIME') local micros = string.rep('0', 6 - #t[2]) .. t[2] local now = tonumber(t[1] .. string.sub(micros, 1, 3))`;
// NOTE: the record's `lease` field is token NUL secret NUL holder NUL run NUL expires NUL acquired NUL attributes
// (run '' for none, else '=' .. run; see src/adapters/redis/scripts.ts).
const BLIND_GRANT_SCRIPT = `${REDIS_NOW}
local run = ARGV[4] == '' and '' or ('=' .. ARGV[4])
redis.call('HSET', KEYS[1], 'lease', ARGV[1] .. '\\0' .. ARGV[3] .. '\\0' .. ARGV[2] .. '\\0' .. run .. '\\0' .. tostring(now + tonumber(ARGV[5])) .. '\\0' .. tostring(now) .. '\\0')
return tostring(now)`;

/** Wraps the real Redis store with the planted bug `name`. */
export function redisMutant(name: MutantName, store: Store<RedisWriteContext>, client: Redis): Store<RedisWriteContext> {
  const mutant = delegatingStore(store);
  const blindGrant = async (
    key: string,
    token: bigint,
    holder: string,
    secret: string,
    runId: string | null,
    ttlMs: number | null,
  ): Promise<number> =>
    Number(
      await client.eval(
        BLIND_GRANT_SCRIPT,
        1,
        redisRecordKey(key),
        token.toString(),
        holder,
        secret,
        runId ?? '',
        String(ttlMs ?? 86_400_000),
      ),
    );
  if (name === 'unfenced-write') {
    mutant.fencedWrite = async (fence, write) => {
      const pending: Array<Promise<unknown>> = [];
      const context: RedisWriteContext = {
        token: fence.token,
        key: (keyName) => new RedisKey(keyName),
        // NOTE: the unfenced mutant judges no condition (issue 24's refuseUnless) and never refuses.
        refuseUnless: () => undefined,
        refuse: (code) => {
          throw new Error(`unfenced mutant: refuse(${code})`);
        },
        call: (command, key, ...args) => {
          const reply = client.call(
            command,
            typeof key === 'string' ? key : key.name,
            ...args.map((arg) => (arg instanceof RedisKey ? arg.name : String(arg))),
          );
          pending.push(reply);
          return reply;
        },
      };
      const value = await write(context);
      await Promise.all(pending);
      return { ok: true, value, token: fence.token, checkpoint: null, now: Date.now() };
    };
  } else {
    plantBlindGrant(name, mutant, store, blindGrant);
  }
  return mutant;
}

// ------------------------------------------------------------------------------------------------ SQLite

/** Writes the caller's grant over the row, whatever is stored (blind renew and racy claim). */
const SQLITE_BLIND_GRANT = `INSERT INTO ${SQLITE_LEASE_TABLE} (key, token, holder, run_id, secret_hash, acquired_at, expires_at, attributes, recovery_required)
VALUES (?, ?, ?, ?, ?, ?, ?, '{}', 0)
ON CONFLICT (key) DO UPDATE SET token = excluded.token, holder = excluded.holder, run_id = excluded.run_id, secret_hash = excluded.secret_hash,
  acquired_at = excluded.acquired_at, expires_at = excluded.expires_at`;

/** Wraps the real SQLite store with the planted bug `name` (the host's wall clock is the store's clock). */
export function sqliteMutant(name: MutantName, store: Store<SqliteWriteContext>, database: Database.Database): Store<SqliteWriteContext> {
  const mutant = delegatingStore(store);
  const blindGrant = (key: string, token: bigint, holder: string, secret: string, runId: string | null, ttlMs: number | null): number => {
    const now = Date.now();
    database.prepare(SQLITE_BLIND_GRANT).run(key, token, holder, runId, hashSecret(secret), now, ttlMs === null ? null : now + ttlMs);
    return now;
  };
  if (name === 'unfenced-write') {
    mutant.fencedWrite = async (fence, write) => {
      database.exec('BEGIN IMMEDIATE');
      try {
        const now = Date.now();
        const statements = {
          database,
          run: (sql: string, ...params: unknown[]) => database.prepare(sql).run(...params),
          get: (sql: string, ...params: unknown[]) => database.prepare(sql).get(...params),
          all: (sql: string, ...params: unknown[]) => database.prepare(sql).all(...params),
        } as unknown as SqliteWriteContext;
        const value = await write({ ...statements, key: fence.key, token: fence.token, now });
        database.exec('COMMIT');
        return { ok: true, value, token: fence.token, checkpoint: null, now };
      } catch (error) {
        if (database.inTransaction) database.exec('ROLLBACK');
        throw error;
      }
    };
  } else {
    plantBlindGrant(name, mutant, store, blindGrant);
  }
  return mutant;
}
