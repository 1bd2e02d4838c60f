/**
 * The SQLite layout of claim-next (src/adapters/sqlite/items.ts): what the statements do to the rows and the
 * indexes, beyond the answers the conformance and differential tests compare.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { newSecret } from '../../src/secret.js';
import { openSqliteRig, type SqliteRig } from './sqlite-rig.js';

let rig: SqliteRig | null = null;
const open = async (): Promise<SqliteRig> => (rig = await openSqliteRig({ tokenFloor: () => 0n }));
afterEach(() => {
  rig?.close();
  rig = null;
});

const claimNextCommand = (set: string) => ({
  set,
  holder: 'w',
  runId: null,
  secret: newSecret(),
  ttlMs: 1_000,
  attributes: {},
  onExpired: 'take-over' as const,
});

describe('sqlite claim-next layout', () => {
  it('a key that is no item has no entry in either claim-next index; an item has one in each while granted', async () => {
    const r = await open();
    const held = await r.leasesFor('a').claim('plain');
    expect(held.ok).toBe(true);
    expect(await r.store.addItems({ set: 'q', keys: ['{q}:1'] })).toMatchObject({ ok: true, added: ['{q}:1'] });
    expect(await r.store.claimNext(claimNextCommand('q'))).toMatchObject({ ok: true, key: '{q}:1' });
    const entries = (index: string) =>
      (
        r.database
          .prepare(
            `SELECT key FROM leasefence_leases INDEXED BY ${index} WHERE item_set IS NOT NULL AND ${index === 'leasefence_leases_ready' ? 'available_at IS NOT NULL' : '1'}`,
          )
          .all() as { key: string }[]
      ).map((row) => row.key);
    expect(entries('leasefence_leases_ready')).toEqual(['{q}:1']);
    expect(entries('leasefence_leases_item_secret')).toEqual(['{q}:1']);
    expect(r.database.prepare('SELECT item_set, available_at FROM leasefence_leases WHERE key = ?').get('plain')).toEqual({
      item_set: null,
      available_at: null,
    });
  });

  it("claim-next's statements read the ready index in grant order (no sort, no scan of the set)", async () => {
    const r = await open();
    await r.store.addItems({ set: 'q', keys: Array.from({ length: 50 }, (_, index) => `{q}:${index}`) });
    await r.store.claimNext(claimNextCommand('q'));
    // NOTE: the page statement's WHERE and ORDER BY as items.ts writes them (with LIMIT 1: no expect).
    const page = `WHERE item_set = ? AND available_at >= ? AND available_at <= ? AND (available_at > ? OR item_order > ?)
ORDER BY available_at, item_order LIMIT 1`;
    const plan = (
      r.database
        .prepare(`EXPLAIN QUERY PLAN SELECT key FROM leasefence_leases ${page}`)
        .all('q', -8.64e15, Date.now(), -8.64e15, Buffer.alloc(0)) as { detail: string }[]
    ).map((row) => row.detail);
    expect(plan).toEqual([
      // NOTE: the lease table is a rowid table (schema.ts): the index leads to the rows, in its order (no sort step).
      'SEARCH leasefence_leases USING INDEX leasefence_leases_ready (item_set=? AND available_at>? AND available_at<?)',
    ]);
  });

  it('list pages past items that have no record (they are examined, not listed): the listing does not stop early', async () => {
    const r = await open();
    // NOTE: keys in order: k:0..k:4 items with no record, then k:5 and k:6 claimed.
    await r.store.addItems({ set: 'q', keys: ['k:0', 'k:1', 'k:2', 'k:3', 'k:4'] });
    for (const key of ['k:5', 'k:6']) expect((await r.leasesFor('a').claim(key)).ok).toBe(true);
    const { list } = r.store;
    if (list === undefined) throw new Error('the SQLite store offers list');
    const listed: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await list({ prefix: 'k:', limit: 2, cursor });
      listed.push(...page.leases.map((lease) => lease.key));
      cursor = page.cursor;
    } while (cursor !== null);
    expect(listed).toEqual(['k:5', 'k:6']);
  });

  it('remove of an item deletes its record and keeps the item, available since its due time; removeItems of a record-less item deletes the row', async () => {
    const r = await open();
    await r.store.addItems({ set: 'q', keys: ['{q}:1'] });
    const granted = await r.store.claimNext(claimNextCommand('q'));
    expect(granted.ok).toBe(true);
    expect(await r.store.remove({ key: '{q}:1', force: true, expectedToken: null })).toMatchObject({ ok: true });
    expect(await r.store.inspect('{q}:1')).toMatchObject({ exists: false, grant: null });
    const row = r.database
      .prepare('SELECT token, item_set, item_due_at, available_at FROM leasefence_leases WHERE key = ?')
      .get('{q}:1') as {
      item_due_at: number;
      available_at: number;
    };
    expect(row).toMatchObject({ token: null, item_set: 'q' });
    expect(row.available_at).toBe(row.item_due_at);
    expect(await r.store.removeItems({ set: 'q', keys: ['{q}:1'] })).toMatchObject({ removed: ['{q}:1'] });
    expect(r.database.prepare('SELECT count(*) AS n FROM leasefence_leases').get()).toEqual({ n: 0 });
  });
});
