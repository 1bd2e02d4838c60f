/**
 * The shared specification of `list` (through `createOperator`), run on every store that has one: states,
 * prefix and paging, O(limit) records examined per call, and a race: paging through a prefix while other
 * workers claim new keys, release, revoke and renew, every key that existed throughout is listed exactly
 * once, and every listed row is a state its key really had.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Lease } from '../../src/lease.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { createOperator, type ListedLease, type ListQuery, type Operator } from '../../src/operator.js';
import type { StoreListPage } from '../../src/list.js';
import type { Store } from '../../src/store.js';
import type { MakeStoreHarness } from '../conformance/harness.js';

/** Every page of a listing, in order. */
export async function listPages(operator: Operator, query: Omit<ListQuery, 'cursor'>): Promise<ListedLease[][]> {
  const pages: ListedLease[][] = [];
  let cursor: string | null = null;
  do {
    const page: Awaited<ReturnType<Operator['list']>> = await operator.list({ ...query, cursor });
    pages.push([...page.leases]);
    cursor = page.cursor;
  } while (cursor !== null && pages.length < 10_000);
  return pages;
}

const keysOf = (pages: ListedLease[][]): string[] => pages.flat().map((lease) => lease.key);

/** A row as a comparable state: token, holder (or none), how the last grant ended. */
const stateOf = (token: bigint, holder: string | null, ending: string | null): string => `${token}|${holder ?? '-'}|${ending ?? '-'}`;

/** How a store pages (Redis pages in `SCAN` order, and `COUNT` only bounds a page roughly). */
export interface ListTraits {
  /** Pages come in key order (memory, Postgres). */
  readonly keyOrder: boolean;
  /** A page never holds more than `limit` leases. */
  readonly exactLimit: boolean;
}

