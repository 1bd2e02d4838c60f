/**
 * One worker process of the semaphore race (`sqlite-permits-processes.test.ts`): its own connection to the shared
 * file (LF_DRIVER: better-sqlite3, or node:sqlite on Node 22+), the store on the host's wall clock, acquiring a
 * permit of one semaphore (LF_LIMIT) in a loop with short TTLs: it writes under the permit's fence (a ledger row
 * with the store's now), then releases (sometimes after a renew), or abandons the grant to expire; after a release
 * it sometimes writes again with the ended grant's fence (which must be refused). Full, it waits until `nextAt`.
 * It reports every outcome to the parent, which checks the invariants. Environment: LF_DB, LF_WORKER,
 * LF_DURATION_MS, LF_SEED, LF_SEMAPHORE, LF_LIMIT, LF_DRIVER.
 */
import { createRequire } from 'node:module';
import { createSqliteStore, type SqliteClient } from '../../src/adapters/sqlite/index.js';
import type { Fence } from '../../src/fence/types.js';
import { permitCommand } from '../permits/race-checks.js';
import type { PermitEvent } from './sqlite-process-events.js';
import { durationMs, path, random, sleep, worker } from './sqlite-process-setting.js';

const semaphore = process.env['LF_SEMAPHORE'] ?? 'pool';
const limit = Number(process.env['LF_LIMIT'] ?? '3');
const driver = process.env['LF_DRIVER'] ?? 'better-sqlite3';

type Closable = SqliteClient & { close(): unknown };
const require = createRequire(import.meta.url);
// NOTE: loaded by name: better-sqlite3 is built for the repo's Node 20 only, node:sqlite exists from Node 22.
const database: Closable =
  driver === 'node:sqlite'
    ? new (require('node:sqlite') as { DatabaseSync: new (path: string) => Closable }).DatabaseSync(path)
    : new (require('better-sqlite3') as new (path: string) => Closable)(path);
// NOTE: no clock floor: tokens come from the permits alone (1 + the highest of the semaphore's), so the race checks
// that rule; with the default floor (the clock in µs) tokens would rise with the clock whatever the store did.
const store = createSqliteStore({ client: database, busyTimeoutMs: 10_000, tokenFloor: () => 0n });
const holder = `p${worker}`;
const events: PermitEvent[] = [];

const write = async (fence: Fence, stale: boolean): Promise<void> => {
  const { key, token } = fence;
  const written = await store.fencedWrite(fence, (tx) =>
    tx.run('INSERT INTO ledger (key, token, entry, written_at) VALUES (?, ?, ?, ?)', key, token, `${holder}:t${token}`, tx.now),
  );
  events.push({ kind: 'write', key, token: String(token), ok: written.ok, stale, now: written.now });
};

const deadline = Date.now() + durationMs;
while (Date.now() < deadline) {
  const ttlMs = 20 + Math.floor(random() * 40);
  const command = permitCommand(semaphore, holder, limit, ttlMs);
  const outcome = await store.acquirePermit(command);
  if (!outcome.ok) {
    events.push({ kind: 'full', live: outcome.live.length, nextAt: outcome.nextAt, now: outcome.now });
    await sleep(outcome.nextAt === null ? 5 : Math.max(0, Math.min(50, outcome.nextAt - Date.now())));
    continue;
  }
  const { key, token, index } = outcome;
  events.push({
    kind: 'grant',
    key,
    index,
    token: String(token),
    acquiredAt: outcome.acquiredAt,
    expiresAt: outcome.expiresAt as number,
    live: outcome.live,
  });
  const fence: Fence = { key, token, secret: command.secret, holder, runId: command.runId };
  await write(fence, false);
  const fate = random();
  if (fate < 0.15) continue; // abandoned: it expires, and a later acquire takes the permit over
  await sleep(Math.floor(random() * 10));
  if (fate < 0.3) {
    const renewed = await store.renew({ fence, ttlMs });
    if (renewed.ok) events.push({ kind: 'renew', key, token: String(token), expiresAt: renewed.expiresAt as number, now: renewed.now });
  }
  const released = await store.release({ fence });
  if (released.ok) events.push({ kind: 'release', key, token: String(token), now: released.now });
  if (fate > 0.85) await write(fence, true);
}
process.send?.(events, () => {
  database.close();
  process.exit(0);
});
