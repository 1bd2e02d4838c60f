/**
 * Real processes hammering one database file (WAL mode, busy timeout): several forked workers claim, write
 * under the fence (a ledger row and a checkpoint in one transaction), pause past their TTL, renew, release
 * and revoke on two keys, on the host's wall clock. At the end, from what every worker saw and what the file
 * holds:
 * 1. tokens are never issued twice;
 * 2. in token order, each grant ended (expired, released or revoked, on the store clock) before the next began;
 * 3. every ledger row was written by a grant at a store time inside that grant's life, in token order;
 * 4. exactly the writes their workers saw accepted are in the ledger;
 * 5. the checkpoint is the last accepted write's (write and checkpoint commit together).
 * Also: a process SIGKILLed in the middle of a fenced write, holding the write lock, leaves nothing of its
 * write, and the others carry on. And key state racing claims: workers claim with `expect` (the revision
 * they saw), write under the fence, set the revision (changed or not) and remove keys; no write lands under a
 * revision other than the one its grant was claimed under, and tokens grow across removes.
 */
import Database from 'better-sqlite3';
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLeases } from '../../src/leases.js';
import { createSqliteStore } from '../../src/adapters/sqlite/index.js';
import { freshDatabasePath } from './sqlite-harness.js';
import type { KeyStateEvent, ProcessEvent } from './sqlite-process-events.js';
import { scaled } from '../support/scale.js';

const WORKER_SCRIPT = join(import.meta.dirname, 'sqlite-process-worker.ts');
const KEY_STATE_WORKER_SCRIPT = join(import.meta.dirname, 'sqlite-process-key-state-worker.ts');
const WORKERS = Number(process.env['LF_SQLITE_WORKERS'] ?? '4');
const DURATION_MS = scaled(3_000);
const SEED = Number(process.env['LF_SQLITE_SEED'] ?? String(Date.now() % 1_000_000));

interface LedgerRow {
  readonly key: string;
  readonly token: string;
  readonly entry: string;
  readonly written_at: number;
}

