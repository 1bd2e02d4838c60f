/**
 * Postgres failover (issue 14.3): a real primary with an asynchronous streaming standby. Grants, fenced
 * writes and gate writes run on the primary in three phases: replicated and replayed (A), received by
 * the standby while its replay is paused (B), and never received (C: the standby is detached, as a
 * lagging asynchronous replica). Then the primary crashes and the standby is promoted. The promoted
 * server has A and B and has lost C, and still:
 * - the next token is greater than every token issued on the primary, C's included (the clock floor);
 * - the stale holder (C's last grant) is refused by fenced writes and the gate on the promoted server,
 *   and by a token gate on a separate resource store that saw C's token;
 * - the old mint (`last + 1`, copied below) would have re-issued C's first token, and the separate gate
 *   would then have refused the new holder and accepted the stale one (the bug the floor fixes).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, createPostgresTokenGate, type PostgresTokenGate } from '../../src/adapters/postgres/index.js';
import { createLeases } from '../../src/leases.js';
import type { Lease } from '../../src/lease.js';
import { freshTable, sharedPostgresUrl } from '../adapters/postgres-harness.js';
import {
  startPostgresReplica,
  startReplicationPrimary,
  takeBaseBackup,
  type BaseBackup,
  type CopiedServer,
} from '../support/postgres-replica.js';
import { scaled } from '../support/scale.js';

/** The token expression of the claim before the floor (claim-rule.ts until issue 14), kept to document the bug. */
const LEGACY_MINT = (previous: string): string => `${previous} OPERATOR(pg_catalog.+) 1::bigint`;

/** A grant's token as the claim before the floor minted it, on the row of `key` (which it locks). */
const LEGACY_CLAIM = `UPDATE leasefence_leases SET token = ${LEGACY_MINT('token')} WHERE key = $1 RETURNING token::text AS token`;

const KEY = 'job';
/** A key whose grants mint with `LEGACY_CLAIM`, beside KEY's, in the same phases. */
const LEGACY_KEY = 'job:legacy';

/** What one promotion did and saw (RELIABILITY.md's promotion table sums these). */
interface PromotionFigures {
  readonly grants: number;
  readonly grantsLost: number;
  readonly writesAcknowledged: number;
  readonly writesLost: number;
  readonly staleRefused: number;
  /** A token not above every earlier one, or a stale holder's write that landed. */
  readonly violations: number;
  /** The same phases with the old mint: tokens issued twice, stale gate writes accepted. */
  readonly legacyReissued: number;
  readonly legacyStaleAccepted: number;
  readonly takeoverMs: number;
}

/**
 * One primary + standby, the three phases, the crash and the promotion, with every assertion; the pair
 * and the pools are stopped whatever happens. `run` names this promotion's resources in the shared gate.
 */
