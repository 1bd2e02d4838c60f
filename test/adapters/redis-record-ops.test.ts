/**
 * The Redis store's issue-24 operations against the pure transitions, on real redis-server, for every client
 * leasefence supports: random sequences of claims (with `expect`; waiting ones naming their waiters, ones that
 * jump the queue, claims delivered again), dequeues, renewals, releases (with `holdMs`),
 * `setKeyState`, `remove`, fenced writes with submissions and with conditions (`refuseUnless`, `refuse`)
 * run on one key, while a model record follows the pure transitions at the `now` each Redis answer reports
 * (the script's own clock): every outcome and every `inspect` must be what the core says for the record as it
 * was. Then the edges: the token floor a `remove` leaves, submissions' retention, and the freed channel.
 */
import { createHash, randomBytes } from 'node:crypto';
import { fc, it } from '@fast-check/vitest';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { toConnection, type RedisConnection } from '../../src/adapters/redis/connection.js';
import { createRedisStore, hashTagOf, type RedisClient, type RedisStore } from '../../src/adapters/redis/index.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import type { ClaimCommand, FencedWriteOutcome, SubmissionCommand } from '../../src/fence/operations.js';
import * as transitions from '../../src/fence/transitions.js';
import { SUBMISSION_RETENTION, type Fence, type LeaseRecord } from '../../src/fence/types.js';
import { checkFence } from '../../src/fence/verdict.js';
import type { ListedInspection, StoreListPage } from '../../src/list.js';
import { newSecret } from '../../src/secret.js';
import { freshPrefix, openClient, sharedRedisUrl, type RedisClientKind } from './redis-harness.js';

const KINDS: readonly RedisClientKind[] = ['ioredis', 'ioredis6', 'node-redis', 'node-redis6'];
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const digestOf = (payload: string): string => createHash('sha256').update(payload).digest('hex');
const PAYLOADS = [digestOf('{"a":1}'), digestOf('{"a":2}')];
const WHO = ['a', 'b'] as const;

const step = fc.oneof(
  fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 45 }) }),
  fc.record({
    kind: fc.constant('claim' as const),
    who: fc.integer({ min: 0, max: 1 }),
    ttl: fc.constantFrom(30, 60, 5_000),
    expect: fc.constantFrom(undefined, undefined, undefined, {}, { rev: '1' }, { tier: null }, { rev: '2', tier: '1' }),
    // NOTE: a waiting claim names its waiters, the claimant first (fair waiting: fence/queue.ts), or jumps the queue.
    wait: fc.option(
      fc.record({
        ids: fc.uniqueArray(fc.constantFrom('q1', 'q2', 'q3', 'q4'), { minLength: 1, maxLength: 3 }),
        ttl: fc.constantFrom(20, 60, 5_000),
      }),
      { freq: 2, nil: undefined },
    ),
    jumpQueue: fc.constantFrom(false, false, false, true),
  }),
  fc.record({ kind: fc.constant('again' as const) }),
  fc.record({
    kind: fc.constant('dequeue' as const),
    ids: fc.uniqueArray(fc.constantFrom('q1', 'q2', 'q3', 'q4', 'nobody'), { minLength: 0, maxLength: 3 }),
  }),
  fc.record({ kind: fc.constant('renew' as const), who: fc.integer({ min: 0, max: 1 }) }),
  fc.record({
    kind: fc.constant('release' as const),
    who: fc.integer({ min: 0, max: 1 }),
    holdMs: fc.constantFrom(undefined, 0, 20, 60),
    checkpoint: fc.constantFrom(undefined, null, '{"at":1}'),
  }),
  fc.record({
    kind: fc.constant('state' as const),
    values: fc.dictionary(fc.constantFrom('rev', 'tier', 'ü/"'), fc.option(fc.constantFrom('1', '2', ''), { freq: 4 })),
    holdMs: fc.constantFrom(undefined, null, 0, 25, 80),
  }),
  fc.record({
    kind: fc.constant('remove' as const),
    force: fc.boolean(),
    expected: fc.constantFrom('any', 'current', 'other'),
  }),
  fc.record({
    kind: fc.constant('write' as const),
    who: fc.integer({ min: 0, max: 1 }),
    submission: fc.option(
      fc.record({ runId: fc.constantFrom('r1', 'r2', 'r3'), payload: fc.integer({ min: 0, max: 1 }), bind: fc.boolean() }),
      { nil: undefined },
    ),
    condition: fc.constantFrom('none', 'met', 'unmet', 'refuse'),
  }),
  fc.record({ kind: fc.constant('inspect' as const) }),
);

