/**
 * Issue 24's operations under concurrency, on real redis-server, with one connection per client kind
 * (ioredis 5 and 6, node-redis 5 and 6): `setKeyState` racing claims (with `expect`), renewals and fenced
 * writes, and one submission retried concurrently from every client. Each operation is one script, so Redis
 * orders them; what must hold is what the core promises for that order.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toConnection, type RedisConnection } from '../../src/adapters/redis/connection.js';
import { createRedisStore, hashTagOf, type RedisStore } from '../../src/adapters/redis/index.js';
import type { Fence } from '../../src/fence/types.js';
import { newSecret } from '../../src/secret.js';
import { freshPrefix, openClient, sharedRedisUrl, type RedisClientKind } from './redis-harness.js';

const KINDS: readonly RedisClientKind[] = ['ioredis', 'ioredis6', 'node-redis', 'node-redis6'];
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const digestOf = (payload: string): string => createHash('sha256').update(payload).digest('hex');

describe('redis store: issue 24 operations raced from several clients', () => {
  const prefix = freshPrefix('lf-races');
  const closers: Array<() => Promise<void>> = [];
  const stores: RedisStore[] = [];
  let raw: RedisConnection;

  beforeAll(async () => {
    const url = await sharedRedisUrl();
    for (const kind of KINDS) {
      const { client, close } = await openClient(kind, url);
      closers.push(close);
      stores.push(createRedisStore({ client, prefix }));
      raw ??= toConnection(client);
    }
  });
  afterAll(async () => void (await Promise.all(closers.map((close) => close()))));

  it('setKeyState racing claims, renewals and fenced writes: a grant never writes after the state it was claimed under changed', async () => {
    const key = `race-state:${randomBytes(4).toString('hex')}`;
    const ledger = `${prefix}${hashTagOf(key)}:ledger`;
    const writer = stores[0] as RedisStore;
    await writer.setKeyState({ key, values: { rev: '0' }, by: 'scanner' });
    const refusals = new Map<string, number>();
    const note = (reason: string): void => void refusals.set(reason, (refusals.get(reason) ?? 0) + 1);
    let running = true;
    const worker = async (store: RedisStore, holder: string): Promise<void> => {
      while (running) {
        const rev = (await store.inspect(key)).state['rev'] ?? null;
        const secret = newSecret();
        const claimed = await store.claim({
          key,
          holder,
          runId: null,
          secret,
          ttlMs: 300,
          attributes: {},
          recovering: false,
          expect: { rev },
        });
        if (!claimed.ok) {
          note(claimed.reason);
          await sleep(2);
          continue;
        }
        const fence: Fence = { key, token: claimed.token, secret, holder, runId: null };
        while (running) {
          const written = await store.fencedWrite(fence, (tx) => tx.call('RPUSH', ledger, `${rev}:${claimed.token}`));
          if (!written.ok) {
            note(written.reason);
            break;
          }
          const renewed = await store.renew({ fence, ttlMs: 300 });
          if (!renewed.ok) {
            note(renewed.reason);
            if (renewed.reason === 'state-changed') expect(renewed.attribute).toMatchObject({ name: 'rev', expected: rev });
            break;
          }
        }
        await store.release({ fence });
      }
    };
    const workers = stores.flatMap((store, index) => [worker(store, `w${index}a`), worker(store, `w${index}b`)]);
    const ended: bigint[] = [];
    for (let rev = 1; rev <= 20; rev += 1) {
      await sleep(25);
      const outcome = await writer.setKeyState({ key, values: { rev: String(rev) }, by: 'scanner' });
      expect(outcome).toMatchObject({ ok: true, changed: ['rev'], state: { rev: String(rev) } });
      if (outcome.ended !== null) {
        ended.push(outcome.ended.token);
        if (outcome.ended.kind === 'state-changed')
          expect(outcome.ended.change).toEqual({ name: 'rev', from: String(rev - 1), to: String(rev) });
      }
      // an unchanged value keeps the grant and writes nothing
      expect(await writer.setKeyState({ key, values: { rev: String(rev) }, by: 'scanner' })).toMatchObject({ changed: [], ended: null });
    }
    running = false;
    await Promise.all(workers);
    const entries = ((await raw.send(['LRANGE', ledger, '0', '-1'])) as string[]).map(
      (entry) => entry.split(':').map(BigInt) as [bigint, bigint],
    );
    expect(entries.length).toBeGreaterThan(20);
    expect(ended.length).toBeGreaterThan(5);
    expect(refusals.get('state-changed') ?? 0).toBeGreaterThan(0);
    // NOTE: in server order, the revisions written never go back: once rev moves, every grant claimed under
    // an older one was ended in the same script, and a new grant needs the new rev.
    for (let at = 1; at < entries.length; at += 1)
      expect((entries[at] as [bigint, bigint])[0] >= (entries[at - 1] as [bigint, bigint])[0]).toBe(true);
    // and a grant's writes all carry the rev it was claimed under, and stop at the change that ended it
    const revOf = new Map<bigint, bigint>();
    for (const [rev, token] of entries) {
      expect(revOf.get(token) ?? rev).toBe(rev);
      revOf.set(token, rev);
    }
    for (const reason of refusals.keys())
      expect(['state-mismatch', 'held', 'state-changed', 'superseded', 'expired', 'held-back']).toContain(reason);
  });

  it('one submission retried concurrently from every client is recorded once: one write applies, every other is replayed (or a replay conflict for another payload)', async () => {
    const key = `race-submit:${randomBytes(4).toString('hex')}`;
    const counter = `${prefix}${hashTagOf(key)}:n`;
    const secret = newSecret();
    const claimed = await (stores[0] as RedisStore).claim({
      key,
      holder: 'w',
      runId: 'run-7',
      secret,
      ttlMs: 60_000,
      attributes: {},
      recovering: false,
    });
    if (!claimed.ok) throw new Error('not granted');
    const fence: Fence = { key, token: claimed.token, secret, holder: 'w', runId: 'run-7' };
    const submit = (store: RedisStore, payload: string) =>
      store.fencedWrite(fence, (tx) => tx.call('INCR', counter), {
        submission: { runId: 'decision-1', digest: digestOf(payload), receiptJson: '{"id":1}', bindToGrant: true },
      });
    const same = await Promise.all(stores.flatMap((store) => [submit(store, 'a'), submit(store, 'a'), submit(store, 'a')]));
    expect(same.filter((outcome) => outcome.ok)).toHaveLength(1);
    for (const outcome of same.filter((outcome) => !outcome.ok)) {
      expect(outcome).toMatchObject({
        reason: 'replayed',
        submission: { runId: 'decision-1', token: claimed.token, holder: 'w', receiptJson: '{"id":1}' },
      });
    }
    expect(await raw.send(['GET', counter])).toBe('1');
    const mixed = await Promise.all(
      stores.flatMap((store, index) => [
        store.fencedWrite(fence, (tx) => tx.call('INCR', counter), {
          submission: { runId: 'decision-2', digest: digestOf(index % 2 === 0 ? 'x' : 'y'), receiptJson: null, bindToGrant: false },
        }),
        store.fencedWrite(fence, (tx) => tx.call('INCR', counter), {
          submission: { runId: 'decision-2', digest: digestOf('y'), receiptJson: null, bindToGrant: false },
        }),
      ]),
    );
    const winner = mixed.find((outcome) => outcome.ok);
    expect(mixed.filter((outcome) => outcome.ok)).toHaveLength(1);
    const digest = winner?.ok ? winner.submission?.digest : undefined;
    for (const outcome of mixed.filter((outcome) => !outcome.ok)) {
      expect(['replayed', 'replay-conflict']).toContain(outcome.reason);
      if (outcome.reason === 'replayed') expect(outcome.submission.digest).toBe(digest);
      if (outcome.reason === 'replay-conflict') expect(outcome.found.digest).toBe(digest);
    }
    expect(await raw.send(['GET', counter])).toBe('2');
  });
});
