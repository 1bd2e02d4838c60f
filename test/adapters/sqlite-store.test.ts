/**
 * SQLite-only guarantees, beyond the shared suites: secrets at rest, synchronous fenced writes (and what
 * happens to an async one), the write and its checkpoint committing together, the token floor and a clock
 * stepped backwards, a busy or closed database, validation before any I/O, and the token gate.
 */
import { fc, test as propTest } from '@fast-check/vitest';
import { afterEach, describe, expect, it } from 'vitest';
import { isLeaseError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import Database from 'better-sqlite3';
import {
  createSqliteStore,
  createSqliteTokenGate,
  sqliteGateSchemaSql,
  sqliteLeaseSchemaSql,
  type SqliteClient,
} from '../../src/adapters/sqlite/index.js';
import { SQLITE_EPOCH } from './sqlite-harness.js';
import { openSqliteRig, type SqliteRig } from './sqlite-rig.js';

let rig: SqliteRig | null = null;
const open = async (...args: Parameters<typeof openSqliteRig>): Promise<SqliteRig> => (rig = await openSqliteRig(...args));
afterEach(() => {
  rig?.close();
  rig = null;
});

const mustClaim = async (rigged: SqliteRig, holder: string, key: string, ttlMs?: number) => {
  const claimed = await rigged.leasesFor(holder, ttlMs).claim(key);
  if (!claimed.ok) throw new Error(`claim of ${key} by ${holder} refused: ${claimed.reason}`);
  return claimed.lease;
};

describe('secrets at rest', () => {
  it('the lease table keeps the SHA-256 of the secret, never the secret, and inspect shows neither', async () => {
    const r = await open();
    const lease = await mustClaim(r, 'a', 'job:1');
    const { secret } = lease.fence();
    const row = r.database.prepare('SELECT * FROM leasefence_leases WHERE key = ?').get('job:1') as Record<string, unknown>;
    const { createHash } = await import('node:crypto');
    expect(row['secret_hash']).toBe(createHash('sha256').update(secret).digest('hex'));
    expect(JSON.stringify(row, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(secret);
    const seen = await r.store.inspect('job:1');
    expect(JSON.stringify(seen, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(secret);
    expect(JSON.stringify(seen, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(String(row['secret_hash']));
  });
});

describe('fenced writes are synchronous', () => {
  it('an async callback is refused before any I/O, and the lease and the data are as they were', async () => {
    const r = await open();
    const lease = await mustClaim(r, 'a', 'job:1');
    const leases = r.leasesFor('a');
    const before = await r.store.inspect('job:1');
    let ran = false;
    const error = await leases
      .fencedWrite(lease, async (tx) => {
        ran = true;
        tx.run('INSERT INTO ledger (key, entry) VALUES (?, ?)', 'job:1', 'x');
      })
      .catch((caught: unknown) => caught);
    expect(isLeaseError(error, 'INVALID_ARGUMENT')).toBe(true);
    expect(ran).toBe(false);
    expect(r.ledger('job:1')).toEqual([]);
    expect(await r.store.inspect('job:1')).toEqual(before);
  });

  it('a callback that returns a promise is rolled back (its statements and the checkpoint) and refused', async () => {
    const r = await open();
    const lease = await mustClaim(r, 'a', 'job:1');
    const leases = r.leasesFor('a');
    const error = await leases
      .fencedWrite(
        lease,
        (tx) => {
          tx.run('INSERT INTO ledger (key, entry) VALUES (?, ?)', 'job:1', 'sync part');
          return Promise.resolve('later');
        },
        { checkpoint: { step: 1 } },
      )
      .catch((caught: unknown) => caught);
    expect(isLeaseError(error, 'INVALID_ARGUMENT')).toBe(true);
    expect(r.ledger('job:1')).toEqual([]);
    expect((await r.store.inspect('job:1')).checkpoint).toBeNull();
    // The connection is usable: the transaction was closed.
    expect(await leases.fencedWrite(lease, (tx) => tx.run('INSERT INTO ledger (key, entry) VALUES (?, ?)', 'job:1', 'ok'))).toMatchObject({
      ok: true,
    });
    expect(r.ledger('job:1')).toEqual(['ok']);
  });

  it('statements through the context after the callback returned are refused, not run outside the fence', async () => {
    const r = await open();
    const lease = await mustClaim(r, 'a', 'job:1');
    let escaped: { run(sql: string, ...params: (string | number | bigint | null)[]): unknown } | null = null;
    await r.leasesFor('a').fencedWriteOrThrow(lease, (tx) => {
      escaped = tx;
    });
    expect(() => escaped!.run('INSERT INTO ledger (key, entry) VALUES (?, ?)', 'job:1', 'late')).toThrow(/after the callback returned/);
    expect(r.ledger('job:1')).toEqual([]);
  });

  it('the write and its checkpoint commit together: a throwing callback leaves neither, a returning one both', async () => {
    const r = await open();
    const lease = await mustClaim(r, 'a', 'job:1');
    const leases = r.leasesFor('a');
    const boom = new Error('boom');
    await expect(
      leases.fencedWrite(
        lease,
        (tx) => {
          tx.run('INSERT INTO ledger (key, entry) VALUES (?, ?)', 'job:1', 'half');
          throw boom;
        },
        { checkpoint: { step: 1 } },
      ),
    ).rejects.toBe(boom);
    expect(r.ledger('job:1')).toEqual([]);
    expect((await r.store.inspect('job:1')).checkpoint).toBeNull();
    const done = await leases.fencedWrite(lease, (tx) => tx.run('INSERT INTO ledger (key, entry) VALUES (?, ?)', 'job:1', 'step 1'), {
      checkpoint: { step: 1 },
    });
    expect(done).toMatchObject({ ok: true, checkpoint: { json: '{"step":1}', token: lease.token } });
    expect(r.ledger('job:1')).toEqual(['step 1']);
    expect((await r.store.inspect('job:1')).checkpoint).toMatchObject({ json: '{"step":1}', token: lease.token });
  });

  it('a refused fenced write does not call the callback', async () => {
    const r = await open();
    const lease = await mustClaim(r, 'a', 'job:1', 1_000);
    r.clock.advance(1_000);
    let ran = false;
    const outcome = await r.leasesFor('a').fencedWrite(lease, () => {
      ran = true;
    });
    expect(outcome).toMatchObject({ ok: false, reason: 'expired' });
    expect(ran).toBe(false);
  });
});

describe('time: the host clock, and a floor under tokens', () => {
  it('by default a token is at least the store clock in microseconds', async () => {
    const r = await open();
    const store = createSqliteStore({ client: r.database });
    const before = BigInt(Date.now()) * 1000n;
    const claimed = await createLeases(store, { holder: 'a', ttlMs: 1_000 }).claim('job:1');
    if (!claimed.ok) throw new Error('refused');
    const { lease } = claimed;
    expect(lease.token >= before).toBe(true);
    expect(lease.token <= BigInt(Date.now()) * 1000n + 1n).toBe(true);
  });

  it('a database file restored from a backup never re-issues a token (the clock moved on)', async () => {
    const r = await open();
    const first = await mustClaim(r, 'a', 'job:1');
    r.database.exec(`VACUUM INTO '${r.path}.backup'`);
    const issued: bigint[] = [first.token];
    for (let i = 0; i < 5; i += 1) {
      r.clock.advance(1);
      await r.leasesFor('ops').revoke('job:1', { reason: 'test' });
      issued.push((await mustClaim(r, 'a', 'job:1')).token);
    }
    const restored = createSqliteStore({ client: new (await import('better-sqlite3')).default(`${r.path}.backup`), clock: r.clock });
    r.clock.advance(1);
    await createLeases(restored, { holder: 'ops', ttlMs: 1_000 }).revoke('job:1', { reason: 'restored' });
    const after = await createLeases(restored, { holder: 'b', ttlMs: 1_000 }).claim('job:1');
    expect(after.ok).toBe(true);
    if (after.ok) for (const token of issued) expect(after.lease.token > token).toBe(true);
  });

  propTest.prop(
    [
      fc.array(
        fc.oneof(
          fc.integer({ min: -5_000, max: 5_000 }).map((step) => ({ step })),
          fc.constantFrom('claim' as const, 'release' as const, 'revoke' as const),
        ),
        { maxLength: 40 },
      ),
    ],
    { numRuns: 100 },
  )(
    "with the clock stepping backwards and forwards, tokens of a key strictly increase and grants' intervals on the store clock never overlap",
    async (program) => {
      const r = await openSqliteRig();
      try {
        const issued: { token: bigint; acquiredAt: number; expiresAt: number; endedEarly: boolean }[] = [];
        let held: Awaited<ReturnType<typeof mustClaim>> | null = null;
        for (const action of program) {
          if (typeof action === 'object') r.clock.set(Math.max(0, r.clock() + action.step));
          else if (action === 'claim') {
            const claimed = await r.leasesFor(`w${issued.length}`, 1_000).claim('job:1');
            if (claimed.ok) {
              const previous = issued[issued.length - 1];
              if (previous !== undefined) expect(claimed.lease.token > previous.token).toBe(true);
              // The grants' intervals on the store clock are disjoint: a grant not ended early had expired.
              if (previous !== undefined && !previous.endedEarly)
                expect(claimed.lease.acquiredAt!).toBeGreaterThanOrEqual(previous.expiresAt);
              issued.push({
                token: claimed.lease.token,
                acquiredAt: claimed.lease.acquiredAt!,
                expiresAt: claimed.lease.expiresAt!,
                endedEarly: false,
              });
              held = claimed.lease;
            } else if (claimed.reason === 'held') {
              // The refusal is judged at the store's now: the grant it names is live then.
              expect(claimed.now < (claimed.expiresAt ?? Infinity)).toBe(true);
            }
          } else if (action === 'release' && held !== null) {
            const released = await r.leasesFor(held.holder, 1_000).release(held);
            const last = issued[issued.length - 1];
            if (released.ok && !released.alreadyReleased && last !== undefined) last.endedEarly = true;
          } else if (action === 'revoke') {
            const revoked = await r.leasesFor('ops').revoke('job:1', { reason: 'test' });
            const last = issued[issued.length - 1];
            if (revoked.ok && last !== undefined && revoked.revoked.token === last.token) last.endedEarly = true;
          }
        }
        expect(new Set(issued.map((grant) => grant.token)).size).toBe(issued.length);
      } finally {
        r.close();
      }
    },
  );

  it('a clock stepped backwards extends a live grant by the step (no takeover until the clock catches up); forwards shortens it', async () => {
    const r = await open();
    const lease = await mustClaim(r, 'a', 'job:1', 1_000);
    r.clock.advance(900);
    r.clock.set(r.clock() - 5_000);
    r.clock.advance(4_000);
    expect(await r.leasesFor('b').claim('job:1')).toMatchObject({ ok: false, reason: 'held', token: lease.token });
    expect(await r.leasesFor('a').fencedWrite(lease, () => 'still mine')).toMatchObject({ ok: true });
    r.clock.advance(1_100);
    const taken = await r.leasesFor('b').claim('job:1');
    expect(taken).toMatchObject({ ok: true });
    expect(await r.leasesFor('a').fencedWrite(lease, () => 'late')).toMatchObject({ ok: false, reason: 'superseded' });
  });
});

describe('a busy or closed database', () => {
  it("waits for another connection's write lock up to busyTimeoutMs, then fails with StoreUnavailableError and applies nothing", async () => {
    const r = await open({ busyTimeoutMs: 50 });
    const lease = await mustClaim(r, 'a', 'job:1');
    const other = r.connection();
    other.exec('BEGIN IMMEDIATE');
    try {
      const startedAt = Date.now();
      const error = await r
        .leasesFor('a')
        .fencedWrite(lease, (tx) => tx.run('INSERT INTO ledger (key, entry) VALUES (?, ?)', 'job:1', 'x'))
        .catch((caught: unknown) => caught);
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(40);
      expect(isLeaseError(error, 'STORE_UNAVAILABLE')).toBe(true);
      const cause = (error as Error).cause as Error & { code?: unknown };
      expect(cause.code).toBe('SQLITE_BUSY');
      expect(String((error as Error).message) + String(cause.message)).not.toContain(lease.fence().secret);
      await expect(r.leasesFor('b').claim('job:2')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    } finally {
      other.exec('ROLLBACK');
    }
    expect(r.ledger('job:1')).toEqual([]);
    expect((await r.store.inspect('job:2')).exists).toBe(false);
  });

  it('a closed connection fails with StoreUnavailableError', async () => {
    const r = await open();
    r.database.close();
    await expect(r.leasesFor('a').claim('job:1')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    await expect(r.store.inspect('job:1')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
  });
});

describe('validation before any I/O', () => {
  /** A database that records every call (and can run nothing). */
  const spyDatabase = (): SqliteClient & { calls: string[] } => {
    const calls: string[] = [];
    return {
      calls,
      exec: (sql) => void calls.push(sql),
      prepare: (sql) => {
        calls.push(sql);
        throw new Error('no I/O expected');
      },
    };
  };

  it('refuses a bad table name, a bad busy timeout, a missing connection, with InvalidArgumentError and no statement sent', () => {
    for (const options of [
      { table: 'leases; DROP TABLE x' },
      { table: 'sqlite_master' },
      { table: '' },
      { busyTimeoutMs: -1 },
      { busyTimeoutMs: 1.5 },
      { clock: 5 },
    ]) {
      const database = spyDatabase();
      expect(() => createSqliteStore({ client: database, ...(options as object) })).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      );
      expect(database.calls).toEqual([]);
    }
    expect(() => createSqliteStore({ client: {} as SqliteClient })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('the gate refuses a bad resource or handle with InvalidArgumentError before any statement', async () => {
    const database = spyDatabase();
    const gate = createSqliteTokenGate({ client: database });
    const fence = { key: 'job:1', token: 1n, secret: 'x'.repeat(32), holder: 'a', runId: null };
    await expect(gate.write('', fence, () => 1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(gate.write('r', { ...fence, token: 0n }, () => 1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(gate.write('r', fence, async () => 1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(gate.inspect('bad\u0000name')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(database.calls).toEqual([]);
    const r = await open();
    const storeGate = createSqliteTokenGate({ store: r.store });
    const tokenOnly = { key: 'job:1', token: 1n } as unknown as typeof fence;
    await expect(storeGate.write('r', tokenOnly, () => 1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('token gate', () => {
  const openGate = async (r: SqliteRig) => {
    const gate = createSqliteTokenGate({ store: r.store });
    await gate.migrate();
    r.database.exec('CREATE TABLE reports (id TEXT PRIMARY KEY, body TEXT NOT NULL)');
    return gate;
  };
  const putReport = (body: string) => (tx: { run(sql: string, ...params: (string | number | bigint | null)[]): unknown }) =>
    tx.run('INSERT INTO reports (id, body) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET body = excluded.body', 'r1', body);
  const report = (r: SqliteRig) =>
    (r.database.prepare('SELECT body FROM reports WHERE id = ?').get('r1') as { body: string } | undefined)?.body ?? null;

  it('orders writers by token: an older grant is refused (stale-token), another key is refused (key-mismatch)', async () => {
    const r = await open();
    const gate = await openGate(r);
    const first = await mustClaim(r, 'a', 'job:1', 1_000);
    r.clock.advance(1_000);
    const second = await mustClaim(r, 'b', 'job:1', 1_000);
    expect(await gate.write('report', second.fence(), putReport('from b'))).toMatchObject({ ok: true, token: second.token });
    // The first grant's fence fails first (full fence: the gate shares the lease store).
    expect(await gate.write('report', first.fence(), putReport('from a'))).toMatchObject({ ok: false, reason: 'superseded' });
    const tokenOnly = createSqliteTokenGate({ client: r.database });
    expect(await tokenOnly.write('report', first.fence(), putReport('from a'))).toMatchObject({
      ok: false,
      reason: 'stale-token',
      found: { key: 'job:1', token: second.token },
    });
    const other = await mustClaim(r, 'c', 'job:2');
    expect(await gate.write('report', other.fence(), putReport('from c'))).toMatchObject({
      ok: false,
      reason: 'key-mismatch',
      found: { key: 'job:1' },
    });
    expect(report(r)).toBe('from b');
    expect(await gate.inspect('report')).toEqual({ resource: 'report', found: { key: 'job:1', token: second.token } });
  });

  it('with the lease store, checks the full fence in the same transaction: a forged secret or an expired grant writes nothing', async () => {
    const r = await open();
    const gate = await openGate(r);
    const lease = await mustClaim(r, 'a', 'job:1', 1_000);
    const forged = { ...lease.fence(), secret: lease.fence().secret.replace(/^./, (c) => (c === '0' ? '1' : '0')) };
    expect(await gate.write('report', forged, putReport('forged'))).toMatchObject({ ok: false, reason: 'wrong-secret' });
    const guessed = { ...lease.fence(), token: lease.token + 1_000n };
    expect(await gate.write('report', guessed, putReport('guessed'))).toMatchObject({ ok: false, reason: 'not-held' });
    r.clock.advance(1_000);
    expect(await gate.write('report', lease.fence(), putReport('late'))).toMatchObject({ ok: false, reason: 'expired' });
    expect(report(r)).toBeNull();
    expect(await gate.inspect('report')).toEqual({ resource: 'report', found: null });
  });

  it('reset forgets a resource so another key may bind it; a throwing callback records nothing', async () => {
    const r = await open();
    const gate = await openGate(r);
    const a = await mustClaim(r, 'a', 'job:1');
    const b = await mustClaim(r, 'b', 'job:2');
    await expect(
      gate.write('report', a.fence(), () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await gate.inspect('report')).toEqual({ resource: 'report', found: null });
    expect(await gate.write('report', a.fence(), putReport('a'))).toMatchObject({ ok: true });
    expect(await gate.write('report', b.fence(), putReport('b'))).toMatchObject({ ok: false, reason: 'key-mismatch' });
    expect(await gate.reset('report')).toEqual({ ok: true, resource: 'report', found: { key: 'job:1', token: a.token } });
    expect(await gate.write('report', b.fence(), putReport('b'))).toMatchObject({ ok: true });
    expect(report(r)).toBe('b');
  });
});

describe('schema', () => {
  it('the exported DDL is what migrate() creates, and a store on a table made from it works', async () => {
    const r = await open();
    await createSqliteTokenGate({ store: r.store }).migrate();
    const created = (name: string) => (r.database.prepare('SELECT sql FROM sqlite_master WHERE name = ?').get(name) as { sql: string }).sql;
    // NOTE: SQLite keeps the DDL as run, less IF NOT EXISTS.
    const tables = [
      'leasefence_leases',
      'leasefence_leases_ready',
      'leasefence_leases_item_secret',
      'leasefence_leases_submissions',
      'leasefence_leases_floor',
    ];
    expect(sqliteLeaseSchemaSql().replaceAll('IF NOT EXISTS ', '')).toBe(tables.map((name) => `${created(name)};`).join('\n'));
    expect(sqliteGateSchemaSql().replace('IF NOT EXISTS ', '')).toBe(created('leasefence_gates'));
    expect(r.database.pragma('journal_mode', { simple: true })).toBe('wal');
    const own = new Database(':memory:');
    own.exec(sqliteLeaseSchemaSql('my_leases'));
    const store = createSqliteStore({ client: own, table: 'my_leases', clock: r.clock });
    expect(await createLeases(store, { holder: 'a', ttlMs: 1_000 }).claim('k')).toMatchObject({ ok: true });
    expect((await store.inspect('k')).now).toBe(SQLITE_EPOCH);
    own.close();
  });
});
