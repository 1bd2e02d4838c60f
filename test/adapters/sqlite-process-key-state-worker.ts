/**
 * One worker process of the key-state race (`sqlite-processes-key-state.test.ts`): its own better-sqlite3
 * connection to the shared file, the store on the host's wall clock, calling the store directly. It claims
 * two keys with `expect` set to the revision it last saw, writes under the fence (a ledger row with the
 * revision it claimed under and the one the row holds inside the fenced transaction), renews, releases
 * (sometimes with a hold); and, as the writer who owns the data, sets the revision (a new value, or the
 * current one again) and now and then removes a key. Every outcome goes to the parent.
 * Environment: LF_DB, LF_WORKER, LF_DURATION_MS, LF_SEED.
 */
import Database from 'better-sqlite3';
import { createSqliteStore } from '../../src/adapters/sqlite/index.js';
import { newSecret, type Fence } from '../../src/store-entry.js';
import type { KeyStateEvent } from './sqlite-process-events.js';
import { durationMs, path, pick, random, sleep, worker } from './sqlite-process-setting.js';

const KEYS = ['doc:a', 'doc:b'];

const database = new Database(path);
const store = createSqliteStore({ client: database, busyTimeoutMs: 10_000 });
const holder = `p${worker}`;
const events: KeyStateEvent[] = [];
let revisions = 0;

/** The revision the row holds, read inside the fenced transaction (`null`: none). */
function revisionInRow(tx: { get<Row>(sql: string, ...params: string[]): Row | undefined }, key: string): string | null {
  const row = tx.get<{ state: string | null }>(`SELECT state FROM ${store.table} WHERE key = ?`, key);
  const state = row?.state === null || row === undefined ? {} : (JSON.parse(row.state) as Record<string, string>);
  return state['rev'] ?? null;
}

async function hold(fence: Fence, revision: string | null): Promise<void> {
  const writes = 1 + Math.floor(random() * 4);
  for (let index = 0; index < writes; index += 1) {
    await sleep(random() < 0.15 ? 40 + Math.floor(random() * 40) : Math.floor(random() * 10));
    const entry = `${holder}:t${fence.token}:${index}`;
    const outcome = await store.fencedWrite(fence, (tx) =>
      tx.run(
        'INSERT INTO ledger (key, token, entry, claimed_rev, row_rev, written_at) VALUES (?, ?, ?, ?, ?, ?)',
        fence.key,
        fence.token,
        entry,
        revision,
        revisionInRow(tx, fence.key),
        tx.now,
      ),
    );
    events.push({
      kind: 'write',
      key: fence.key,
      token: String(fence.token),
      entry,
      ok: outcome.ok,
      reason: outcome.ok ? null : outcome.reason,
      now: outcome.now,
    });
    if (!outcome.ok) return;
    if (random() < 0.3) await store.renew({ fence, ttlMs: 60 });
  }
  if (random() < 0.7) {
    const holdMs = random() < 0.3 ? Math.floor(random() * 20) : undefined;
    await store.release({ fence, ...(holdMs === undefined ? {} : { holdMs }) });
  }
}

async function main(): Promise<void> {
  const deadline = Date.now() + durationMs;
  while (Date.now() < deadline) {
    const key = pick(KEYS);
    const roll = random();
    if (roll < 0.2) {
      // The data's owner sets the revision: a new value, or (a third of the time) the value it has.
      const current = (await store.inspect(key)).state['rev'] ?? null;
      const value = current !== null && random() < 0.33 ? current : `${holder}-${++revisions}`;
      const set = await store.setKeyState({ key, values: { rev: value }, by: holder });
      events.push({
        kind: 'set',
        key,
        changed: set.changed.length > 0,
        ended: set.ended === null ? null : { kind: set.ended.kind, token: String(set.ended.token) },
        now: set.now,
      });
    } else if (roll < 0.22) {
      const removed = await store.remove({ key, force: true, expectedToken: null });
      if (removed.ok) events.push({ kind: 'remove', key, token: String(removed.token), now: removed.now });
    } else {
      const revision = (await store.inspect(key)).state['rev'] ?? null;
      const secret = newSecret();
      const runId = `${holder}-${Date.now()}`;
      const claimed = await store.claim({
        key,
        holder,
        runId,
        secret,
        ttlMs: 30 + Math.floor(random() * 50),
        attributes: {},
        recovering: false,
        expect: { rev: revision },
      });
      events.push({
        kind: 'claim',
        key,
        ok: claimed.ok,
        reason: claimed.ok ? null : claimed.reason,
        token: claimed.ok ? String(claimed.token) : null,
        acquiredAt: claimed.now,
      });
      if (claimed.ok) await hold({ key, token: claimed.token, secret, holder, runId }, revision);
    }
    await sleep(Math.floor(random() * 4));
  }
  database.close();
  process.send?.(events, () => process.exit(0));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
