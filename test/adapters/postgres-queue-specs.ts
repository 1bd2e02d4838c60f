/**
 * The key's queue of waiting claims on PostgreSQL (claim-queue.ts), run once per client: every outcome and every
 * inspection equals the pure core's (`transitions.claim`, `dequeue`, `release`, `setKeyState`, `revoke`, `inspect`)
 * applied to a model record at the store's own now, over random sequences of waiting, plain and queue-jumping
 * claims, re-deliveries, dequeues, releases, holds and revokes; the queue stays bounded; and a dequeue that leaves
 * the key to the next waiter tells its watchers as a release does.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { fc } from '@fast-check/vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../../src/adapters/postgres/index.js';
import type { ClaimCommand } from '../../src/fence/operations.js';
import { MAX_WAITER_IDS, MAX_WAITERS } from '../../src/fence/queue.js';
import * as transitions from '../../src/fence/transitions.js';
import type { Fence, LeaseRecord } from '../../src/fence/types.js';
import { freshTable, openPostgresClient, sharedPostgresUrl, type OpenedClient, type PostgresClientKind } from './postgres-harness.js';

const WAITER_IDS = ['wa', 'wb', 'wc', 'wd', 'we'] as const;

/** One step of a sequence on one key. */
type Step =
  | {
      readonly kind: 'claim';
      readonly holder: string;
      readonly ttlMs: number | null;
      readonly recovering: boolean;
      readonly wait: readonly string[] | null;
      readonly queueTtlMs: number;
      readonly jumpQueue: boolean;
    }
  | { readonly kind: 'redeliver' }
  | { readonly kind: 'dequeue'; readonly waiterIds: readonly string[] }
  | { readonly kind: 'release'; readonly holdMs: number | null; readonly checkpoint: boolean }
  | { readonly kind: 'hold'; readonly holdMs: number | null }
  | { readonly kind: 'revoke'; readonly requireRecovery: boolean }
  | { readonly kind: 'sleep'; readonly ms: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('claim' as const),
      holder: fc.constantFrom('h1', 'h2', "o'brien \u{1F600}"),
      ttlMs: fc.oneof(fc.constant(null), fc.integer({ min: 5, max: 120 })),
      recovering: fc.boolean(),
      wait: fc.option(fc.uniqueArray(fc.constantFrom(...WAITER_IDS), { minLength: 1, maxLength: 4 }), { nil: null }),
      queueTtlMs: fc.integer({ min: 5, max: 400 }),
      jumpQueue: fc.boolean(),
    }),
    weight: 6,
  },
  { arbitrary: fc.constant({ kind: 'redeliver' as const }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('dequeue' as const),
      waiterIds: fc.uniqueArray(fc.constantFrom(...WAITER_IDS), { maxLength: 3 }),
    }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      holdMs: fc.option(fc.integer({ min: 1, max: 60 }), { nil: null }),
      checkpoint: fc.boolean(),
    }),
    weight: 2,
  },
  {
    arbitrary: fc.record({ kind: fc.constant('hold' as const), holdMs: fc.option(fc.integer({ min: 1, max: 60 }), { nil: null }) }),
    weight: 1,
  },
  { arbitrary: fc.record({ kind: fc.constant('revoke' as const), requireRecovery: fc.boolean() }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('sleep' as const), ms: fc.integer({ min: 1, max: 80 }) }), weight: 2 },
);