async function promoteOnce(resourceGate: PostgresTokenGate, run: number): Promise<PromotionFigures> {
  const report = `report:${run}`;
  const legacyReport = `report:legacy:${run}`;
  const pair = await startPostgresReplica();
  const primaryPool = new pg.Pool({ connectionString: pair.primary.url, max: 2 });
  // NOTE: the primary's crash ends these connections; the pool must not crash the worker.
  primaryPool.on('error', () => undefined);
  let promotedPool: pg.Pool | null = null;
  try {
    const store = createPostgresStore({ client: primaryPool });
    await store.migrate();
    const gate = createPostgresTokenGate({ client: primaryPool });
    await gate.migrate();
    await primaryPool.query('CREATE TABLE work_out (seq serial PRIMARY KEY, key text NOT NULL, token bigint NOT NULL, note text NOT NULL)');
    const issued: bigint[] = [];
    const legacyIssued: bigint[] = [];
    await primaryPool.query(`INSERT INTO leasefence_leases (key, token) VALUES ($1, 0)`, [LEGACY_KEY]);
    const legacyClaim = async (pool: pg.Pool): Promise<bigint> =>
      BigInt((await pool.query<{ token: string }>(LEGACY_CLAIM, [LEGACY_KEY])).rows[0]!.token);

    /** One grant on the primary: claim, a fenced write, gate writes (both gates), then release unless kept. */
    const round = async (worker: string, note: string, keep = false): Promise<Lease> => {
      const leases = createLeases(store, { holder: worker, ttlMs: 60_000 });
      const lease = await leases.claimOrThrow(KEY);
      issued.push(lease.token);
      await leases.fencedWriteOrThrow(lease, (tx) =>
        tx.query('INSERT INTO work_out (key, token, note) VALUES ($1, $2, $3)', [KEY, tx.token.toString(), note]),
      );
      await leases.gateWriteOrThrow(gate, report, lease, () => undefined);
      expect(await resourceGate.write(report, { key: KEY, token: lease.token }, () => undefined)).toMatchObject({ ok: true });
      const legacy = await legacyClaim(primaryPool);
      legacyIssued.push(legacy);
      expect(await resourceGate.write(legacyReport, { key: LEGACY_KEY, token: legacy }, () => undefined)).toMatchObject({ ok: true });
      if (!keep) await leases.release(lease);
      return lease;
    };

    await round('w-a', 'A');
    await pair.waitForStandby('replayed');
    await pair.pauseReplay();
    await round('w-b', 'B');
    await pair.waitForStandby('received');
    await pair.detachStandby();
    await round('w-c1', 'C1');
    await round('w-c2', 'C2');
    const stale = await round('w-c3', 'C3', true);
    const highest = issued.reduce((a, b) => (a > b ? a : b));
    expect(stale.token).toBe(highest);

    const crashedAt = performance.now();
    await pair.crashPrimary();
    await pair.promote();
    const promotedAfterMs = performance.now() - crashedAt;
    promotedPool = new pg.Pool({ connectionString: pair.standby.url, max: 2 });
    promotedPool.on('error', () => undefined);
    const promoted = createPostgresStore({ client: promotedPool });
    const promotedGate = createPostgresTokenGate({ client: promotedPool });

    const claimStartedAt = performance.now();
    const next = await createLeases(promoted, { holder: 'w-new', ttlMs: 60_000 }).claimOrThrow(KEY);
    // NOTE: takeover = crash to promoted + the first claim (not the pool's set-up).
    const takeoverMs = promotedAfterMs + (performance.now() - claimStartedAt);

    // What the promotion lost: phase C (never received). A and B survived (B was received while paused).
    const survived = (await promotedPool.query<{ note: string }>('SELECT note FROM work_out ORDER BY seq')).rows.map((row) => row.note);
    expect(survived).toEqual(['A', 'B']);
    expect(next.previous).toMatchObject({ kind: 'released', token: issued[1], holder: 'w-b' });
    expect(await promotedGate.inspect(report)).toMatchObject({ found: { key: KEY, token: issued[1] } });

    // The floor: above every token issued, including the three the promoted server never saw.
    expect(next.token > highest).toBe(true);
    expect((await createLeases(promoted, { holder: 'w-new' }).inspect(KEY)).grant?.token).toBe(next.token);

    // The stale holder (C's last grant, which the promoted server never saw) is refused everywhere.
    const staleFence = stale.fence();
    const staleWrite = await promoted.fencedWrite(staleFence, (tx) =>
      tx.query('INSERT INTO work_out (key, token, note) VALUES ($1, $2, $3)', [KEY, staleFence.token.toString(), 'stale']),
    );
    expect(staleWrite).toMatchObject({
      ok: false,
      reason: 'superseded',
      expected: { token: stale.token },
      found: { token: next.token, holder: 'w-new' },
    });
    const staleGate = await promotedGate.write(report, staleFence, () => undefined);
    expect(staleGate).toMatchObject({ ok: false });
    expect(await promotedGate.inspect(report)).toMatchObject({ found: { token: issued[1] } });
    const fresh = next.fence();
    expect(
      await promoted.fencedWrite(fresh, (tx) =>
        tx.query('INSERT INTO work_out (key, token, note) VALUES ($1, $2, $3)', [KEY, fresh.token.toString(), 'new']),
      ),
    ).toMatchObject({ ok: true });
    expect(await promotedGate.write(report, fresh, () => undefined)).toMatchObject({ ok: true, token: next.token });
    expect(await resourceGate.write(report, { key: KEY, token: next.token }, () => undefined)).toMatchObject({
      ok: true,
      token: next.token,
    });
    const staleRefused = await resourceGate.write(report, { key: KEY, token: stale.token }, () => undefined);
    expect(staleRefused).toMatchObject({
      ok: false,
      reason: 'stale-token',
      found: { key: KEY, token: next.token },
    });
    expect((await promotedPool.query<{ note: string }>('SELECT note FROM work_out ORDER BY seq')).rows.map((row) => row.note)).toEqual([
      'A',
      'B',
      'new',
    ]);

    // WITHOUT the floor, the same scenario: the old mint on the promoted row re-issues the token of C's first
    // grant, and the separate gate, which saw C's tokens, refuses that new holder and accepts the stale one.
    const legacy = await legacyClaim(promotedPool);
    expect(legacy).toBe(legacyIssued[2]);
    expect(await resourceGate.write(legacyReport, { key: LEGACY_KEY, token: legacy }, () => undefined)).toMatchObject({
      ok: false,
      reason: 'stale-token',
    });
    const legacyStale = await resourceGate.write(legacyReport, { key: LEGACY_KEY, token: legacyIssued[4]! }, () => undefined);
    expect(legacyStale).toMatchObject({ ok: true });

    const staleOutcomes = [staleWrite, staleGate, staleRefused];
    return {
      grants: issued.length + 1,
      grantsLost: issued.length - issued.filter((token) => token <= (next.previous?.token ?? 0n)).length,
      writesAcknowledged: issued.length + 1,
      writesLost: issued.length - survived.length,
      staleRefused: staleOutcomes.filter((outcome) => !outcome.ok).length,
      violations: (next.token > highest ? 0 : 1) + staleOutcomes.filter((outcome) => outcome.ok).length,
      legacyReissued: issued.length === legacyIssued.length && legacyIssued.includes(legacy) ? 1 : 0,
      legacyStaleAccepted: legacyStale.ok ? 1 : 0,
      takeoverMs,
    };
  } finally {
    await primaryPool.end().catch(() => undefined);
    await promotedPool?.end();
    await pair.stop();
  }
}

