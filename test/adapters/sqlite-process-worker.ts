/**
 * One worker process of the multi-process race (`sqlite-processes.test.ts`): its own better-sqlite3
 * connection to the shared database file, the store on the host's wall clock, claiming a few keys with
 * short TTLs and writing under the fence (a ledger row and the checkpoint, in one transaction), sometimes
 * pausing past its TTL, releasing, or revoking another's grant. It reports every outcome it saw to the
 * parent, which checks the invariants. Environment: LF_DB, LF_WORKER, LF_DURATION_MS, LF_SEED.
 */
import Database from 'better-sqlite3';
import { createLeases } from '../../src/leases.js';
import type { Lease } from '../../src/lease.js';
import { createSqliteStore } from '../../src/adapters/sqlite/index.js';
import type { ProcessEvent } from './sqlite-process-events.js';
import { durationMs, path, pick, random, sleep, worker } from './sqlite-process-setting.js';

// NOTE: two contended keys, and one of its own, where a holder that paused past its TTL is rarely taken over
// at once, so its late writes must be refused as expired rather than superseded.
const KEYS = ['job:a', 'job:b', `own:p${worker}`];

const database = new Database(path);
const store = createSqliteStore({ client: database, busyTimeoutMs: 10_000 });
const leases = createLeases(store, { holder: `p${worker}`, ttlMs: 50 });
const events: ProcessEvent[] = [];

async function hold(lease: Lease): Promise<void> {
  const writes = 1 + Math.floor(random() * 4);
  for (let index = 0; index < writes; index += 1) {
    // NOTE: some pauses outlast the TTL: the stale writes that follow must be refused.
    await sleep(random() < 0.2 ? 30 + Math.floor(random() * 70) : Math.floor(random() * 15));
    const entry = `p${worker}:t${lease.token}:${index}`;
    const outcome = await leases.fencedWrite(
      lease,
      (tx) => tx.run('INSERT INTO ledger (key, token, entry, written_at) VALUES (?, ?, ?, ?)', lease.key, lease.token, entry, tx.now),
      { checkpoint: { entry } },
    );
    events.push({
      kind: 'write',
      key: lease.key,
      token: String(lease.token),
      entry,
      ok: outcome.ok,
      reason: outcome.ok ? null : outcome.reason,
      now: outcome.now,
    });
    if (random() < 0.3) {
      const renewed = await leases.renew(lease);
      if (renewed.ok)
        events.push({ kind: 'renew', key: lease.key, token: String(lease.token), expiresAt: renewed.expiresAt, now: renewed.now });
    }
  }
  if (random() < 0.6) {
    const released = await leases.release(lease);
    if (released.ok && !released.alreadyReleased)
      events.push({ kind: 'release', key: lease.key, token: String(lease.token), now: released.now });
  }
}

/**
 * A burst of back-to-back claims and releases of one key shared by every worker, with no pause: the
 * processes' transactions queue on the write lock, so a store whose read-decide-write were not one
 * transaction would grant one token twice here.
 */
async function storm(): Promise<void> {
  for (let index = 0; index < 30; index += 1) {
    const claimed = await leases.claim('job:storm', { ttlMs: 1_000 });
    if (!claimed.ok) continue;
    const { lease } = claimed;
    events.push({
      kind: 'grant',
      key: lease.key,
      token: String(lease.token),
      acquiredAt: lease.acquiredAt!,
      expiresAt: lease.expiresAt!,
      worker,
    });
    const entry = `p${worker}:t${lease.token}:storm`;
    const outcome = await leases.fencedWrite(
      lease,
      (tx) => tx.run('INSERT INTO ledger (key, token, entry, written_at) VALUES (?, ?, ?, ?)', lease.key, lease.token, entry, tx.now),
      { checkpoint: { entry } },
    );
    events.push({
      kind: 'write',
      key: lease.key,
      token: String(lease.token),
      entry,
      ok: outcome.ok,
      reason: outcome.ok ? null : outcome.reason,
      now: outcome.now,
    });
    const released = await leases.release(lease);
    if (released.ok && !released.alreadyReleased)
      events.push({ kind: 'release', key: lease.key, token: String(lease.token), now: released.now });
  }
}

async function main(): Promise<void> {
  const deadline = Date.now() + durationMs;
  while (Date.now() < deadline) {
    if (random() < 0.05) await storm();
    const key = pick(KEYS);
    const claimed = await leases.claim(key, { ttlMs: 20 + Math.floor(random() * 40) });
    if (claimed.ok) {
      const { lease } = claimed;
      events.push({ kind: 'grant', key, token: String(lease.token), acquiredAt: lease.acquiredAt!, expiresAt: lease.expiresAt!, worker });
      await hold(lease);
    } else if (random() < 0.05) {
      const revoked = await leases.revoke(key, { reason: 'race', by: `p${worker}` });
      if (revoked.ok) events.push({ kind: 'revoke', key, token: String(revoked.revoked.token), now: revoked.now });
    }
    await sleep(Math.floor(random() * 5));
  }
  database.close();
  process.send?.(events, () => process.exit(0));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