export function describeListSpecs<S extends Store>(
  name: string,
  makeHarness: MakeStoreHarness<S>,
  runs: number,
  traits: ListTraits = { keyOrder: true, exactLimit: true },
): void {
  const inOrder = (keys: string[]): string[] => (traits.keyOrder ? keys : [...keys].sort());
  describe(`list: ${name}`, () => {
    it('lists each state, filters by state and prefix, and pages in key order', async () => {
      const harness = await makeHarness();
      try {
        const base = harness.freshKey('lst');
        const worker = createLeases(harness.store, { holder: 'w1', ttlMs: 60_000 });
        const operator = createOperator(harness.store, { by: 'ops' });
        const live = await worker.claimOrThrow(`${base}:a-live`, { runId: 'r5', ttlMs: 600_000 });
        const released = await worker.claimOrThrow(`${base}:b-released`);
        await worker.release(released);
        const revoked = await worker.claimOrThrow(`${base}:c-revoked`);
        await worker.checkpoint(revoked, { step: 3 });
        await operator.revoke(`${base}:c-revoked`, { reason: 'stuck', requireRecovery: true });
        await worker.claimOrThrow(`${base}:d-expired`);
        await harness.expireNow(`${base}:d-expired`);
        await worker.claimOrThrow(`${base}x:outside`);

        const all = inOrder(keysOf(await listPages(operator, { prefix: `${base}:` })));
        expect(all).toEqual([`${base}:a-live`, `${base}:b-released`, `${base}:c-revoked`, `${base}:d-expired`]);
        const paged = await listPages(operator, { prefix: `${base}:`, limit: 1 });
        expect(inOrder(keysOf(paged))).toEqual(all);
        if (traits.exactLimit) for (const page of paged) expect(page.length).toBeLessThanOrEqual(1);

        const rows = new Map((await listPages(operator, { prefix: `${base}:` })).flat().map((row) => [row.key, row]));
        expect(rows.get(`${base}:a-live`)).toMatchObject({
          state: 'live',
          token: live.token,
          grant: { holder: 'w1', runId: 'r5', live: true },
        });
        expect(rows.get(`${base}:b-released`)).toMatchObject({ state: 'released', grant: null, ending: { kind: 'released' } });
        expect(rows.get(`${base}:c-revoked`)).toMatchObject({
          state: 'revoked',
          recoveryRequired: true,
          ending: { kind: 'revoked', reason: 'stuck', by: 'ops' },
        });
        expect(rows.get(`${base}:c-revoked`)?.checkpoint?.token).toBe(revoked.token);
        expect(rows.get(`${base}:d-expired`)).toMatchObject({ state: 'expired', grant: { live: false } });
        for (const row of rows.values())
          expect(JSON.stringify(row, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).not.toMatch(/secret/i);

        const only = async (states: ListQuery['states']) =>
          inOrder(keysOf(await listPages(operator, { prefix: `${base}:`, ...(states ? { states } : {}) })));
        expect(await only(['live'])).toEqual([`${base}:a-live`]);
        expect(await only(['expired', 'released'])).toEqual([`${base}:b-released`, `${base}:d-expired`]);
        expect(await only(['recovery-required'])).toEqual([`${base}:c-revoked`]);
        expect(await only(['revoked'])).toEqual([`${base}:c-revoked`]);
      } finally {
        await harness.close();
      }
    });

    it('lists a checkpoint as its token, time and size, never its body (and the store page carries none)', async () => {
      const harness = await makeHarness();
      try {
        const key = `${harness.freshKey('lst-body')}:big`;
        const worker = createLeases(harness.store, { holder: 'w1', ttlMs: 60_000 });
        const lease = await worker.claimOrThrow(key);
        // 32 KiB of JSON with multi-byte characters: the size is counted in UTF-8 bytes.
        const value = { blob: 'é'.repeat(16 * 1024) };
        await worker.checkpointOrThrow(lease, value);
        const bytes = Buffer.byteLength(JSON.stringify(value));
        const inspected = await worker.inspect(key);
        const [listed] = (await listPages(createOperator(harness.store), { prefix: key })).flat();
        expect(listed?.checkpoint).toEqual({ token: lease.token, writtenAt: inspected.checkpoint?.writtenAt, bytes });
        const pages: StoreListPage[] = [];
        let cursor: string | null = null;
        do {
          const page: StoreListPage | undefined = await harness.store.list?.({ prefix: key, limit: 10, cursor });
          if (page === undefined) break;
          pages.push(page);
          cursor = page.cursor;
        } while (cursor !== null);
        const row = pages.flatMap((page) => page.leases).find((lease) => lease.key === key);
        expect(row?.checkpoint).toEqual({ token: lease.token, writtenAt: inspected.checkpoint?.writtenAt, bytes });
        expect(JSON.stringify(pages, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).not.toContain('éé');
      } finally {
        await harness.close();
      }
    });

    it('refuses a bad query before any I/O', async () => {
      const harness = await makeHarness();
      try {
        const operator = createOperator(harness.store);
        const bad: unknown[] = [
          { limit: 0 },
          { limit: 1001 },
          { limit: 1.5 },
          { prefix: 7 },
          { prefix: 'a\u0000' },
          { states: ['held'] },
          { states: 'live' },
          { cursor: '' },
        ];
        for (const query of bad) await expect(operator.list(query as ListQuery)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      } finally {
        await harness.close();
      }
    });

    it('under concurrent churn, lists every key that existed throughout exactly once, each row a state its key had', async () => {
      const harness = await makeHarness();
      try {
        const operator = createOperator(harness.store, { by: 'ops' });
        await fc.assert(
          fc.asyncProperty(
            fc.integer({ min: 1, max: 12 }),
            fc.integer({ min: 1, max: 5 }),
            fc.array(fc.constantFrom('claim-new', 'release', 'revoke', 'renew', 'reclaim'), { minLength: 1, maxLength: 25 }),
            async (initial, limit, churn) => {
              const base = `${harness.freshKey('churn')}:`;
              const worker: Leases<S> = createLeases(harness.store, { holder: 'w', ttlMs: 60_000 });
              const seen = new Map<string, Set<string>>();
              const note = (key: string, state: string): void => void (seen.get(key) ?? seen.set(key, new Set()).get(key))?.add(state);
              const held: Lease[] = [];
              for (let index = 0; index < initial; index += 1) {
                const lease = await worker.claimOrThrow(`${base}${String(index).padStart(3, '0')}`);
                note(lease.key, stateOf(lease.token, 'w', null));
                held.push(lease);
              }
              await worker.claimOrThrow(`${base.slice(0, -1)};decoy`);
              const existing = held.map((lease) => lease.key);
              let created = 0;
              const churner = async (): Promise<void> => {
                for (const [step, action] of churn.entries()) {
                  const lease = held[step % held.length];
                  if (lease === undefined) continue;
                  if (action === 'claim-new') {
                    const fresh = await worker.claimOrThrow(`${base}${String(500 + created++).padStart(3, '0')}`);
                    note(fresh.key, stateOf(fresh.token, 'w', null));
                  } else if (action === 'release') {
                    const outcome = await worker.release(lease);
                    if (outcome.ok) note(lease.key, stateOf(lease.token, null, 'released'));
                  } else if (action === 'revoke') {
                    const outcome = await operator.revoke(lease.key, { reason: 'churn' });
                    if (outcome.ok) note(lease.key, stateOf(outcome.token, null, 'revoked'));
                  } else if (action === 'renew') {
                    await worker.renew(lease);
                  } else {
                    const claimed = await worker.claim(lease.key);
                    if (claimed.ok) {
                      note(lease.key, stateOf(claimed.lease.token, 'w', claimed.previous?.kind ?? null));
                      held[step % held.length] = claimed.lease;
                    }
                  }
                }
              };
              const [pages] = await Promise.all([listPages(operator, { prefix: base, limit }), churner()]);
              if (traits.exactLimit) for (const page of pages) expect(page.length).toBeLessThanOrEqual(limit);
              const listed = keysOf(pages);
              expect(listed.every((key) => key.startsWith(base))).toBe(true);
              expect(new Set(listed).size).toBe(listed.length);
              for (const key of existing) expect(listed).toContain(key);
              for (const row of pages.flat()) {
                expect(seen.get(row.key)).toContain(stateOf(row.token, row.grant?.holder ?? null, row.ending?.kind ?? null));
              }
            },
          ),
          { numRuns: runs },
        );
      } finally {
        await harness.close();
      }
    });
  });
}
