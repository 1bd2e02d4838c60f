/**
 * Semaphores across real processes on one database file (WAL, busy timeout, the host's wall clock): 4 forked
 * workers acquire permits of one semaphore with limit 3 in a loop, write under the permit's fence, then release
 * (sometimes after a renew) or abandon the grant to expire (a short TTL), and sometimes write again with a released
 * grant's fence. From what every worker saw and what the file holds:
 * 1. never more than 3 live grants at once, and tokens distinct and rising in grant order across all permits, with
 *    one live grant per permit at a time (test/permits/race-checks.ts, shared by every store's race);
 * 2. only permits 1 to 3 were granted, and each grant's `live` count was within the limit;
 * 3. every ledger row was written by a grant inside its life, and every write with a released grant's fence was
 *    refused;
 * 4. the semaphore was contended (some acquires answered full) and the permits were taken over after abandoned
 *    grants.
 * The workers mint with no clock floor, so tokens come from the permits alone. Planted by hand, each failed here: the
 * permits read before BEGIN IMMEDIATE (8 live at once), only the live permits read (a token issued twice).
 * On better-sqlite3 and, where this Node has it (22+), node:sqlite (the workers run on the same Node).
 */
import Database from 'better-sqlite3';
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/adapters/sqlite/index.js';
import { expectAtMostLive, expectTokensRise, type PermitGrantSeen } from '../permits/race-checks.js';
import { scaled } from '../support/scale.js';
import { databaseSync, freshDatabasePath } from './sqlite-harness.js';
import type { PermitEvent } from './sqlite-process-events.js';

const WORKER_SCRIPT = join(import.meta.dirname, 'sqlite-process-permits-worker.ts');
const WORKERS = 4;
const LIMIT = 3;
const DURATION_MS = scaled(3_000);
const SEED = Number(process.env['LF_SQLITE_SEED'] ?? String(Date.now() % 1_000_000));
const SEMAPHORE = 'pool';

const DRIVERS = ['better-sqlite3', ...(databaseSync() === null ? [] : ['node:sqlite'])];

function runWorker(path: string, worker: number, driver: string): Promise<PermitEvent[]> {
  return new Promise((resolve, reject) => {
    const child = fork(WORKER_SCRIPT, [], {
      execArgv: ['--import', 'tsx'],
      env: {
        ...process.env,
        LF_DB: path,
        LF_WORKER: String(worker),
        LF_DURATION_MS: String(DURATION_MS),
        LF_SEED: String(SEED),
        LF_SEMAPHORE: SEMAPHORE,
        LF_LIMIT: String(LIMIT),
        LF_DRIVER: driver,
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let events: PermitEvent[] | null = null;
    child.on('message', (message) => {
      events = message as PermitEvent[];
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 && events !== null ? resolve(events) : reject(new Error(`worker ${worker} exited with ${code} (seed ${SEED})`)),
    );
  });
}

/** The grants the workers saw, each ended at its last expiry or an earlier release. */
function grantsSeen(events: readonly PermitEvent[]): PermitGrantSeen[] {
  const grants = new Map<string, PermitGrantSeen>();
  const id = (key: string, token: string) => `${key}#${token}`;
  for (const event of events)
    if (event.kind === 'grant')
      grants.set(id(event.key, event.token), {
        key: event.key,
        token: BigInt(event.token),
        acquiredAt: event.acquiredAt,
        end: event.expiresAt,
      });
  for (const event of events) {
    const grant = event.kind === 'renew' || event.kind === 'release' ? grants.get(id(event.key, event.token)) : undefined;
    if (event.kind === 'renew' && grant !== undefined) grant.end = Math.max(grant.end, event.expiresAt);
  }
  for (const event of events) {
    const grant = event.kind === 'release' ? grants.get(id(event.key, event.token)) : undefined;
    if (event.kind === 'release' && grant !== undefined) grant.end = Math.min(grant.end, event.now);
  }
  return [...grants.values()];
}

for (const driver of DRIVERS) {
  describe(`sqlite (${driver}): semaphores across real processes on one file`, () => {
    it(`${WORKERS} processes, limit ${LIMIT}: never more than ${LIMIT} live, tokens rising, every write inside its grant`, async () => {
      const file = freshDatabasePath('leasefence-sqlite-permits');
      // NOTE: the parent's own connection (migrate, ledger, audit) is better-sqlite3 on Node 20, node:sqlite elsewhere.
      const DatabaseSync = databaseSync();
      const database = driver === 'node:sqlite' && DatabaseSync !== null ? new DatabaseSync(file.path) : new Database(file.path);
      try {
        await createSqliteStore({ client: database }).migrate();
        database.exec(
          'CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, token INTEGER NOT NULL, entry TEXT NOT NULL, written_at INTEGER NOT NULL)',
        );
        const events = (await Promise.all(Array.from({ length: WORKERS }, (_, worker) => runWorker(file.path, worker, driver)))).flat();
        const grants = grantsSeen(events);
        const granted = events.filter((event) => event.kind === 'grant');
        const fulls = events.filter((event) => event.kind === 'full');
        const abandoned = granted.filter(
          (grant) => !events.some((event) => event.kind === 'release' && event.key === grant.key && event.token === grant.token),
        );
        console.log(
          `sqlite ${driver} permits processes (seed ${SEED}): ${granted.length} grants, ${fulls.length} full answers, ${abandoned.length} grants not released`,
        );

        // 1. at most LIMIT live; tokens distinct, rising in grant order; one live grant per permit
        expectAtMostLive(grants, LIMIT);
        expectTokensRise(grants);
        // 2. only permits 1..LIMIT; each grant's live count within the limit
        expect(new Set(granted.map((grant) => grant.index))).toEqual(new Set([1, 2, 3]));
        expect(granted.filter((grant) => grant.live < 1 || grant.live > LIMIT)).toEqual([]);
        expect(fulls.filter((full) => full.live < LIMIT && full.nextAt === null)).toEqual([]);
        // 3. every ledger row written by a grant inside its life; stale fences refused
        const ledger = database.prepare('SELECT key, CAST(token AS TEXT) AS token, written_at FROM ledger').all() as {
          key: string;
          token: string;
          written_at: number | bigint;
        }[];
        const byId = new Map(grants.map((grant) => [`${grant.key}#${grant.token}`, grant]));
        for (const row of ledger) {
          const grant = byId.get(`${row.key}#${row.token}`);
          expect(grant, `${row.key}: a write by token ${row.token}, never granted`).toBeDefined();
          expect(Number(row.written_at)).toBeGreaterThanOrEqual((grant as PermitGrantSeen).acquiredAt);
          expect(Number(row.written_at), `${row.key}: token ${row.token} wrote after its end`).toBeLessThanOrEqual(
            (grant as PermitGrantSeen).end,
          );
        }
        const writes = events.filter((event) => event.kind === 'write');
        expect(writes.filter((write) => write.stale && write.ok)).toEqual([]);
        expect(ledger.length).toBe(writes.filter((write) => write.ok).length);
        // 4. contended, and abandoned permits taken over
        expect(fulls.length).toBeGreaterThan(0);
        expect(writes.some((write) => write.stale)).toBe(true);
        const taken = abandoned.filter((grant) =>
          granted.some(
            (later) => later.key === grant.key && later.acquiredAt >= grant.expiresAt && BigInt(later.token) > BigInt(grant.token),
          ),
        );
        expect(taken.length).toBeGreaterThan(0);
      } finally {
        database.close();
        file.remove();
      }
    }, 120_000);
  });
}