/** The outcome without what the model cannot know: a write's value (the counter's reply). */
const comparable = <T>(outcome: FencedWriteOutcome<T>): unknown => {
  if (!outcome.ok) return outcome;
  const { value: _value, ...rest } = outcome;
  return rest;
};

describe.each(KINDS)('redis store (%s): issue 24 operations answer as the pure transitions', (kind) => {
  let client: RedisClient;
  let close: () => Promise<void>;
  let raw: RedisConnection;
  const prefix = freshPrefix(`lf-ops-${kind}`);
  let store: RedisStore;

  beforeAll(async () => {
    ({ client, close } = await openClient(kind, await sharedRedisUrl()));
    raw = toConnection(client);
    store = createRedisStore({ client, prefix });
  });
  afterAll(async () => close?.());

  it.prop([fc.array(step, { minLength: 4, maxLength: 40, size: 'max' })], { numRuns: kind === 'ioredis' ? 50 : 12 })(
    'every outcome and inspection equals the pure transition of the record as it was, at the store’s now',
    async (steps) => {
      const key = `ops:${randomBytes(6).toString('hex')}`;
      const gateKey = `${prefix}${hashTagOf(key)}:gate`;
      const counter = `${prefix}${hashTagOf(key)}:n`;
      await raw.send(['SET', gateKey, 'open']);
      let model: LeaseRecord | null = null;
      const fences: (Fence | null)[] = [null, null];
      let applied = 0;
      let highest = 0n;
      let last: ClaimCommand | null = null;
      const fenceOf = (who: number): Fence =>
        fences[who] ?? { key, token: 1n, secret: newSecret(), holder: WHO[who] ?? 'a', runId: `run-${WHO[who]}` };
      for (const s of steps) {
        switch (s.kind) {
          case 'tick':
            await sleep(s.ms);
            break;
          case 'claim': {
            const command: ClaimCommand = {
              key,
              holder: WHO[s.who] ?? 'a',
              runId: `run-${WHO[s.who]}`,
              secret: newSecret(),
              ttlMs: s.ttl,
              attributes: {},
              recovering: false,
              ...(s.expect === undefined ? {} : { expect: s.expect }),
              ...(s.wait === undefined ? {} : { queue: { waiterIds: s.wait.ids, ttlMs: s.wait.ttl } }),
              ...(s.jumpQueue ? { jumpQueue: true } : {}),
            };
            last = command;
            const outcome = await store.claim(command);
            const pure = transitions.claim(model, command, outcome.now, outcome.ok ? outcome.token : 0n);
            expect(outcome).toEqual(pure.outcome);
            model = pure.record;
            if (outcome.ok) {
              // NOTE: tokens grow across removals too: the floor the tombstone keeps.
              expect(outcome.token > highest).toBe(true);
              highest = outcome.token;
              fences[s.who] = { key, token: outcome.token, secret: command.secret, holder: command.holder, runId: command.runId };
            }
            break;
          }
          case 'again': {
            // NOTE: the last claim delivered again (its reply lost): the core's answer for the record as it is now.
            if (last === null) break;
            const command = last;
            const outcome = await store.claim(command);
            const mine = model?.grant?.secret === command.secret ? model.grant : null;
            if (mine !== null && mine !== undefined && mine.expiresAt !== null && mine.expiresAt <= outcome.now) {
              // NOTE: the store answers its own grant again even once it expired (the script knows it by its secret).
              expect(outcome).toMatchObject({ ok: true, token: mine.token });
              break;
            }
            const pure = transitions.claim(model, command, outcome.now, outcome.ok ? outcome.token : 0n);
            expect(outcome).toEqual(pure.outcome);
            model = pure.record;
            if (outcome.ok && pure.changed) {
              expect(outcome.token > highest).toBe(true);
              highest = outcome.token;
            }
            break;
          }
          case 'dequeue': {
            const command = { key, waiterIds: s.ids };
            const outcome = await store.dequeue(command);
            const pure = transitions.dequeue(model, command, outcome.now);
            expect(outcome).toEqual(pure.outcome);
            model = pure.record;
            break;
          }
          case 'renew': {
            const command = { fence: fenceOf(s.who), ttlMs: 5_000 };
            const outcome = await store.renew(command);
            const pure = transitions.renew(model, command, outcome.now);
            expect(outcome).toEqual(pure.outcome);
            model = pure.record;
            break;
          }
          case 'release': {
            const command = {
              fence: fenceOf(s.who),
              ...(s.checkpoint === undefined ? {} : { checkpointJson: s.checkpoint }),
              ...(s.holdMs === undefined ? {} : { holdMs: s.holdMs }),
            };
            const outcome = await store.release(command);
            const pure = transitions.release(model, command, outcome.now);
            expect(outcome).toEqual(pure.outcome);
            model = pure.record;
            break;
          }
          case 'state': {
            const command = { key, values: s.values, by: 'scanner', ...(s.holdMs === undefined ? {} : { holdMs: s.holdMs }) };
            const outcome = await store.setKeyState(command);
            const pure = transitions.setKeyState(model, command, outcome.now);
            expect(outcome).toEqual(pure.outcome);
            model = pure.record;
            break;
          }
          case 'remove': {
            const current = model?.token ?? 0n;
            const expectedToken = s.expected === 'any' ? null : s.expected === 'current' ? current : current + 7n;
            const command = { key, force: s.force, expectedToken };
            const outcome = await store.remove(command);
            const pure = transitions.remove(model, command, outcome.now);
            expect(outcome).toEqual(pure.outcome);
            model = pure.record;
            break;
          }
          case 'write': {
            const fence = fenceOf(s.who);
            const submission: SubmissionCommand | undefined =
              s.submission === undefined
                ? undefined
                : {
                    runId: s.submission.runId,
                    digest: PAYLOADS[s.submission.payload] ?? '',
                    receiptJson: `{"run":"${s.submission.runId}"}`,
                    bindToGrant: s.submission.bind,
                  };
            const outcome = await store.fencedWrite(
              fence,
              (tx) => {
                if (s.condition === 'met') tx.refuseUnless({ read: ['GET', gateKey], equals: 'open' }, 'gate-closed');
                if (s.condition === 'unmet')
                  tx.refuseUnless({ read: ['EXISTS', gateKey], notEquals: 1 }, 'gate-exists', 'the gate key exists');
                if (s.condition === 'refuse') tx.refuse('refused-outright');
                return tx.call('INCR', counter);
              },
              submission === undefined ? {} : { submission },
            );
            const refused =
              submission === undefined
                ? checkFence(model, fence, outcome.now)
                : (transitions.checkSubmission(model, fence, submission, outcome.now) ?? { ok: true });
            if (!refused.ok) expect(outcome).toEqual(refused);
            else if (s.condition === 'unmet' || s.condition === 'refuse') {
              const [code, detail] = s.condition === 'unmet' ? ['gate-exists', 'the gate key exists'] : ['refused-outright', null];
              expect(outcome).toEqual({ ok: false, reason: 'write-refused', key, code, detail, token: fence.token, now: outcome.now });
            } else {
              applied += 1;
              let expected: unknown = { ok: true, token: fence.token, checkpoint: null, now: outcome.now };
              if (submission !== undefined && model !== null) {
                const recorded = transitions.recordSubmission(model, fence, submission, outcome.now);
                model = recorded.record;
                expected = { ...(expected as object), submission: recorded.submission };
              }
              expect(comparable(outcome)).toEqual(expected);
            }
            break;
          }
          case 'inspect': {
            const inspection = await store.inspect(key);
            expect(inspection).toEqual(transitions.inspect(model, key, inspection.now));
            break;
          }
        }
      }
      const inspection = await store.inspect(key);
      expect(inspection).toEqual(transitions.inspect(model, key, inspection.now));
      expect(Number((await raw.send(['GET', counter])) ?? 0)).toBe(applied);
    },
  );
});