function runWorker<E = ProcessEvent>(path: string, worker: number, script = WORKER_SCRIPT): Promise<E[]> {
  return new Promise((resolve, reject) => {
    const child = fork(script, [], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, LF_DB: path, LF_WORKER: String(worker), LF_DURATION_MS: String(DURATION_MS), LF_SEED: String(SEED) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let events: E[] | null = null;
    child.on('message', (message) => {
      events = message as E[];
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 && events !== null ? resolve(events) : reject(new Error(`worker ${worker} exited with ${code} (seed ${SEED})`)),
    );
  });
}

/**
 * When each grant ended on the store clock: its last expiry (strict: a write at that ms is already late),
 * or an earlier release or revoke (`ended` later in the same ms than a write it follows: the store clock
 * has millisecond resolution, so there a write may share the ending's ms).
 */
interface GrantEnd {
  readonly at: number;
  readonly by: 'expiry' | 'ending';
}

function grantEnds(events: readonly ProcessEvent[]): Map<string, GrantEnd> {
  const ends = new Map<string, GrantEnd>();
  const lastRenewAt = new Map<string, number>();
  const id = (key: string, token: string) => `${key}#${token}`;
  for (const event of events) if (event.kind === 'grant') ends.set(id(event.key, event.token), { at: event.expiresAt, by: 'expiry' });
  for (const event of events) {
    const grant = id(event.key, event.token);
    if (event.kind === 'renew' && event.now >= (lastRenewAt.get(grant) ?? -Infinity)) {
      lastRenewAt.set(grant, event.now);
      ends.set(grant, { at: event.expiresAt ?? Infinity, by: 'expiry' });
    }
  }
  for (const event of events) {
    if (event.kind === 'release' || event.kind === 'revoke') {
      const grant = id(event.key, event.token);
      const end = ends.get(grant);
      if (end === undefined || event.now < end.at) ends.set(grant, { at: event.now, by: 'ending' });
    }
  }
  return ends;
}

describe('sqlite: real processes racing on one database file', () => {
  let file: ReturnType<typeof freshDatabasePath>;
  let database: Database.Database;

  beforeAll(async () => {
    file = freshDatabasePath('leasefence-sqlite-processes');
    database = new Database(file.path);
    await createSqliteStore({ client: database }).migrate();
    database.exec(
      'CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, token INTEGER NOT NULL, entry TEXT NOT NULL, written_at INTEGER NOT NULL)',
    );
  });

  afterAll(() => {
    database?.close();
    file?.remove();
  });

  it(`${WORKERS} workers for ${DURATION_MS} ms: one grant at a time in token order, tokens never reused, only the current grant's writes land`, async () => {
    const events = (await Promise.all(Array.from({ length: WORKERS }, (_, worker) => runWorker(file.path, worker)))).flat();
    const grants = events.filter((event) => event.kind === 'grant');
    const ends = grantEnds(events);
    const ledger = database
      .prepare('SELECT key, CAST(token AS TEXT) AS token, entry, written_at FROM ledger ORDER BY id')
      .all() as LedgerRow[];
    const accepted = events.filter((event) => event.kind === 'write' && event.ok);
    const refused = events.filter((event) => event.kind === 'write' && !event.ok);
    const expired = refused.filter((event) => event.kind === 'write' && event.reason === 'expired').length;
    console.log(
      `sqlite processes (seed ${SEED}): ${grants.length} grants, ${accepted.length} writes accepted, ${refused.length} refused (${expired} expired), ${events.filter((e) => e.kind === 'revoke').length} revokes`,
    );
    expect(grants.length).toBeGreaterThan(WORKERS);
    expect(refused.length).toBeGreaterThan(0);

    for (const key of new Set(grants.map((grant) => grant.key))) {
      const ofKey = grants.filter((grant) => grant.key === key).sort((a, b) => (BigInt(a.token) < BigInt(b.token) ? -1 : 1));
      // 1. tokens never issued twice
      expect(new Set(ofKey.map((grant) => grant.token)).size).toBe(ofKey.length);
      // 2. in token order, a grant ends before the next begins
      for (let index = 1; index < ofKey.length; index += 1) {
        const previous = ofKey[index - 1]!;
        const next = ofKey[index]!;
        expect(next.acquiredAt, `${key}: token ${next.token} granted while token ${previous.token} lived`).toBeGreaterThanOrEqual(
          ends.get(`${key}#${previous.token}`)!.at,
        );
      }
      // 3. ledger rows: token order, each inside its grant's life
      const rows = ledger.filter((row) => row.key === key);
      const byToken = new Map(ofKey.map((grant) => [grant.token, grant]));
      for (let index = 0; index < rows.length; index += 1) {
        const row = rows[index]!;
        const grant = byToken.get(row.token);
        expect(grant, `${row.entry}: written by a token never granted`).toBeDefined();
        expect(row.written_at).toBeGreaterThanOrEqual(grant!.acquiredAt);
        const end = ends.get(`${key}#${row.token}`)!;
        if (end.by === 'expiry') expect(row.written_at, `${row.entry} written once its grant had expired`).toBeLessThan(end.at);
        else expect(row.written_at, `${row.entry} written after its grant was released or revoked`).toBeLessThanOrEqual(end.at);
        if (index > 0) expect(BigInt(row.token) >= BigInt(rows[index - 1]!.token), `${row.entry} after a newer grant's write`).toBe(true);
      }
      // 5. the checkpoint is the last accepted write's
      const last = rows[rows.length - 1];
      const checkpoint = (await createSqliteStore({ client: database }).inspect(key)).checkpoint;
      if (last !== undefined) expect(checkpoint).toMatchObject({ json: JSON.stringify({ entry: last.entry }), token: BigInt(last.token) });
    }
    // 4. exactly the accepted writes landed, once each
    expect(ledger.map((row) => row.entry).sort()).toEqual(accepted.map((event) => (event.kind === 'write' ? event.entry : '')).sort());
  }, 120_000);

  it('a process frozen inside a fenced write blocks every writer of the file until it dies; SIGKILLed, it leaves nothing of its write and the others carry on', async () => {
    const killed = fork(join(import.meta.dirname, 'sqlite-process-stuck.ts'), [], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, LF_DB: file.path },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const token = await new Promise<string>((resolve, reject) => {
      killed.on('message', (message) => resolve(String(message)));
      killed.on('exit', (code) => reject(new Error(`the stuck worker exited early with ${code}`)));
    });
    killed.removeAllListeners('exit');
    // While it holds the write lock, every writer of the file waits (here for 100 ms) and gives up: the
    // lock is the whole file's, not the key's. Nothing was applied.
    const waiting = createSqliteStore({ client: database, busyTimeoutMs: 100 });
    await expect(createLeases(waiting, { holder: 'other', ttlMs: 1_000 }).claim('job:other')).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
    });
    const exited = new Promise((resolve) => killed.on('exit', resolve));
    killed.kill('SIGKILL');
    await exited;
    const store = createSqliteStore({ client: database });
    const leases = createLeases(store, { holder: 'survivor', ttlMs: 1_000 });
    // The stuck worker's grant had a 200 ms TTL: once it has expired, the key is claimable.
    await new Promise((resolve) => setTimeout(resolve, 250));
    const claimed = await leases.claim('job:stuck');
    expect(claimed).toMatchObject({ ok: true, previous: { kind: 'expired', token: BigInt(token) } });
    expect(database.prepare('SELECT count(*) AS n FROM ledger WHERE entry = ?').get('stuck write')).toEqual({ n: 0 });
    expect((await store.inspect('job:stuck')).checkpoint).toBeNull();
  }, 60_000);
});

