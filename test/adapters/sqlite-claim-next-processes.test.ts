/**
 * Claim-next across real processes on one database file (WAL, busy timeout, the host's wall clock): several
 * forked workers claim the next item of one set of 100 in a loop, write under the fence, then release (sometimes
 * with a hold), renew, or abandon the grant to expire. At the end, from what every worker saw and what the file
 * holds:
 * 1. each item has at most one live holder at a time: in token order, each grant ended (its last expiry, or an
 *    earlier release) before the next began, and tokens are never issued twice;
 * 2. every ledger row was written by a grant inside its life (the fence held);
 * 3. none starved: every item was granted at least once;
 * 4. none lost: once every grant has ended, claim-next grants each of the 100 items exactly once, then answers idle.
 */
import Database from 'better-sqlite3';
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/adapters/sqlite/index.js';
import { newSecret } from '../../src/secret.js';
import { freshDatabasePath } from './sqlite-harness.js';
import type { ClaimNextEvent } from './sqlite-process-events.js';
import { scaled } from '../support/scale.js';

const WORKER_SCRIPT = join(import.meta.dirname, 'sqlite-process-claim-next-worker.ts');
const WORKERS = Number(process.env['LF_SQLITE_WORKERS'] ?? '4');
const DURATION_MS = scaled(3_000);
const SEED = Number(process.env['LF_SQLITE_SEED'] ?? String(Date.now() % 1_000_000));
const SET = 'queue';
const ITEMS = Array.from({ length: 100 }, (_, index) => `{${SET}}:item-${String(index).padStart(3, '0')}`);

function runWorker(path: string, worker: number): Promise<ClaimNextEvent[]> {
  return new Promise((resolve, reject) => {
    const child = fork(WORKER_SCRIPT, [], {
      execArgv: ['--import', 'tsx'],
      env: {
        ...process.env,
        LF_DB: path,
        LF_WORKER: String(worker),
        LF_DURATION_MS: String(DURATION_MS),
        LF_SEED: String(SEED),
        LF_SET: SET,
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let events: ClaimNextEvent[] | null = null;
    child.on('message', (message) => {
      events = message as ClaimNextEvent[];
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 && events !== null ? resolve(events) : reject(new Error(`worker ${worker} exited with ${code} (seed ${SEED})`)),
    );
  });
}

describe('sqlite: claim-next across real processes on one file', () => {
  let file: ReturnType<typeof freshDatabasePath>;
  let database: Database.Database;

  beforeAll(async () => {
    file = freshDatabasePath('leasefence-sqlite-claim-next');
    database = new Database(file.path);
    const store = createSqliteStore({ client: database });
    await store.migrate();
    database.exec(
      'CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, token INTEGER NOT NULL, entry TEXT NOT NULL, written_at INTEGER NOT NULL)',
    );
    expect(await store.addItems({ set: SET, keys: ITEMS })).toMatchObject({ ok: true, added: ITEMS });
  });

  afterAll(() => {
    database?.close();
    file?.remove();
  });

  it(`${WORKERS} workers over ${ITEMS.length} items: one live holder per item at a time, none lost, none starved`, async () => {
    const events = (await Promise.all(Array.from({ length: WORKERS }, (_, worker) => runWorker(file.path, worker)))).flat();
    const grants = events.filter((event) => event.kind === 'grant');
    const idles = events.filter((event) => event.kind === 'idle').length;
    console.log(`sqlite claim-next processes (seed ${SEED}): ${grants.length} grants over ${ITEMS.length} items, ${idles} idle answers`);

    // When each grant ended: its last expiry, or an earlier release.
    const ends = new Map<string, number>();
    const id = (key: string, token: string) => `${key}#${token}`;
    for (const event of events) if (event.kind === 'grant') ends.set(id(event.key, event.token), event.expiresAt);
    for (const event of events)
      if (event.kind === 'renew')
        ends.set(id(event.key, event.token), Math.max(ends.get(id(event.key, event.token)) ?? 0, event.expiresAt));
    for (const event of events)
      if (event.kind === 'release')
        ends.set(id(event.key, event.token), Math.min(ends.get(id(event.key, event.token)) ?? Infinity, event.now));

    const ledger = database.prepare('SELECT key, CAST(token AS TEXT) AS token, written_at FROM ledger').all() as {
      key: string;
      token: string;
      written_at: number;
    }[];
    for (const key of ITEMS) {
      const ofKey = grants.filter((grant) => grant.key === key).sort((a, b) => (BigInt(a.token) < BigInt(b.token) ? -1 : 1));
      // 3. none starved
      expect(ofKey.length, `${key} was never granted`).toBeGreaterThan(0);
      // 1. tokens never issued twice; one live grant at a time
      expect(new Set(ofKey.map((grant) => grant.token)).size).toBe(ofKey.length);
      for (let index = 1; index < ofKey.length; index += 1) {
        const previous = ofKey[index - 1] as (typeof ofKey)[number];
        const next = ofKey[index] as (typeof ofKey)[number];
        expect(next.acquiredAt, `${key}: token ${next.token} granted while token ${previous.token} lived`).toBeGreaterThanOrEqual(
          ends.get(id(key, previous.token)) as number,
        );
      }
      // 2. every write inside its grant's life
      const byToken = new Map(ofKey.map((grant) => [grant.token, grant]));
      for (const row of ledger.filter((entry) => entry.key === key)) {
        const grant = byToken.get(row.token);
        expect(grant, `${key}: a write by token ${row.token}, never granted`).toBeDefined();
        expect(row.written_at).toBeGreaterThanOrEqual((grant as (typeof ofKey)[number]).acquiredAt);
        expect(row.written_at).toBeLessThanOrEqual(ends.get(id(key, row.token)) as number);
      }
    }
    expect(ledger.length).toBe(events.filter((event) => event.kind === 'write' && event.ok).length);

    // 4. none lost: after every grant and hold has ended, each item is granted exactly once more.
    const lastEnd = Math.max(...ends.values());
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, lastEnd - Date.now()) + 20));
    const store = createSqliteStore({ client: database });
    const granted: string[] = [];
    for (;;) {
      const outcome = await store.claimNext({
        set: SET,
        holder: 'auditor',
        runId: null,
        secret: newSecret(),
        ttlMs: 60_000,
        attributes: {},
        onExpired: 'take-over',
      });
      if (!outcome.ok) break;
      granted.push(outcome.key);
    }
    expect(granted.sort()).toEqual(ITEMS);
  }, 120_000);
});