/** Promotions per run: 1 in `npm test`; more for RELIABILITY.md's figures. */
const PROMOTIONS = scaled(1);

describe('postgres promotion of an asynchronous standby that missed grants', () => {
  let resourcePool: pg.Pool;
  let resourceGate: PostgresTokenGate;
  beforeAll(async () => {
    resourcePool = new pg.Pool({ connectionString: await sharedPostgresUrl(), max: 2 });
    resourcePool.on('error', () => undefined);
    resourceGate = createPostgresTokenGate({ client: resourcePool, table: freshTable('lf_resource_gate'), leaseTable: null });
    await resourceGate.migrate();
  });
  afterAll(async () => {
    await resourcePool?.end();
  });

  it(
    'the promoted server mints tokens above every token the old primary issued, and the stale holder is refused everywhere',
    async () => {
      const figures: PromotionFigures[] = [];
      for (let run = 0; run < PROMOTIONS; run += 1) figures.push(await promoteOnce(resourceGate, run));
      const sum = (name: keyof PromotionFigures): number => figures.reduce((total, figure) => total + figure[name], 0);
      const takeovers = figures.map((figure) => figure.takeoverMs).sort((a, b) => a - b);
      const percentile = (p: number): string =>
        (takeovers[Math.min(takeovers.length - 1, Math.ceil((p / 100) * takeovers.length) - 1)]! / 1000).toFixed(2);
      console.info(
        `postgres promotion x${PROMOTIONS}: grants ${sum('grants')} (lost ${sum('grantsLost')}), writes acknowledged ${sum('writesAcknowledged')} (lost ${sum('writesLost')}), ` +
          `stale writes refused ${sum('staleRefused')}, violations ${sum('violations')}; old mint: tokens re-issued ${sum('legacyReissued')}, stale gate writes accepted ${sum('legacyStaleAccepted')}; ` +
          `crash to first grant p50 ${percentile(50)} s, p99 ${percentile(99)} s`,
      );
      expect(sum('violations')).toBe(0);
    },
    60_000 + PROMOTIONS * 60_000,
  );

  it('a base backup restored after more grants mints tokens above every token issued after the backup, and the stale holder is refused', async () => {
    const primary = await startReplicationPrimary();
    const primaryPool = new pg.Pool({ connectionString: primary.url, max: 2 });
    primaryPool.on('error', () => undefined);
    let backup: BaseBackup | null = null;
    let restored: CopiedServer | null = null;
    let restoredPool: pg.Pool | null = null;
    const resource = 'report:restore';
    try {
      const store = createPostgresStore({ client: primaryPool });
      await store.migrate();
      const before = createLeases(store, { holder: 'w-0', ttlMs: 60_000 });
      const first = await before.claimOrThrow(KEY);
      await before.release(first);
      backup = await takeBaseBackup(primary);
      const issued: Lease[] = [];
      for (const worker of ['w-1', 'w-2', 'w-3']) {
        const leases = createLeases(store, { holder: worker, ttlMs: 60_000 });
        const lease = await leases.claimOrThrow(KEY);
        issued.push(lease);
        expect(await resourceGate.write(resource, { key: KEY, token: lease.token }, () => undefined)).toMatchObject({ ok: true });
        if (worker !== 'w-3') await leases.release(lease);
      }
      const stale = issued[issued.length - 1]!;
      await primaryPool.end();
      await primary.stop();

      restored = await backup.restore();
      restoredPool = new pg.Pool({ connectionString: restored.url, max: 2 });
      restoredPool.on('error', () => undefined);
      const restoredStore = createPostgresStore({ client: restoredPool });
      await restoredStore.migrate();
      const leases = createLeases(restoredStore, { holder: 'w-new', ttlMs: 60_000 });
      expect(await leases.inspect(KEY)).toMatchObject({ token: first.token, ending: { kind: 'released', holder: 'w-0' } });
      const next = await leases.claimOrThrow(KEY);
      // NOTE: the old mint gave first.token + 1 here: below the stale holder's token, which a gate then preferred.
      expect(issued.every((lease) => next.token > lease.token)).toBe(true);
      expect(await restoredStore.fencedWrite(stale.fence(), () => 'stale')).toMatchObject({
        ok: false,
        reason: 'superseded',
        found: { token: next.token },
      });
      expect(await resourceGate.write(resource, { key: KEY, token: next.token }, () => undefined)).toMatchObject({ ok: true });
      expect(await resourceGate.write(resource, { key: KEY, token: stale.token }, () => undefined)).toMatchObject({
        ok: false,
        reason: 'stale-token',
      });
    } finally {
      await primaryPool.end().catch(() => undefined);
      await restoredPool?.end();
      await restored?.stop();
      backup?.discard();
      await primary.stop();
    }
  });
});
