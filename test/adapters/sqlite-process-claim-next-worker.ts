/**
 * One worker process of the claim-next race (`sqlite-claim-next-processes.test.ts`): its own better-sqlite3
 * connection to the shared file, the store on the host's wall clock, claiming the next item of one set of 100 in
 * a loop with short TTLs: it writes under the fence (a ledger row with the store's now), then releases (sometimes
 * with a hold), renews, or abandons the grant to expire (its next claim-next takes over or skips it). Idle, it waits
 * until `nextAt`. It reports every outcome to the parent, which checks the invariants. Environment: LF_DB,
 * LF_WORKER, LF_DURATION_MS, LF_SEED, LF_SET.
 */
import Database from 'better-sqlite3';
import { newSecret } from '../../src/secret.js';
import { createSqliteStore } from '../../src/adapters/sqlite/index.js';
import type { ClaimNextEvent } from './sqlite-process-events.js';
import { durationMs, path, random, sleep, worker } from './sqlite-process-setting.js';

const set = process.env['LF_SET'] ?? 'queue';

const database = new Database(path);
const store = createSqliteStore({ client: database, busyTimeoutMs: 10_000 });
const holder = `p${worker}`;
const events: ClaimNextEvent[] = [];

const deadline = Date.now() + durationMs;
while (Date.now() < deadline) {
  const secret = newSecret();
  const ttlMs = 20 + Math.floor(random() * 40);
  const outcome = await store.claimNext({
    set,
    holder,
    runId: null,
    secret,
    ttlMs,
    attributes: {},
    onExpired: 'take-over',
  });
  if (!outcome.ok) {
    events.push({ kind: 'idle', nextAt: outcome.nextAt, now: outcome.now });
    await sleep(outcome.nextAt === null ? 5 : Math.max(0, Math.min(50, outcome.nextAt - Date.now())));
    continue;
  }
  const { key, token } = outcome;
  events.push({ kind: 'grant', key, token: String(token), acquiredAt: outcome.acquiredAt, expiresAt: outcome.expiresAt as number });
  const fence = { key, token, secret, holder, runId: null };
  const written = await store.fencedWrite(fence, (tx) =>
    tx.run('INSERT INTO ledger (key, token, entry, written_at) VALUES (?, ?, ?, ?)', key, token, `${holder}:t${token}`, tx.now),
  );
  events.push({ kind: 'write', key, token: String(token), ok: written.ok, now: written.now });
  const fate = random();
  if (fate < 0.15) continue; // abandoned: it expires, and a later claim-next takes it over
  await sleep(Math.floor(random() * 10));
  if (fate < 0.3) {
    const renewed = await store.renew({ fence, ttlMs });
    if (renewed.ok) events.push({ kind: 'renew', key, token: String(token), expiresAt: renewed.expiresAt as number, now: renewed.now });
  }
  const released = await store.release({ fence, ...(fate > 0.9 ? { holdMs: 5 } : {}) });
  if (released.ok) events.push({ kind: 'release', key, token: String(token), now: released.now });
}
process.send?.(events, () => {
  database.close();
  process.exit(0);
});