describe('redis store: issue 24 edges', () => {
  let client: RedisClient;
  let close: () => Promise<void>;
  let raw: RedisConnection;
  const prefix = freshPrefix('lf-ops-edges');
  const names = keyNames(prefix);
  let store: RedisStore;

  beforeAll(async () => {
    ({ client, close } = await openClient('ioredis', await sharedRedisUrl()));
    raw = toConnection(client);
    store = createRedisStore({ client, prefix });
  });
  afterAll(async () => close?.());

  const claim = (key: string, holder = 'a', extra: Partial<ClaimCommand> = {}) =>
    store.claim({ key, holder, runId: null, secret: newSecret(), ttlMs: 60_000, attributes: {}, recovering: false, ...extra });

  it('a key removed and claimed again never reissues a token, even when its last token is ahead of the clock (same µs, or a clock behind)', async () => {
    const key = `floor:${randomBytes(4).toString('hex')}`;
    const first = await claim(key);
    if (!first.ok) throw new Error('not granted');
    // NOTE: a token ahead of TIME, as several grants and revokes within one µs, or a clock stepped back, leave.
    const ahead = first.token + 5_000_000n;
    await raw.send(['HSET', names.record(key, 'lease'), 'lease', String(ahead)]);
    expect(await store.remove({ key, force: true, expectedToken: null })).toMatchObject({ ok: true, token: ahead });
    expect(await store.inspect(key)).toMatchObject({ exists: false, token: 0n });
    // the tombstone keeps the floor (and the memos) for the replay window, or until TIME passes the floor
    const ttl = Number(await raw.send(['PTTL', names.record(key, 'lease')]));
    expect(ttl).toBeGreaterThan(4_000);
    const again = await claim(key);
    expect(again).toMatchObject({ ok: true, token: ahead + 1n, previous: null, checkpoint: null });
    // NOTE: the outcome is the core's on the replied pre-image and floor; the record shows what the script stored.
    expect(await store.inspect(key)).toMatchObject({ token: ahead + 1n, grant: { token: ahead + 1n } });
    expect(Number(await raw.send(['PTTL', names.record(key, 'lease')]))).toBe(-1);
    // a record made again by setKeyState (token 0) keeps the floor for its first claim
    const other = `floor2:${randomBytes(4).toString('hex')}`;
    const granted = await claim(other);
    if (!granted.ok) throw new Error('not granted');
    await raw.send(['HSET', names.record(other, 'lease'), 'lease', String(granted.token + 9_000_000n)]);
    await store.remove({ key: other, force: true, expectedToken: null });
    expect(await store.setKeyState({ key: other, values: { rev: '1' }, by: 'scanner' })).toMatchObject({ ok: true, changed: ['rev'] });
    expect(await store.inspect(other)).toMatchObject({ exists: true, token: 0n, state: { rev: '1' } });
    expect(await store.remove({ key: other, force: false, expectedToken: 0n })).toMatchObject({ ok: true, token: 0n });
    expect(await claim(other)).toMatchObject({ ok: true, token: granted.token + 9_000_001n });
    expect(await store.inspect(other)).toMatchObject({ grant: { token: granted.token + 9_000_001n } });
  });

  it('a remove right after a claim, and a claim right after it, in one pipeline (the same µs or ms): the new token is still larger', async () => {
    for (let round = 0; round < 50; round += 1) {
      const key = `tight:${round}:${randomBytes(4).toString('hex')}`;
      const [a, removed, b] = await Promise.all([claim(key), store.remove({ key, force: true, expectedToken: null }), claim(key, 'b')]);
      expect(removed.ok).toBe(true);
      if (!a.ok || !b.ok) throw new Error('not granted');
      expect(b.token > a.token).toBe(true);
      expect(await store.inspect(key)).toMatchObject({ grant: { token: b.token } });
    }
  });

  it(`a key keeps the newest ${SUBMISSION_RETENTION} submissions in their own hash (the record never holds them); older run ids are forgotten`, async () => {
    const key = `retention:${randomBytes(4).toString('hex')}`;
    const secret = newSecret();
    const granted = await claim(key, 'a', { secret });
    if (!granted.ok) throw new Error('not granted');
    const fence: Fence = { key, token: granted.token, secret, holder: 'a', runId: null };
    const counter = `${prefix}${hashTagOf(key)}:n`;
    const submit = (runId: string) =>
      store.fencedWrite(fence, (tx) => tx.call('INCR', counter), {
        submission: { runId, digest: PAYLOADS[0] ?? '', receiptJson: null, bindToGrant: false },
      });
    for (let i = 0; i < SUBMISSION_RETENTION + 4; i += 1)
      expect(await submit(`r${i}`)).toMatchObject({ ok: true, submission: { runId: `r${i}` } });
    expect(await raw.send(['HLEN', names.submissions(key)])).toBe(SUBMISSION_RETENTION + 1);
    const fields = (await raw.send(['HKEYS', names.record(key, 'lease')])) as string[];
    expect(fields.filter((field) => field.startsWith('r:'))).toEqual([]);
    expect(await submit('r4')).toMatchObject({ ok: false, reason: 'replayed', submission: { runId: 'r4', token: granted.token } });
    expect(await submit('r0')).toMatchObject({ ok: true });
    expect(await raw.send(['GET', counter])).toBe(String(SUBMISSION_RETENTION + 5));
    // remove deletes the submissions with the record
    expect(await store.remove({ key, force: true, expectedToken: null })).toMatchObject({ ok: true });
    expect(await raw.send(['EXISTS', names.submissions(key)])).toBe(0);
  });

  it('the freed channel tells waiters when setKeyState ends a grant and when remove deletes the record; an unchanged state tells nothing', async () => {
    const key = `freed:${randomBytes(4).toString('hex')}`;
    const subscriber = new Redis(await sharedRedisUrl());
    const messages: string[] = [];
    subscriber.on('smessage', (_channel: string, message: string) => messages.push(message));
    await subscriber.ssubscribe(`${names.record(key, 'lease')}:freed`);
    try {
      await store.setKeyState({ key, values: { rev: '1' }, by: 'scanner' });
      await claim(key);
      await store.setKeyState({ key, values: { rev: '1' }, by: 'scanner' });
      expect(await store.setKeyState({ key, values: { rev: '2' }, by: 'scanner' })).toMatchObject({ ended: { kind: 'state-changed' } });
      await claim(key);
      await store.remove({ key, force: true, expectedToken: null });
      await sleep(100);
      expect(messages).toEqual(['state-changed', 'removed']);
      // list shows the key state and a hold that has not passed
      await store.setKeyState({ key, values: { tier: 'b' }, by: 'ops', holdMs: 60_000 });
      const listed: ListedInspection[] = [];
      let cursor: string | null = null;
      do {
        const page: StoreListPage | undefined = await store.list?.({ prefix: key, limit: 1_000, cursor });
        listed.push(...(page?.leases ?? []));
        cursor = page?.cursor ?? null;
      } while (cursor !== null);
      expect(listed.find((lease) => lease.key === key)).toMatchObject({ state: { tier: 'b' }, heldUntil: expect.any(Number) });
    } finally {
      subscriber.disconnect();
    }
  });

  it('refuses bad input to the new operations before any I/O (InvalidArgumentError): state values, holds, submissions, conditions', async () => {
    const sent: string[][] = [];
    const watched = createRedisStore({
      client: {
        send: (args) => {
          sent.push([...args]);
          return raw.send(args);
        },
      },
      prefix,
    });
    const key = `bad:${randomBytes(4).toString('hex')}`;
    const fence: Fence = { key, token: 1n, secret: newSecret(), holder: 'a', runId: null };
    const bad: Array<() => Promise<unknown>> = [
      () => watched.setKeyState({ key, values: { rev: 5 as unknown as string }, by: 'x' }),
      () => watched.setKeyState({ key, values: { rev: '\uD800' }, by: 'x' }),
      () => watched.setKeyState({ key, values: {}, by: 'x', holdMs: -1 }),
      () => watched.setKeyState({ key, values: {}, by: 'x', holdMs: 1.5 }),
      () => watched.setKeyState({ key, values: {}, by: 'a\u0000b' }),
      () => watched.release({ fence, holdMs: Number.NaN }),
      () =>
        watched.claim({
          key,
          holder: 'a',
          runId: null,
          secret: newSecret(),
          ttlMs: 1_000,
          attributes: {},
          recovering: false,
          expect: { rev: 1 as unknown as string },
        }),
      () =>
        watched.fencedWrite(fence, () => undefined, {
          submission: { runId: '', digest: PAYLOADS[0] ?? '', receiptJson: null, bindToGrant: false },
        }),
      () =>
        watched.fencedWrite(fence, () => undefined, {
          submission: { runId: 'r', digest: 'not-hex', receiptJson: null, bindToGrant: false },
        }),
      () => watched.fencedWrite(fence, (tx) => tx.refuseUnless({ read: ['INCR', 'x'], equals: 1 }, 'code')),
      () => watched.fencedWrite(fence, (tx) => tx.refuseUnless({ read: ['GET', 'x'], equals: 1, notEquals: 2 }, 'code')),
      () => watched.fencedWrite(fence, (tx) => tx.refuseUnless({ read: ['GET', 'x'], equals: 'a' }, 'bad code!')),
      () => watched.fencedWrite(fence, (tx) => tx.refuseUnless({ read: ['GET', 'x'], equals: 1.5 }, 'code')),
      () => watched.fencedWrite(fence, (tx) => tx.refuse('')),
    ];
    for (const attempt of bad) await expect(attempt()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(sent).toEqual([]);
  });
});

/** Steps of the fair-waiting property: mostly claims (waiting, plain, jumping) and releases, so queues form and drain. */
const queueStep = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 40 }) }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('claim' as const),
      holder: fc.constantFrom('a', 'b', 'c'),
      ttl: fc.constantFrom(15, 60, 5_000),
      ids: fc.option(fc.uniqueArray(fc.constantFrom('q1', 'q2', 'q3', 'q4', 'q5'), { minLength: 1, maxLength: 3 }), {
        freq: 4,
        nil: undefined,
      }),
      placeTtl: fc.constantFrom(15, 50, 5_000),
      jumpQueue: fc.constantFrom(false, false, false, false, true),
      recovering: fc.constantFrom(false, false, false, true),
      expect: fc.constantFrom(undefined, undefined, undefined, undefined, { tier: '1' }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('again' as const) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('release' as const), holdMs: fc.constantFrom(undefined, undefined, 30) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('dequeue' as const),
      ids: fc.uniqueArray(fc.constantFrom('q1', 'q2', 'q3', 'q4', 'q5', 'nobody'), { minLength: 0, maxLength: 3 }),
    }),
  },
  fc.record({ kind: fc.constant('revoke' as const), requireRecovery: fc.boolean() }),
  fc.record({ kind: fc.constant('checkpoint' as const) }),
  fc.record({ kind: fc.constant('state' as const), tier: fc.constantFrom('1', '2'), holdMs: fc.constantFrom(undefined, null, 25) }),
  fc.record({ kind: fc.constant('remove' as const) }),
  fc.record({ kind: fc.constant('inspect' as const) }),
);