export function describePostgresQueueSpecs(kind: PostgresClientKind): void {
  describe(`postgres queue of waiting claims (${kind})`, () => {
    let opened: OpenedClient;
    let store: PostgresStore;
    let url: string;
    let table: string;
    let keys = 0;

    beforeAll(async () => {
      url = kind === 'pglite' ? '' : await sharedPostgresUrl();
      opened = await openPostgresClient(kind, url);
      table = freshTable(`lf_queue_${kind.replace('-', '_')}`);
      store = createPostgresStore({ client: opened.client, table });
      await store.migrate();
    });
    afterAll(async () => {
      await opened?.close();
    });

    it('every outcome and inspection equals the core on the record as it was, at the store\u2019s now', async () => {
      const seen = new Set<string>();
      await fc.assert(
        fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 30 }), async (steps) => {
          const key = `queue:${++keys}`;
          let model: LeaseRecord | null = null;
          let last: ClaimCommand | null = null;
          const fences: Fence[] = [];
          for (const step of steps) {
            switch (step.kind) {
              case 'claim':
              case 'redeliver': {
                let command: ClaimCommand;
                if (step.kind === 'redeliver') {
                  if (last === null) continue;
                  command = last;
                } else {
                  const secret = randomBytes(16).toString('hex');
                  command = {
                    key,
                    holder: step.holder,
                    runId: null,
                    secret,
                    ttlMs: step.ttlMs,
                    attributes: {},
                    recovering: step.recovering,
                    ...(step.wait === null ? {} : { queue: { waiterIds: step.wait, ttlMs: step.queueTtlMs } }),
                    ...(step.jumpQueue ? { jumpQueue: true } : {}),
                  };
                }
                last = command;
                const outcome = await store.claim(command);
                const expected = transitions.claim(model, command, outcome.now, outcome.ok ? outcome.token : 0n);
                expect(outcome).toEqual(expected.outcome);
                model = expected.record;
                seen.add(`claim ${outcome.ok ? 'granted' : outcome.reason}${command.queue === undefined ? '' : ' waiting'}`);
                if (outcome.ok) fences.push({ key, token: outcome.token, secret: command.secret, holder: command.holder, runId: null });
                break;
              }
              case 'dequeue': {
                const command = { key, waiterIds: step.waiterIds };
                const outcome = await store.dequeue(command);
                const expected = transitions.dequeue(model, command, outcome.now);
                expect(outcome).toEqual(expected.outcome);
                seen.add(`dequeue ${outcome.freed ? 'freed' : outcome.removed > 0 ? 'removed' : 'none'}`);
                model = expected.record;
                break;
              }
              case 'release': {
                const fence = fences.at(-1);
                if (fence === undefined) continue;
                const command = {
                  fence,
                  ...(step.checkpoint ? { checkpointJson: '{"step":1}' } : {}),
                  ...(step.holdMs === null ? {} : { holdMs: step.holdMs }),
                };
                const outcome = await store.release(command);
                const expected = transitions.release(model, command, outcome.now);
                expect(outcome).toEqual(expected.outcome);
                model = expected.record;
                break;
              }
              case 'hold': {
                const command = { key, values: {}, by: 'ops', holdMs: step.holdMs };
                const outcome = await store.setKeyState(command);
                const expected = transitions.setKeyState(model, command, outcome.now);
                expect(outcome).toEqual(expected.outcome);
                model = expected.record;
                break;
              }
              case 'revoke': {
                const command = { key, reason: 'test', by: 'ops', requireRecovery: step.requireRecovery, expectedToken: null };
                const outcome = await store.revoke(command);
                const expected = transitions.revoke(model, command, outcome.now);
                expect(outcome).toEqual(expected.outcome);
                model = expected.record;
                break;
              }
              case 'sleep':
                await delay(step.ms);
                break;
            }
            const inspected = await store.inspect(key);
            expect(inspected).toEqual(transitions.inspect(model, key, inspected.now));
          }
        }),
        { numRuns: kind === 'pglite' ? 40 : 100 },
      );
      // NOTE: the sequences reached every outcome the queue decides (a check on the generator, not the store).
      for (const reached of ['claim held waiting', 'claim granted waiting', 'dequeue removed']) expect([...seen].sort()).toContain(reached);
    });

    it(`keeps at most ${MAX_WAITERS} waiters: a full queue queues no more, and a claim naming ${MAX_WAITER_IDS} long ids of any holder is safe`, async () => {
      const key = `queue:full:${++keys}`;
      const holder = `o'brien "\\" \u{1F600} ${'x'.repeat(200)}`;
      const claim = (waiterIds: readonly string[]): ClaimCommand => ({
        key,
        holder,
        runId: null,
        secret: randomBytes(16).toString('hex'),
        ttlMs: 600_000,
        attributes: {},
        recovering: false,
        queue: { waiterIds, ttlMs: 600_000 },
      });
      const first = await store.claim(claim(['holder']));
      expect(first.ok).toBe(true);
      let model = transitions.claim(null, claim(['holder']), first.now, first.ok ? first.token : 0n).record;
      for (let round = 0; round <= MAX_WAITERS / MAX_WAITER_IDS; round += 1) {
        const ids = Array.from({ length: MAX_WAITER_IDS }, (_, index) => `${String(round).padStart(2, '0')}-${index}-${'i'.repeat(58)}`);
        const command = claim(ids);
        const outcome = await store.claim(command);
        const expected = transitions.claim(model, command, outcome.now);
        expect(outcome).toEqual(expected.outcome);
        expect(outcome).toMatchObject({ ok: false, reason: 'held' });
        model = expected.record;
      }
      const seen = await store.inspect(key);
      expect(seen.waiters).toHaveLength(MAX_WAITERS);
      expect(seen).toEqual(transitions.inspect(model, key, seen.now));
    });

    it('a free key with waiters: a plain claim is refused queued, a waiter behind the first too, the first and a jumpQueue claim are granted; a recovering claim skips the queue', async () => {
      const key = `queue:queued:${++keys}`;
      const base = { key, runId: null, ttlMs: 60_000, attributes: {}, recovering: false };
      const secret = (): string => randomBytes(16).toString('hex');
      let model: LeaseRecord | null = null;
      const step = async (command: ClaimCommand) => {
        const outcome = await store.claim(command);
        const expected = transitions.claim(model, command, outcome.now, outcome.ok ? outcome.token : 0n);
        expect(outcome).toEqual(expected.outcome);
        model = expected.record;
        return outcome;
      };
      const holding = { ...base, holder: 'h', secret: secret() };
      const held = await step(holding);
      if (!held.ok) throw new Error('not granted');
      for (const waiterId of ['w1', 'w2'])
        await step({ ...base, holder: waiterId, secret: secret(), queue: { waiterIds: [waiterId], ttlMs: 60_000 } });
      const release = { fence: { key, token: held.token, secret: holding.secret, holder: 'h', runId: null } };
      const released = await store.release(release);
      model = transitions.release(model, release, released.now).record;
      expect(await step({ ...base, holder: 'plain', secret: secret() })).toMatchObject({
        reason: 'queued',
        waiting: 2,
        position: null,
        first: { holder: 'w1' },
      });
      expect(await step({ ...base, holder: 'w2', secret: secret(), queue: { waiterIds: ['w2'], ttlMs: 60_000 } })).toMatchObject({
        reason: 'queued',
        waiting: 2,
        position: 2,
      });
      const jumping = { ...base, holder: 'ops', secret: secret(), jumpQueue: true };
      const jumped = await step(jumping);
      if (!jumped.ok) throw new Error('not granted');
      const checkpoint = { fence: { key, token: jumped.token, secret: jumping.secret, holder: 'ops', runId: null }, json: '{}' };
      const saved = await store.checkpoint(checkpoint);
      model = transitions.checkpoint(model, checkpoint, saved.now).record;
      const revoke = { key, reason: 'test', by: 'ops', requireRecovery: true, expectedToken: null };
      const revoked = await store.revoke(revoke);
      model = transitions.revoke(model, revoke, revoked.now).record;
      const recovering = await step({ ...base, holder: 'fixer', secret: secret(), recovering: true });
      expect(recovering.ok).toBe(true);
      const inspected = await store.inspect(key);
      expect(inspected).toEqual(transitions.inspect(model, key, inspected.now));
      expect(inspected.waiters.map((waiter) => waiter.holder)).toEqual(['w1', 'w2']);
    });

    it('a dequeue of the first waiter while the key is free leaves it to the next (freed), as the core says', async () => {
      const key = `queue:freed:${++keys}`;
      const base = { key, runId: null, ttlMs: 60_000, attributes: {}, recovering: false };
      const holding = { ...base, holder: 'h', secret: randomBytes(16).toString('hex') };
      const held = await store.claim(holding);
      if (!held.ok) throw new Error('not granted');
      let model = transitions.claim(null, holding, held.now, held.token).record;
      for (const waiterId of ['w1', 'w2', 'w3']) {
        const command = {
          ...base,
          holder: waiterId,
          secret: randomBytes(16).toString('hex'),
          queue: { waiterIds: [waiterId], ttlMs: 60_000 },
        };
        const outcome = await store.claim(command);
        const expected = transitions.claim(model, command, outcome.now);
        expect(outcome).toEqual(expected.outcome);
        model = expected.record;
      }
      const release = { fence: { key, token: held.token, secret: holding.secret, holder: 'h', runId: null } };
      const released = await store.release(release);
      model = transitions.release(model, release, released.now).record;
      for (const [waiterIds, freed] of [
        [['w2'], false],
        [['w1'], true],
        [['w3'], false],
      ] as const) {
        const outcome = await store.dequeue({ key, waiterIds });
        const expected = transitions.dequeue(model, { key, waiterIds }, outcome.now);
        expect(outcome).toEqual(expected.outcome);
        expect(outcome).toMatchObject({ removed: 1, freed });
        model = expected.record;
      }
      const inspected = await store.inspect(key);
      expect(inspected).toEqual(transitions.inspect(model, key, inspected.now));
      expect(inspected.waiters).toEqual([]);
    });

    it('waiting claims sent at once each find their place: none lost, none twice, in the order the store took them', async () => {
      const key = `queue:race:${++keys}`;
      const base = { key, runId: null, ttlMs: 60_000, attributes: {}, recovering: false };
      const held = await store.claim({ ...base, holder: 'h', secret: randomBytes(16).toString('hex') });
      expect(held.ok).toBe(true);
      const ids = Array.from({ length: 24 }, (_, index) => `racer-${index}`);
      const outcomes = await Promise.all(
        ids.map((waiterId) =>
          store.claim({
            ...base,
            holder: waiterId,
            secret: randomBytes(16).toString('hex'),
            queue: { waiterIds: [waiterId], ttlMs: 60_000 },
          }),
        ),
      );
      for (const outcome of outcomes) expect(outcome).toMatchObject({ ok: false, reason: 'held' });
      const { waiters } = await store.inspect(key);
      expect(waiters.map((waiter) => waiter.waiterId).sort()).toEqual([...ids].sort());
      const arrivals = waiters.map((waiter) => waiter.arrivedAt);
      expect(arrivals).toEqual([...arrivals].sort((a, b) => a - b));
    });

    it('a plain claim of a key nobody waits for writes no queue; a waiting claim granted leaves none behind', async () => {
      const key = `queue:plain:${++keys}`;
      const base = { key, runId: null, ttlMs: 60_000, attributes: {}, recovering: false };
      const granted = await store.claim({
        ...base,
        holder: 'a',
        secret: randomBytes(16).toString('hex'),
        queue: { waiterIds: ['w1'], ttlMs: 1_000 },
      });
      expect(granted.ok).toBe(true);
      const stored = await opened.client.query(`SELECT waiters FROM "${table}" WHERE key = $1`, [key]);
      expect(stored.rows).toEqual([{ waiters: null }]);
    });
  });

  if (kind === 'pglite') return;
  describe(`postgres dequeue notifies (${kind})`, () => {
    it('a dequeue that leaves the key to the next waiter tells its watchers, as a release does', async () => {
      const url = await sharedPostgresUrl();
      const opened = await openPostgresClient(kind, url);
      const { default: pg } = await import('pg');
      const table = freshTable('lf_queue_notify');
      const store = createPostgresStore({
        client: opened.client,
        table,
        listener: async () => {
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          return client;
        },
      });
      try {
        await store.migrate();
        const key = 'queue:notify';
        const base = { key, runId: null, ttlMs: 60_000, attributes: {}, recovering: false };
        const holding = { ...base, holder: 'h', secret: randomBytes(16).toString('hex') };
        const held = await store.claim(holding);
        if (!held.ok) throw new Error('not granted');
        for (const waiterId of ['w1', 'w2'])
          await store.claim({
            ...base,
            holder: waiterId,
            secret: randomBytes(16).toString('hex'),
            queue: { waiterIds: [waiterId], ttlMs: 60_000 },
          });
        let heard = 0;
        const stop = await store.watchFreed!(key, () => {
          heard += 1;
        });
        await store.release({ fence: { key, token: held.token, secret: holding.secret, holder: 'h', runId: null } });
        await waitFor(() => heard === 1);
        const quiet = await store.dequeue({ key, waiterIds: ['w2'] });
        expect(quiet).toMatchObject({ removed: 1, freed: false });
        await store.claim({ ...base, holder: 'w3', secret: randomBytes(16).toString('hex'), queue: { waiterIds: ['w3'], ttlMs: 60_000 } });
        const freed = await store.dequeue({ key, waiterIds: ['w1'] });
        expect(freed).toMatchObject({ removed: 1, freed: true });
        await waitFor(() => heard === 2);
        await delay(100);
        expect(heard).toBe(2);
        stop();
      } finally {
        await opened.close();
      }
    });
  });
}

async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error('timed out waiting for a notification');
    await delay(10);
  }
}
