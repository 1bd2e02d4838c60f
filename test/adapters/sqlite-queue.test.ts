/**
 * A key's queue of waiting claims on SQLite (waiters.ts), beyond the random agreement of
 * sqlite-claim-next-agrees.test.ts: a waiting claim refused `held` (read without the checkpoint) writes its queue
 * and keeps the checkpoint; a plain claim of a key nobody waits for leaves the column NULL; waiter ids and holders
 * of any text, 100 ids of 64 characters, and the MAX_WAITERS bound answer as the reference (memory: the pure core);
 * the other operations keep the queue of the record they rewrite; `remove` deletes it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { MAX_WAITERS } from '../../src/fence/queue.js';
import { permitKey } from '../../src/fence/permits.js';
import type { ClaimCommand } from '../../src/fence/operations.js';
import type { Store } from '../../src/store.js';
import { newSecret } from '../../src/secret.js';
import { openSqliteRig, type SqliteRig } from './sqlite-rig.js';

let rig: SqliteRig | null = null;
afterEach(() => {
  rig?.close();
  rig = null;
});

const open = async (): Promise<SqliteRig> => (rig = await openSqliteRig({ tokenFloor: () => 0n }));

/** `value` with tokens left out (the reference mints above its removed tokens everywhere, SQLite per key) and bigints as text. */
const plain = (value: unknown): unknown =>
  JSON.parse(
    JSON.stringify(value, (name, inner: unknown) => (name === 'token' ? undefined : typeof inner === 'bigint' ? String(inner) : inner)),
  );

const claimOf = (key: string, holder: string, extra: Partial<ClaimCommand> = {}): ClaimCommand => ({
  key,
  holder,
  runId: null,
  secret: newSecret(),
  ttlMs: 1_000,
  attributes: {},
  recovering: false,
  ...extra,
});

/** The stored `waiters` column of `key`. */
const column = (r: SqliteRig, key: string): unknown =>
  (r.database.prepare('SELECT waiters FROM leasefence_leases WHERE key = ?').get(key) as { waiters: unknown } | undefined)?.waiters;

/** Runs each step on the reference and on SQLite (same clock, same commands), expecting equal answers. */
function pair(r: SqliteRig) {
  const reference = createMemoryStore({ clock: r.clock });
  const stores: readonly Store[] = [reference, r.store as unknown as Store];
  return async <O>(step: (store: Store) => Promise<O>): Promise<O> => {
    const [expected, found] = [await step(stores[0]!), await step(stores[1]!)];
    expect(plain(found)).toEqual(plain(expected));
    return found;
  };
}