describe('redis store: fair waiting answers as the pure transitions', () => {
  let client: RedisClient;
  let close: () => Promise<void>;
  const prefix = freshPrefix('lf-queue-ops');
  let store: RedisStore;

  beforeAll(async () => {
    ({ client, close } = await openClient('ioredis', await sharedRedisUrl()));
    store = createRedisStore({ client, prefix });
  });
  afterAll(async () => close?.());

  const plain = (key: string, holder: string, extra: Partial<ClaimCommand> = {}): ClaimCommand => ({
    key,
    holder,
    runId: null,
    secret: newSecret(),
    ttlMs: 60_000,
    attributes: {},
    recovering: false,
    ...extra,
  });
  const waiting = (key: string, holder: string, waiterIds: readonly string[]): ClaimCommand =>
    plain(key, holder, { queue: { waiterIds, ttlMs: 30_000 } });
  const fenceOf = (command: ClaimCommand, token: bigint): Fence => ({
    key: command.key,
    token,
    secret: command.secret,
    holder: command.holder,
    runId: null,
  });

  it('the queue is one field of the record: absent while nobody waits, deleted when the last waiter is granted; claim-next and acquirePermit jump it and keep it', async () => {
    const raw = toConnection(client);
    const names = keyNames(prefix);
    const field = (key: string) => raw.send(['HGET', names.record(key, 'lease'), 'waiters']);
    const key = `field:${randomBytes(4).toString('hex')}`;
    const a = plain(key, 'a');
    const granted = await store.claim(a);
    if (!granted.ok) throw new Error('not granted');
    expect(await field(key)).toBeNull();
    expect(await store.claim(plain(key, 'b'))).toMatchObject({ ok: false, reason: 'held' });
    expect(await field(key)).toBeNull();
    expect(await store.claim(waiting(key, 'w', ['id-1']))).toMatchObject({ ok: false, reason: 'held' });
    expect(String(await field(key))).toMatch(/^id-1\0w\0\d+\0\d+\0$/);
    await store.release({ fence: fenceOf(a, granted.token) });
    expect(await store.claim(waiting(key, 'w', ['id-1']))).toMatchObject({ ok: true });
    expect(await field(key)).toBeNull();

    // an item of a claim-next set: claim-next grants it over its waiter, whose place stays
    const set = `set${randomBytes(3).toString('hex')}`;
    const item = `{${set}}:a`;
    await store.addItems?.({ set, keys: [item] });
    const holder = plain(item, 'h');
    const held = await store.claim(holder);
    if (!held.ok) throw new Error('not granted');
    await store.claim(waiting(item, 'w', ['id-9']));
    const before = await field(item);
    await store.release({ fence: fenceOf(holder, held.token) });
    expect(
      await store.claimNext?.({
        set,
        holder: 'n',
        runId: null,
        secret: newSecret(),
        ttlMs: 60_000,
        attributes: {},
        onExpired: 'take-over',
      }),
    ).toMatchObject({ ok: true, key: item });
    expect(await field(item)).toEqual(before);
    expect((await store.inspect(item)).waiters).toMatchObject([{ waiterId: 'id-9', holder: 'w' }]);

    // a permit of a semaphore: an acquire takes it over its waiter, whose place stays
    const semaphore = `sem${randomBytes(3).toString('hex')}`;
    const permit = `{${semaphore}}:permit-1`;
    const onPermit = plain(permit, 'h');
    const permitted = await store.claim(onPermit);
    if (!permitted.ok) throw new Error('not granted');
    await store.claim(waiting(permit, 'w', ['id-7']));
    const kept = await field(permit);
    await store.release({ fence: fenceOf(onPermit, permitted.token) });
    expect(
      await store.acquirePermit?.({
        semaphore,
        limit: 1,
        holder: 'p',
        runId: null,
        secret: newSecret(),
        ttlMs: 60_000,
        attributes: {},
        recovering: false,
      }),
    ).toMatchObject({ ok: true, key: permit });
    expect(await field(permit)).toEqual(kept);
  });

  it('a waiting claim naming 100 ids of 64 characters, with a long holder full of separators of other kinds, is queued whole; ids Redis cannot store are refused before I/O', async () => {
    const key = `wide:${randomBytes(4).toString('hex')}`;
    const a = plain(key, 'a');
    expect(await store.claim(a)).toMatchObject({ ok: true });
    const ids = Array.from({ length: 100 }, (_, i) => `${String(i).padStart(3, '0')}${'x'.repeat(61)}`);
    const holder = `h\u0001|{}"'\\ ${'é'.repeat(200)}`;
    expect(await store.claim(waiting(key, holder, ids))).toMatchObject({ ok: false, reason: 'held' });
    const inspection = await store.inspect(key);
    expect(inspection.waiters.map((waiter) => waiter.waiterId)).toEqual(ids);
    expect(inspection.waiters.every((waiter) => waiter.holder === holder)).toBe(true);
    await expect(store.claim(waiting(key, 'w', ['a\u0000b']))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(store.claim(waiting(key, 'w', ['\ud800']))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(store.dequeue({ key, waiterIds: ['a\u0000b'] })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await store.dequeue({ key, waiterIds: ids.slice(0, 50) })).toMatchObject({ ok: true, removed: 50, freed: false });
    // NOTE: delivered again (its reply lost), a dequeue finds the ids gone and changes nothing.
    expect(await store.dequeue({ key, waiterIds: ids.slice(0, 50) })).toMatchObject({ ok: true, removed: 0, freed: false });
    expect((await store.inspect(key)).waiters.map((waiter) => waiter.waiterId)).toEqual(ids.slice(50));
  });

  it.prop([fc.array(queueStep, { minLength: 10, maxLength: 50, size: 'max' })], { numRuns: 60 })(
    'waiting claims, plain and jumping claims, claims delivered again and dequeues: every outcome and the live queue equal the core’s',
    async (steps) => {
      const key = `queue:${randomBytes(6).toString('hex')}`;
      let model: LeaseRecord | null = null;
      let current: Fence | null = null;
      let last: ClaimCommand | null = null;
      const inspectBoth = async (): Promise<void> => {
        const inspection = await store.inspect(key);
        expect(inspection).toEqual(transitions.inspect(model, key, inspection.now));
      };
      for (const s of steps) {
        switch (s.kind) {
          case 'tick':
            await sleep(s.ms);
            break;
          case 'claim':
          case 'again': {
            let command: ClaimCommand;
            if (s.kind === 'again') {
              if (last === null) break;
              command = last;
            } else {
              command = {
                key,
                holder: s.holder,
                runId: null,
                secret: newSecret(),
                ttlMs: s.ttl,
                attributes: {},
                recovering: s.recovering,
                ...(s.expect === undefined ? {} : { expect: s.expect }),
                ...(s.ids === undefined ? {} : { queue: { waiterIds: s.ids, ttlMs: s.placeTtl } }),
                ...(s.jumpQueue ? { jumpQueue: true } : {}),
              };
            }
            last = command;
            const outcome = await store.claim(command);
            const mine = model?.grant?.secret === command.secret ? model.grant : null;
            if (mine !== null && mine !== undefined && mine.expiresAt !== null && mine.expiresAt <= outcome.now) {
              // NOTE: the store answers its own grant again even once it expired (the script knows it by its secret).
              expect(outcome).toMatchObject({ ok: true, token: mine.token });
              break;
            }
            const pure = transitions.claim(model, command, outcome.now, outcome.ok ? outcome.token : 0n);
            expect(outcome).toEqual(pure.outcome);
            model = pure.record;
            if (outcome.ok) current = { key, token: outcome.token, secret: command.secret, holder: command.holder, runId: null };
            break;
          }
          case 'release': {
            if (current === null) break;
            const command = { fence: current, ...(s.holdMs === undefined ? {} : { holdMs: s.holdMs }) };
            const outcome = await store.release(command);
            const pure = transitions.release(model, command, outcome.now);
            expect(outcome).toEqual(pure.outcome);
            model = pure.record;
            break;
          }
          case 'checkpoint': {
            if (current === null) break;
            const command = { fence: current, json: '{"at":1}' };
            const outcome = await store.checkpoint(command);
            const pure = transitions.checkpoint(model, command, outcome.now);
            expect(outcome).toEqual(pure.outcome);
            model = pure.record;
            break;
          }
          case 'dequeue': {
            const command = { key, waiterIds: s.ids };
            const outcome = await store.dequeue(command);
            const pure = transitions.dequeue(model, command, outcome.now);
            expect(outcome).toEqual(pure.outcome);
            model = pure.record;
            break;
          }
          case 'revoke': {
            const command = { key, reason: 'ops', by: 'ops', requireRecovery: s.requireRecovery, expectedToken: null };
            const outcome = await store.revoke(command);
            const pure = transitions.revoke(model, command, outcome.now);
            expect(outcome).toEqual(pure.outcome);
            model = pure.record;
            break;
          }
          case 'state': {
            const command = { key, values: { tier: s.tier }, by: 'ops', ...(s.holdMs === undefined ? {} : { holdMs: s.holdMs }) };
            const outcome = await store.setKeyState(command);
            const pure = transitions.setKeyState(model, command, outcome.now);
            expect(outcome).toEqual(pure.outcome);
            model = pure.record;
            break;
          }
          case 'remove': {
            const command = { key, force: true, expectedToken: null };
            const outcome = await store.remove(command);
            const pure = transitions.remove(model, command, outcome.now);
            expect(outcome).toEqual(pure.outcome);
            model = pure.record;
            break;
          }
          case 'inspect':
            await inspectBoth();
            break;
        }
      }
      await inspectBoth();
    },
  );
});