describe('sqlite: key state racing claims across processes on one file', () => {
  let file: ReturnType<typeof freshDatabasePath>;
  let database: Database.Database;

  beforeAll(async () => {
    file = freshDatabasePath('leasefence-sqlite-key-state');
    database = new Database(file.path);
    await createSqliteStore({ client: database }).migrate();
    database.exec(
      'CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, token INTEGER NOT NULL, entry TEXT NOT NULL, claimed_rev TEXT, row_rev TEXT, written_at INTEGER NOT NULL)',
    );
  });

  afterAll(() => {
    database?.close();
    file?.remove();
  });

  it(`${WORKERS} workers for ${DURATION_MS} ms: writes land only under the revision their grant was claimed under, a state change fences the grant, tokens grow across removes`, async () => {
    const events = (
      await Promise.all(
        Array.from({ length: WORKERS }, (_, worker) => runWorker<KeyStateEvent>(file.path, worker, KEY_STATE_WORKER_SCRIPT)),
      )
    ).flat();
    const ledger = database
      .prepare('SELECT key, CAST(token AS TEXT) AS token, entry, claimed_rev, row_rev, written_at FROM ledger ORDER BY id')
      .all() as (LedgerRow & { claimed_rev: string | null; row_rev: string | null })[];
    const grants = events.flatMap((event) => (event.kind === 'claim' && event.ok ? [event] : []));
    const writes = events.flatMap((event) => (event.kind === 'write' ? [event] : []));
    const sets = events.flatMap((event) => (event.kind === 'set' ? [event] : []));
    const removes = events.flatMap((event) => (event.kind === 'remove' ? [event] : []));
    const count = (reason: string) => events.filter((event) => 'reason' in event && event.reason === reason).length;
    console.log(
      `sqlite key state (seed ${SEED}): ${grants.length} grants, ${writes.filter((w) => w.ok).length} writes accepted, ${count('state-changed')} refused state-changed, ${count('state-mismatch')} claims refused state-mismatch, ${count('held-back')} held back, ${sets.filter((s) => s.ended !== null).length} of ${sets.length} sets ended a grant, ${removes.length} removes`,
    );
    for (const key of new Set(grants.map((grant) => grant.key))) {
      // Tokens are never issued twice, and grow in the order grants were made, across removes.
      const ofKey = grants.filter((grant) => grant.key === key).sort((a, b) => (BigInt(a.token!) < BigInt(b.token!) ? -1 : 1));
      expect(new Set(ofKey.map((grant) => grant.token)).size).toBe(ofKey.length);
      for (let index = 1; index < ofKey.length; index += 1) {
        expect(
          ofKey[index]!.acquiredAt,
          `${key}: token ${ofKey[index]!.token} granted before token ${ofKey[index - 1]!.token}`,
        ).toBeGreaterThanOrEqual(ofKey[index - 1]!.acquiredAt);
      }
      for (const removed of removes.filter((remove) => remove.key === key)) {
        for (const grant of ofKey.filter((grant) => grant.acquiredAt > removed.now))
          expect(BigInt(grant.token!)).toBeGreaterThan(BigInt(removed.token));
      }
    }
    // Every write landed under the revision its grant was claimed under (read in the fenced transaction).
    for (const row of ledger) expect(row.row_rev, `${row.entry} written after the revision moved`).toBe(row.claimed_rev);
    // A grant a state change ended wrote nothing after it.
    for (const set of sets) {
      if (!set.changed) expect(set.ended, 'a set that changed nothing ended a grant').toBeNull();
      if (set.ended?.kind !== 'state-changed') continue;
      const late = ledger.filter((row) => row.key === set.key && row.token === set.ended!.token && row.written_at > set.now);
      expect(late.map((row) => row.entry)).toEqual([]);
    }
    // Exactly the accepted writes landed, once each.
    expect(ledger.map((row) => row.entry).sort()).toEqual(
      writes
        .filter((write) => write.ok)
        .map((write) => write.entry)
        .sort(),
    );
    // The race reached what it is about.
    expect(sets.filter((set) => set.ended?.kind === 'state-changed').length).toBeGreaterThan(0);
    expect(count('state-changed')).toBeGreaterThan(0);
    expect(removes.length).toBeGreaterThan(0);
  }, 120_000);
});