describe('sqlite: the queue of waiting claims', () => {
  it('a waiting claim refused held (read without the checkpoint) writes its queue and keeps the checkpoint', async () => {
    const r = await open();
    const held = claimOf('job:1', 'a');
    const granted = await r.store.claim(held);
    if (!granted.ok) throw new Error('not granted');
    const fence = { key: 'job:1', token: granted.token, secret: held.secret, holder: 'a', runId: null };
    await r.store.checkpoint({ fence, json: '{"step":3}' });
    const waiting = claimOf('job:1', 'b', { queue: { waiterIds: ['w1', 'w2'], ttlMs: 5_000 } });
    expect(await r.store.claim(waiting)).toMatchObject({ ok: false, reason: 'held' });
    const now = r.clock();
    const seen = await r.store.inspect('job:1');
    expect(seen.waiters).toEqual([
      { waiterId: 'w1', holder: 'b', arrivedAt: now, expiresAt: now + 5_000 },
      { waiterId: 'w2', holder: 'b', arrivedAt: now, expiresAt: now + 5_000 },
    ]);
    expect(seen.checkpoint).toMatchObject({ json: '{"step":3}' });
    await r.store.release({ fence });
    // NOTE: another claim is refused `queued` while w1 is first; w1's next attempt takes the key and the checkpoint.
    expect(await r.store.claim(claimOf('job:1', 'c'))).toMatchObject({ ok: false, reason: 'queued', waiting: 2, position: null });
    expect(await r.store.claim({ ...waiting, secret: newSecret() })).toMatchObject({ ok: true, checkpoint: { json: '{"step":3}' } });
    expect((await r.store.inspect('job:1')).waiters).toEqual([{ waiterId: 'w2', holder: 'b', arrivedAt: now, expiresAt: now + 5_000 }]);
    expect(await r.store.dequeue({ key: 'job:1', waiterIds: ['w2', 'w9'] })).toMatchObject({ ok: true, removed: 1, freed: false });
    expect(column(r, 'job:1')).toBeNull();
  });

  it('a plain claim of a key nobody waits for leaves the column NULL, and a dequeue of nobody writes nothing', async () => {
    const r = await open();
    for (let round = 0; round < 3; round += 1) {
      const command = claimOf('job:1', 'a');
      const granted = await r.store.claim(command);
      if (!granted.ok) throw new Error('not granted');
      await r.store.release({ fence: { key: 'job:1', token: granted.token, secret: command.secret, holder: 'a', runId: null } });
    }
    expect(column(r, 'job:1')).toBeNull();
    const changes = r.database.prepare('SELECT total_changes() AS n').get() as { n: number };
    expect(await r.store.dequeue({ key: 'job:1', waiterIds: ['w1'] })).toMatchObject({ removed: 0, freed: false });
    expect(await r.store.dequeue({ key: 'job:none', waiterIds: ['w1'] })).toMatchObject({ removed: 0, freed: false });
    expect(r.database.prepare('SELECT total_changes() AS n').get()).toEqual(changes);
  });

  it('keeps waiter ids and holders of any text: 100 ids of 64 characters, quotes, NUL, lone surrogates, astral characters', async () => {
    const r = await open();
    const both = pair(r);
    const odd = ['"', '\\', '\u0000', '\uD800', '\uDFFF', '\u{1F600}', '\u2028', '<>&', "'", 'é'];
    const ids = Array.from({ length: 100 }, (_, index) => `${odd[index % odd.length]}${index}`.padEnd(64, odd[(index * 7) % odd.length]));
    const holders = ['h"\\\u0000', '\uD800x\u{1F600}'];
    await both((store) => store.claim(claimOf('job:1', 'a', { secret: 'same', ttlMs: 10_000 })));
    await both((store) =>
      store.claim(claimOf('job:1', holders[0]!, { secret: 's1', queue: { waiterIds: ids.slice(0, 60), ttlMs: 3_000 } })),
    );
    r.clock.advance(1_000);
    await both((store) => store.claim(claimOf('job:1', holders[1]!, { secret: 's2', queue: { waiterIds: ids.slice(30), ttlMs: 3_000 } })));
    await both((store) => store.inspect('job:1'));
    await both((store) => store.dequeue({ key: 'job:1', waiterIds: ids.filter((_, index) => index % 3 === 0) }));
    r.clock.advance(2_500);
    const seen = await both((store) => store.inspect('job:1'));
    expect(seen.waiters.length).toBeGreaterThan(0);
    expect(seen.waiters.map((waiter) => waiter.waiterId)).toEqual(ids.slice(30).filter((_, index) => (index + 30) % 3 !== 0));
  });

  it('stops queueing at MAX_WAITERS, as the core does', async () => {
    const r = await open();
    const both = pair(r);
    await both((store) => store.claim(claimOf('job:1', 'a', { secret: 'same', ttlMs: 60_000 })));
    for (let batch = 0; batch < MAX_WAITERS / 100 + 2; batch += 1) {
      const waiterIds = Array.from({ length: 100 }, (_, index) => `w${batch}-${index}`);
      await both((store) => store.claim(claimOf('job:1', 'b', { secret: `s${batch}`, queue: { waiterIds, ttlMs: 30_000 } })));
    }
    const seen = await both((store) => store.inspect('job:1'));
    expect(seen.waiters).toHaveLength(MAX_WAITERS);
  });

  it('renew, checkpoint, fenced writes, release, state changes and revoke keep the queue; remove deletes it', async () => {
    const r = await open();
    const both = pair(r);
    const key = 'job:1';
    await both((store) => (store.addItems as NonNullable<Store['addItems']>)({ set: 'jobs', keys: [key] }));
    const holder = await both((store) => store.claim(claimOf(key, 'a', { secret: 'a1', ttlMs: 1_000 })));
    if (!holder.ok) throw new Error('not granted');
    await both((store) => store.claim(claimOf(key, 'b', { secret: 'b1', queue: { waiterIds: ['w1', 'w2'], ttlMs: 60_000 } })));
    // NOTE: each store's own fence (tokens may differ): the reference is asked first, with its own token.
    const fences = new Map<Store, { key: string; token: bigint; secret: string; holder: string; runId: null }>();
    await both(async (store) => {
      const seen = await store.inspect(key);
      fences.set(store, { key, token: seen.grant?.token ?? 0n, secret: 'a1', holder: 'a', runId: null });
      return seen;
    });
    await both((store) => store.renew({ fence: fences.get(store)!, ttlMs: 2_000 }));
    await both((store) => store.checkpoint({ fence: fences.get(store)!, json: '{"step":1}' }));
    await both((store) => store.fencedWrite(fences.get(store)!, () => 'written', { checkpointJson: '{"step":2}' }));
    await both((store) => store.release({ fence: fences.get(store)!, holdMs: 100 }));
    await both((store) => store.setKeyState({ key, values: { stage: 'x' }, by: 'ops' }));
    await both((store) => store.claim(claimOf(key, 'b', { secret: 'b2', queue: { waiterIds: ['w2'], ttlMs: 60_000 } })));
    r.clock.advance(200);
    await both((store) => store.revoke({ key, reason: 'ops', by: 'ops', requireRecovery: false, expectedToken: null }));
    const seen = await both((store) => store.inspect(key));
    expect(seen.waiters.map((waiter) => waiter.waiterId)).toEqual(['w1', 'w2']);
    await both((store) => store.remove({ key, force: true, expectedToken: null }));
    expect((await both((store) => store.inspect(key))).waiters).toEqual([]);
    expect(column(r, key)).toBeNull();
  });

  // NOTE: fails today in the core, not here: `fence/claim-next.ts` and `fence/permits.ts` decide with `claim` without
  // `jumpQueue`, so a key (or permit) with a live waiter is refused `queued` and `claimNext` / `acquirePermit` throw
  // "claim-next chose ... but claim answered queued" (the memory store as well). The SQLite store keeps the queue of
  // the record they rewrite by construction (the record's upsert leaves the column as it is): flip to `it` once the
  // core grants them past the queue, as documented.
  it.fails('claim-next and a semaphore acquire take a key past its queue and keep it', async () => {
    const r = await open();
    const both = pair(r);
    const key = 'job:1';
    await both((store) => (store.addItems as NonNullable<Store['addItems']>)({ set: 'jobs', keys: [key] }));
    await both((store) => store.claim(claimOf(key, 'a', { secret: 'a1', ttlMs: 100 })));
    await both((store) => store.claim(claimOf(key, 'b', { secret: 'b1', queue: { waiterIds: ['w1', 'w2'], ttlMs: 60_000 } })));
    r.clock.advance(200);
    await both((store) =>
      (store.claimNext as NonNullable<Store['claimNext']>)({
        set: 'jobs',
        holder: 'c',
        runId: null,
        secret: 'c1',
        ttlMs: 1_000,
        attributes: {},
        onExpired: 'take-over',
      }),
    );
    expect((await both((store) => store.inspect(key))).waiters.map((waiter) => waiter.waiterId)).toEqual(['w1', 'w2']);

    const permit = permitKey('pool', 1);
    const acquire = (secret: string) =>
      both((store) =>
        (store.acquirePermit as NonNullable<Store['acquirePermit']>)({
          semaphore: 'pool',
          limit: 1,
          holder: 'p',
          runId: null,
          secret,
          ttlMs: 100,
          attributes: {},
          recovering: false,
        }),
      );
    await acquire('p1');
    await both((store) => store.claim(claimOf(permit, 'q', { secret: 'q1', queue: { waiterIds: ['w3'], ttlMs: 60_000 } })));
    r.clock.advance(200);
    await acquire('p2');
    expect((await both((store) => store.inspect(permit))).waiters.map((waiter) => waiter.waiterId)).toEqual(['w3']);
  });
});
