/**
 * Postgres specs that need several real connections at once (pg and postgres.js on a real server): the
 * first-claim race, the row lock that holds a takeover off while a fenced write runs, concurrent
 * migrations and gated upserts, and connections that die while a request waits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, gatedUpsert, type PostgresStore } from '../../src/adapters/postgres/index.js';
import { isStoreFailure, OutcomeUnknownError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { freshTable, openPostgresClient, sharedPostgresUrl, type OpenedClient, type PostgresClientKind } from './postgres-harness.js';
import { claimOf, fenceOf, submissionOf } from './postgres-record-specs.js';

const CONNECTIONS = 16;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function describePostgresConcurrencySpecs(kind: Exclude<PostgresClientKind, 'pglite'>): void {
  describe(`postgres adapter (${kind}) on ${CONNECTIONS} real connections`, () => {
    const table = freshTable(`lf_race_${kind.replace('-', '_')}`);
    let clients: OpenedClient[] = [];
    let stores: PostgresStore[] = [];
    let keyCount = 0;
    const fresh = (label: string) => `${label}:${++keyCount}`;
    const leasesOn = (index: number, holder: string, ttlMs = 60_000): Leases<PostgresStore> =>
      createLeases(stores[index]!, { holder, ttlMs });
    const admin = () => clients[0]!.client;
    const out = `"${table}_out"`;

    beforeAll(async () => {
      const url = await sharedPostgresUrl();
      clients = await Promise.all(Array.from({ length: CONNECTIONS }, () => openPostgresClient(kind, url, 1)));
      stores = clients.map(({ client }) => createPostgresStore({ client, table }));
      await stores[0]!.migrate();
      await admin().query(`CREATE TABLE ${out} (key text, token bigint, at timestamptz DEFAULT clock_timestamp())`);
      // NOTE: open every connection before the races, so that the claims leave at the same time.
      await Promise.all(stores.map((store) => store.inspect('warm-up')));
    });
    afterAll(async () => {
      await Promise.all(clients.map((opened) => opened.close()));
    });

    it(`exactly one of ${CONNECTIONS} racing first claims of a new key is granted, and exactly one of ${CONNECTIONS} racing takeovers`, async () => {
      for (let round = 0; round < 15; round += 1) {
        const key = fresh('race');
        const first = await Promise.all(stores.map((_, i) => leasesOn(i, `w${i}`).claim(key)));
        const winners = first.filter((outcome) => outcome.ok);
        expect(winners).toHaveLength(1);
        const winner = winners[0]!;
        const token = winner.ok ? winner.lease.token : 0n;
        for (const loser of first.filter((outcome) => !outcome.ok)) {
          expect(loser).toMatchObject({ ok: false, reason: 'held', token, holder: winner.ok ? winner.lease.holder : '' });
        }
        await admin().query(`UPDATE "${table}" SET expires_at = date_trunc('milliseconds', clock_timestamp()) WHERE key = $1`, [key]);
        const takeovers = await Promise.all(stores.map((_, i) => leasesOn(i, `t${i}`).claim(key)));
        const taken = takeovers.filter((outcome) => outcome.ok);
        expect(taken).toHaveLength(1);
        expect(taken[0]!.ok && taken[0]!.lease.token > token).toBe(true);
      }
    });

    /** Resolves once the server's clock has passed `expiresAt` (read without touching the lease row's locks). */
    const untilServerPast = async (expiresAt: number | null): Promise<void> => {
      for (;;) {
        const { rows } = await admin().query(`SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS now`);
        if (Number((rows[0] as { now: string }).now) > (expiresAt ?? Number.POSITIVE_INFINITY)) return;
        await sleep(20);
      }
    };

    it('a fenced write whose grant expires mid-transaction holds off the takeover until it ends, and is refused (expired) with nothing applied', async () => {
      const key = fresh('hold');
      const a = leasesOn(1, 'a', 1_000);
      const b = leasesOn(2, 'b');
      const lease = await a.claimOrThrow(key);
      const events: string[] = [];
      let takeover: ReturnType<typeof b.claim> | null = null;
      const write = await a.fencedWrite(lease, async (tx) => {
        await tx.query(`INSERT INTO ${out} (key, token) VALUES ($1, $2)`, [key, tx.token.toString()]);
        await untilServerPast(lease.expiresAt); // the grant expires while the write is under way
        takeover = b.claim(key).then((outcome) => {
          events.push('takeover done');
          return outcome;
        });
        await sleep(100);
        events.push('write ends');
        // NOTE: past the grant's deadline the write context refuses to send, and the write is refused.
        await tx.query(`INSERT INTO ${out} (key, token) VALUES ($1, $2)`, [key, tx.token.toString()]);
      });
      expect(write).toMatchObject({ ok: false, reason: 'expired', expected: { token: lease.token } });
      const claimed = await takeover!;
      expect(events).toEqual(['write ends', 'takeover done']);
      expect(claimed).toMatchObject({ ok: true, previous: { kind: 'expired', token: lease.token } });
      const stale = await a.fencedWrite(lease, (tx) =>
        tx.query(`INSERT INTO ${out} (key, token) VALUES ($1, $2)`, [key, tx.token.toString()]),
      );
      expect(stale).toMatchObject({
        ok: false,
        reason: 'superseded',
        expected: { token: lease.token },
        found: { token: claimed.ok ? claimed.lease.token : 0n, holder: 'b' },
      });
      expect((await admin().query(`SELECT count(*)::int AS n FROM ${out} WHERE key = $1`, [key])).rows).toEqual([{ n: 0 }]);
    });

    it("a fenced statement holds off an operator's revoke while it runs; the revoked grant's next statement is refused", async () => {
      const key = fresh('statement-hold');
      const a = leasesOn(3, 'a');
      const lease = await a.claimOrThrow(key);
      const slow = `INSERT INTO ${out} (key, token) SELECT fence.key, fence.token FROM fence, pg_sleep(0.4) RETURNING floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS at`;
      // NOTE: the writer's connection is found by its pid: pg_stat_activity truncates the long wrapped statement.
      const { rows: pids } = await clients[3]!.client.query('SELECT pg_backend_pid() AS pid');
      const pid = (pids[0] as { pid: number }).pid;
      const write = stores[3]!.fencedStatement<{ at: string }>(lease, slow);
      for (let sleeping = false; !sleeping; await sleep(10)) {
        const { rows } = await admin().query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND pid = $1`, [
          pid,
        ]);
        sleeping = (rows[0] as { n: number }).n > 0;
      }
      const revoked = await leasesOn(4, 'ops').revoke(key, { reason: 'maintenance' });
      const written = await write;
      expect(written).toMatchObject({ ok: true, rowCount: 1 });
      expect(revoked.ok && revoked.now).toBeGreaterThanOrEqual(Number(written.ok && written.rows[0]!.at));
      const refused = await stores[3]!.fencedStatement(
        lease,
        `INSERT INTO ${out} (key, token) SELECT fence.key, fence.token FROM fence RETURNING 1`,
      );
      expect(refused).toMatchObject({ ok: false, reason: 'revoked', found: { ending: { kind: 'revoked', reason: 'maintenance' } } });
    });

    /**
     * Runs `operation` while another transaction holds the key's row with `change` applied but not
     * committed; commits it once `operation` waits for the row lock; returns what `operation` answered,
     * after checking that its store time was read after the wait (not before the commit).
     */
    const behindUncommittedUpdate = async <T extends { now: number }>(
      key: string,
      change: string,
      operation: () => Promise<T>,
    ): Promise<T> => {
      const holding = await openPostgresClient('pg-pool', await sharedPostgresUrl(), 1);
      try {
        const connection = await (holding.client.connect as NonNullable<typeof holding.client.connect>).call(holding.client);
        try {
          await connection.query('BEGIN');
          await connection.query(`UPDATE "${table}" SET ${change} WHERE key = $1`, [key]);
          const answer = operation();
          let settled = false;
          void answer.then(
            () => (settled = true),
            () => (settled = true),
          );
          // NOTE: wait for the condition (a backend waiting for a tuple or transaction lock on this key's row), not a duration.
          let waiting = false;
          while (!waiting && !settled) {
            const { rows } = await admin().query(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
              [`%${table}%`],
            );
            waiting = (rows[0] as { n: number }).n > 0;
            if (!waiting) await sleep(5);
          }
          if (!waiting)
            throw new Error(
              `the operation answered without waiting for the row lock: ${JSON.stringify(await answer, (_, value: unknown) => (typeof value === 'bigint' ? String(value) : value))}`,
            );
          const { rows } = await connection.query(`SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS at`);
          await connection.query('COMMIT');
          const answered = await answer;
          expect(answered.now).toBeGreaterThanOrEqual(Number((rows[0] as { at: string }).at));
          return answered;
        } finally {
          connection.release();
        }
      } finally {
        await holding.close();
      }
    };

    // NOTE: each statement's snapshot still shows the version before the other transaction's commit; it must
    // decide and write on the newest one (the one `pre` locked). Two rewrites that fail here were measured
    // (BENCHMARKS.md): an UPDATE that reaches its row by `pre`'s ctid misses it (invisible to the snapshot),
    // and an UPDATE that states its conditions on its own row instead of `pre` filters the old version out
    // before EvalPlanQual could recheck the new one; either way the adapter fails with "disagrees with the core".
    it('renew, checkpoint and release that wait behind an uncommitted update of their row decide on the version it commits', async () => {
      const key = fresh('epq');
      const a = leasesOn(6, 'a');
      const lease = await a.claimOrThrow(key);
      const renewed = await behindUncommittedUpdate(key, `ending_reason = 'touched 1'`, () =>
        stores[6]!.renew({ fence: lease.fence(), ttlMs: 120_000 }),
      );
      expect(renewed).toMatchObject({ ok: true, token: lease.token });
      const saved = await behindUncommittedUpdate(key, `ending_reason = 'touched 2'`, () =>
        stores[6]!.checkpoint({ fence: lease.fence(), json: '{"step":1}' }),
      );
      expect(saved).toMatchObject({ ok: true, checkpoint: { token: lease.token } });
      const released = await behindUncommittedUpdate(key, `ending_reason = 'touched 3'`, () =>
        stores[6]!.release({ fence: lease.fence() }),
      );
      expect(released).toMatchObject({ ok: true, token: lease.token, alreadyReleased: false });
      const after = await a.inspect(key);
      expect(after).toMatchObject({
        grant: null,
        ending: { kind: 'released', token: lease.token, holder: 'a' },
        checkpoint: { token: lease.token },
      });
      // The other transaction supersedes the grant: the waiting release is refused on the version it committed.
      const again = await a.claimOrThrow(key);
      const refused = await behindUncommittedUpdate(key, `token = token + 5`, () => stores[6]!.release({ fence: again.fence() }));
      expect(refused).toMatchObject({ ok: false, reason: 'superseded', found: { token: again.token + 5n } });
      // The snapshot's version has expired and the committed one is live again: the release applies.
      const third = await leasesOn(7, 'c').claimOrThrow(fresh('epq-live-again'));
      await admin().query(
        `UPDATE "${table}" SET expires_at = date_trunc('milliseconds', clock_timestamp()) - interval '1 second' WHERE key = $1`,
        [third.key],
      );
      const revived = await behindUncommittedUpdate(
        third.key,
        `expires_at = date_trunc('milliseconds', clock_timestamp()) + interval '1 minute'`,
        () => stores[7]!.release({ fence: third.fence() }),
      );
      expect(revived).toMatchObject({ ok: true, token: third.token, alreadyReleased: false });
    });

    it('migrate is safe when many processes run it at once', async () => {
      const concurrent = freshTable('lf_migrate');
      const migrating = clients.map(({ client }) => createPostgresStore({ client, table: concurrent }));
      await Promise.all(migrating.map((store) => store.migrate()));
      await Promise.all(migrating.map((store) => store.migrate()));
      const lease = await createLeases(migrating[5]!, { holder: 'm' }).claimOrThrow('k');
      expect((await createLeases(migrating[0]!, { holder: 'm' }).inspect('k')).grant?.token).toBe(lease.token);
    });

    it('concurrent gated upserts leave the highest token on the row; every refused write carried a lower one', async () => {
      const reports = freshTable('lf_gated');
      await admin().query(`CREATE TABLE "${reports}" (id int PRIMARY KEY, body text, fence_key text, fence_token bigint)`);
      const tokens = clients.map((_, i) => BigInt(((i * 7) % CONNECTIONS) + 1));
      const outcomes = await Promise.all(
        clients.map(({ client }, i) =>
          gatedUpsert(client, {
            table: reports,
            identity: { id: 1 },
            values: { body: `t${tokens[i]}` },
            lease: { key: 'r', token: tokens[i]! },
            leaseTable: null,
          }),
        ),
      );
      const highest = tokens.reduce((a, b) => (a > b ? a : b));
      expect((await admin().query(`SELECT body, fence_token::text AS token FROM "${reports}"`)).rows).toEqual([
        { body: `t${highest}`, token: String(highest) },
      ]);
      for (const outcome of outcomes) if (!outcome.ok) expect(outcome.expected.token < (outcome.found.token as bigint)).toBe(true);
    });

    it('setKeyState racing claims, renews and fenced writes on 16 connections: no write under a state lands after the state moved', async () => {
      const key = fresh('state-race');
      const log = `"${table}_state_log"`;
      await admin().query(`CREATE TABLE ${log} (id bigserial PRIMARY KEY, kind text NOT NULL, rev int NOT NULL, token bigint)`);
      const REVS = 40;
      let done = false;
      const refusals = new Map<string, number>();
      const count = (reason: string) => refusals.set(reason, (refusals.get(reason) ?? 0) + 1);
      let lastWritten = 0;
      const writer = async () => {
        for (let rev = 1; rev <= REVS; rev += 1) {
          // NOTE: let the workers write under the previous value first (up to 50 ms), so every change races them.
          for (let waited = 0; rev > 1 && lastWritten < rev - 1 && waited < 50; waited += 1) await sleep(1);
          const outcome = await stores[0]!.setKeyState({ key, values: { rev: String(rev) }, by: 'scanner' });
          expect(outcome.changed).toEqual(['rev']);
          await admin().query(`INSERT INTO ${log} (kind, rev) VALUES ('set', $1)`, [rev]);
          await sleep(Math.random() * 4);
        }
        done = true;
      };
      const worker = async (index: number) => {
        const store = stores[index]!;
        while (!done) {
          const rev = (await store.inspect(key)).state['rev'];
          if (rev === undefined) continue;
          const command = claimOf(key, `w${index}`, { expect: { rev } });
          const claimed = await store.claim(command);
          if (!claimed.ok) {
            count(claimed.reason);
            continue;
          }
          const fence = fenceOf(command, claimed);
          const renewed = await store.renew({ fence, ttlMs: 60_000 });
          // NOTE: a grant a key-state change ended says so, or superseded once another worker claimed the key.
          if (!renewed.ok) {
            expect(['state-changed', 'superseded']).toContain(renewed.reason);
            if (renewed.reason === 'state-changed') expect(renewed.attribute).toMatchObject({ name: 'rev', expected: rev });
            count(`renew ${renewed.reason}`);
            continue;
          }
          const wrote = await store.fencedWrite(fence, async (tx) => {
            await tx.query(`INSERT INTO ${log} (kind, rev, token) VALUES ('write', $1, $2)`, [Number(rev), fence.token.toString()]);
          });
          if (!wrote.ok) {
            expect(['state-changed', 'superseded']).toContain(wrote.reason);
            count(`write ${wrote.reason}`);
            continue;
          }
          lastWritten = Math.max(lastWritten, Number(rev));
          await store.release({ fence });
        }
      };
      await Promise.all([writer(), ...Array.from({ length: 8 }, (_, i) => worker(i + 1))]);
      // NOTE: the race happened: claims met changed values, or grants were ended while their holders worked.
      expect(refusals.size).toBeGreaterThan(0);
      const rows = (await admin().query(`SELECT id::int AS id, kind, rev FROM ${log} ORDER BY id`)).rows as Array<{
        id: number;
        kind: string;
        rev: number;
      }>;
      const setAt = new Map(rows.filter((row) => row.kind === 'set').map((row) => [row.rev, row.id]));
      const writes = rows.filter((row) => row.kind === 'write');
      expect(writes.length).toBeGreaterThanOrEqual(REVS / 4);
      for (const write of writes) {
        // NOTE: a write's transaction holds the lease row until it commits, and setKeyState waits for it, so
        // a write under rev r takes its id before the change to r + 1 commits (and is logged).
        const next = setAt.get(write.rev + 1);
        if (next !== undefined) expect(write.id).toBeLessThan(next);
      }
      expect((await stores[0]!.inspect(key)).state).toEqual({ rev: String(REVS) });
    });

    it('a submission retried at once from 16 connections is recorded once: one write applies, the others are replayed or conflict', async () => {
      const key = fresh('submit-race');
      const command = claimOf(key, 'holder');
      const fence = fenceOf(command, await stores[0]!.claim(command));
      for (let round = 0; round < 8; round += 1) {
        const runId = `run-${round}`;
        const statementForm = round % 2 === 1;
        const payloadOf = (i: number) => (round >= 4 && i % 3 === 0 ? 'other' : 'payload');
        const outcomes = await Promise.all(
          stores.map(async (store, i) => {
            const submission = submissionOf(runId, payloadOf(i));
            if (!statementForm) {
              return store.fencedWrite(
                fence,
                async (tx) => {
                  await tx.query(`INSERT INTO ${out} (key, token) VALUES ($1, $2)`, [`${key}/${runId}`, i]);
                  return i;
                },
                { submission },
              );
            }
            const lease = createLeases(store, { holder: fence.holder }).restore({
              ...fence,
              token: fence.token.toString(),
              storeId: store.id,
              expiresAt: null,
              attributes: {},
            });
            return store.fencedStatement(
              lease,
              `INSERT INTO ${out} (key, token) SELECT $1, $2 FROM fence RETURNING 1`,
              [`${key}/${runId}`, i],
              {
                submission,
              },
            );
          }),
        );
        const applied = outcomes.filter((outcome) => outcome.ok);
        expect(applied).toHaveLength(1);
        const winner = outcomes.indexOf(applied[0]!);
        outcomes.forEach((outcome, i) => {
          if (i === winner) return;
          expect(outcome).toMatchObject({ ok: false, reason: payloadOf(i) === payloadOf(winner) ? 'replayed' : 'replay-conflict' });
        });
        const { rows } = await admin().query(`SELECT token FROM ${out} WHERE key = $1`, [`${key}/${runId}`]);
        expect(rows.map((row) => Number((row as { token: string }).token))).toEqual([winner]);
      }
    });

    it('40 distinct submissions racing on 16 connections are all recorded, numbered without gaps, and the key keeps the newest 32', async () => {
      const key = fresh('submit-many');
      const command = claimOf(key, 'holder');
      const fence = fenceOf(command, await stores[0]!.claim(command));
      const outcomes = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          stores[i % stores.length]!.fencedWrite(fence, () => i, { submission: submissionOf(`run-${i}`, 'p') }),
        ),
      );
      expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
      const { rows } = await admin().query(`SELECT seq::int AS seq FROM "${table}_submissions" WHERE key = $1 ORDER BY seq`, [key]);
      expect(rows.map((row) => (row as { seq: number }).seq)).toEqual(Array.from({ length: 32 }, (_, i) => i + 9));
    });

    it('remove racing claims, fenced writes and key-state writes on 16 connections: no token is issued twice, and tokens rise in write order', async () => {
      const key = fresh('remove-race');
      const log = `"${table}_remove_log"`;
      await admin().query(`CREATE TABLE ${log} (id bigserial PRIMARY KEY, token bigint NOT NULL)`);
      let done = false;
      const granted: bigint[] = [];
      const remover = async () => {
        for (let round = 0; round < 60; round += 1) {
          await stores[0]!.remove({ key, force: round % 2 === 0, expectedToken: null });
          if (round % 5 === 0) await stores[0]!.setKeyState({ key, values: { round: String(round) }, by: 'operator' });
          await sleep(Math.random() * 2);
        }
        done = true;
      };
      const worker = async (index: number) => {
        while (!done) {
          const command = claimOf(key, `w${index}`);
          const claimed = await stores[index]!.claim(command);
          if (!claimed.ok) continue;
          const fence = fenceOf(command, claimed);
          granted.push(fence.token);
          await stores[index]!.fencedWrite(fence, async (tx) => {
            await tx.query(`INSERT INTO ${log} (token) VALUES ($1)`, [fence.token.toString()]);
          });
          await stores[index]!.release({ fence });
        }
      };
      await Promise.all([remover(), ...Array.from({ length: 8 }, (_, i) => worker(i + 1))]);
      expect(granted.length).toBeGreaterThan(10);
      expect(new Set(granted).size).toBe(granted.length);
      // NOTE: a fenced write runs while its grant is the key's current one, so writes in id order carry rising tokens.
      const tokens = ((await admin().query(`SELECT token::text AS token FROM ${log} ORDER BY id`)).rows as Array<{ token: string }>).map(
        (row) => BigInt(row.token),
      );
      for (let i = 1; i < tokens.length; i += 1) expect(tokens[i]! >= tokens[i - 1]!).toBe(true);
    });

    it('first claims racing a remove within one millisecond: a claim whose insert follows another first grant and its removal still mints above it (no token twice)', async () => {
      // NOTE: seen once in CI (a token issued twice in the race above): claim A reads the removed-token floor, claim
      // B inserts the key's row (token: the clock's millisecond * 1000), a remove deletes it and raises the floor,
      // then A's insert meets no row and minted from the floor it read before, in the same millisecond as B: B's
      // token again. Here the remover removes with no pause, while 15 workers claim and release at once.
      const key = fresh('first-claims');
      let done = false;
      const granted: bigint[] = [];
      const remover = async () => {
        const until = performance.now() + 2_000;
        while (performance.now() < until) await stores[0]!.remove({ key, force: true, expectedToken: null });
        done = true;
      };
      const worker = async (index: number) => {
        while (!done) {
          const command = claimOf(key, `w${index}`);
          const claimed = await stores[index]!.claim(command);
          if (!claimed.ok) continue;
          granted.push(claimed.token);
          await stores[index]!.release({ fence: fenceOf(command, claimed) });
        }
      };
      await Promise.all([remover(), ...Array.from({ length: CONNECTIONS - 1 }, (_, i) => worker(i + 1))]);
      expect(granted.length).toBeGreaterThan(50);
      const counts = new Map<bigint, number>();
      for (const token of granted) counts.set(token, (counts.get(token) ?? 0) + 1);
      expect([...counts].filter(([, count]) => count > 1).map(([token]) => token)).toEqual([]);
    });

    it('a claim whose connection is terminated while it waits for the lease row fails with OutcomeUnknownError and leaves the lease whole', async () => {
      const key = fresh('terminated');
      const a = leasesOn(5, 'a', 500);
      const lease = await a.claimOrThrow(key);
      let entered!: () => void;
      let finish!: () => void;
      const inCallback = new Promise<void>((resolve) => (entered = resolve));
      const finished = new Promise<void>((resolve) => (finish = resolve));
      const write = a.fencedWrite(lease, async () => {
        entered();
        await finished;
      });
      try {
        await inCallback;
        await untilServerPast(lease.expiresAt);
        // NOTE: the claimer's connection is found by its pid (pg_stat_activity truncates long statement texts).
        const { rows: pids } = await clients[6]!.client.query('SELECT pg_backend_pid() AS pid');
        const pid = (pids[0] as { pid: number }).pid;
        const failure = createLeases(stores[6]!, { holder: 'b' })
          .claim(key)
          .then(
            () => null,
            (error: unknown) => error,
          );
        let killed = 0;
        for (let attempt = 0; attempt < 400 && killed === 0; attempt += 1) {
          await sleep(20);
          const { rows } = await admin().query(
            `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid = $1`,
            [pid],
          );
          killed = rows.length;
        }
        expect(killed).toBe(1);
        expect(await failure).toBeInstanceOf(OutcomeUnknownError);
      } finally {
        finish();
      }
      // NOTE: the grant expired while the transaction waited: the write is refused (or its session was
      // already ended by the transaction's bound), never applied.
      const ended = await write.then(
        (outcome) => outcome,
        (error: unknown) => error,
      );
      expect((ended as { ok?: boolean }).ok === false || isStoreFailure(ended)).toBe(true);
      expect(await a.inspect(key)).toMatchObject({ token: lease.token, grant: { holder: 'a', token: lease.token } });
    });
  });
}
