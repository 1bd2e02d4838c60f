/**
 * Re-delivery on a shared lease: two workers (two stores on one Redis) write under one grant, and a request
 * re-delivered after a lost reply (the very command sent again, as ioredis re-sends it after a reconnect)
 * never applies twice, whichever worker sent it, also when two writes on one lease were in flight together.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisStore, hashTagOf } from '../../src/adapters/redis/index.js';
import { fromIoredis, type IoredisClient, type RedisConnection } from '../../src/adapters/redis/connection.js';
import { WRITTEN } from '../../src/adapters/redis/write-scripts.js';
import { REPLAY_SLOTS } from '../../src/adapters/redis/script-parts.js';
import { createLeases } from '../../src/leases.js';
import { REPLY } from '../../src/adapters/redis/scripts.js';
import { newSecret } from '../../src/secret.js';
import { freshPrefix, openClient, sharedRedisUrl } from './redis-harness.js';

let raw: RedisConnection;
let close: () => Promise<void> = async () => undefined;
const prefix = freshPrefix('lf-redelivery');

beforeAll(async () => {
  const opened = await openClient('ioredis', await sharedRedisUrl());
  raw = fromIoredis(opened.client as IoredisClient);
  close = opened.close;
});
afterAll(async () => close());

/** A worker's connection: records every command it sends and every reply. */
function worker(holder: string) {
  const sent: string[][] = [];
  const replies: unknown[] = [];
  const connection: RedisConnection = {
    send: (args) => {
      sent.push([...args]);
      return raw.send(args).then((reply) => {
        replies.push(reply);
        return reply;
      });
    },
  };
  return { leases: createLeases(createRedisStore({ client: connection, prefix }), { holder, ttlMs: 60_000 }), sent, replies };
}

/** A store over a connection that keeps every command it sends (a test re-delivers one, as a retry would). */
function recordingStore() {
  const sent: string[][] = [];
  const connection: RedisConnection = {
    send: (args) => {
      sent.push([...args]);
      return raw.send(args);
    },
  };
  return { store: createRedisStore({ client: connection, prefix }), sent };
}

const counterOf = async (counter: string): Promise<string | null> => (await raw.send(['GET', counter])) as string | null;

describe('redis adapter: re-delivered requests on a shared lease', () => {
  it('a fenced write, checkpoint or revoke re-delivered after another worker wrote in between applies once and replies as it first did', async () => {
    const [old, next] = [worker('old'), worker('new')];
    const key = `shared-replay:${Date.now()}`;
    const counter = `${prefix}${hashTagOf(key)}:n`;
    const lease = await old.leases.claimOrThrow(key);
    const restored = next.leases.restore(lease.export());
    const firsts: { command: string[]; reply: unknown }[] = [];
    const send = async (from: { sent: string[][]; replies: unknown[] }, run: () => Promise<unknown>): Promise<void> => {
      await run();
      // NOTE: the last command sent (a first EVALSHA may have been refused with NOSCRIPT, then EVAL ran).
      firsts.push({ command: from.sent[from.sent.length - 1] as string[], reply: from.replies[from.replies.length - 1] });
    };
    for (let round = 0; round < 3; round += 1) {
      await send(old, () => old.leases.fencedWriteOrThrow(lease, (tx) => tx.call('INCR', counter)));
      await send(next, () => next.leases.fencedWriteOrThrow(restored, (tx) => tx.call('INCR', counter)));
      await send(old, () => old.leases.checkpointOrThrow(lease, { old: round }));
      await send(next, () => next.leases.checkpointOrThrow(restored, { next: round }));
    }
    expect(await counterOf(counter)).toBe('6');
    const checkpoint = (await next.leases.inspect(key)).checkpoint;
    // NOTE: 12 memoised requests on one record, more than REPLAY_SLOTS: only the last REPLAY_SLOTS are kept.
    firsts.splice(0, firsts.length - REPLAY_SLOTS);
    for (const { command, reply } of firsts) expect(await raw.send(command)).toEqual(reply);
    expect(await counterOf(counter)).toBe('6');
    expect((await next.leases.inspect(key)).checkpoint).toEqual(checkpoint);
    // NOTE: a revoke re-delivered after the next grant returns its first reply and leaves that grant alone.
    const revoking = await next.leases.revoke(key, { reason: 'shared' });
    const revoke = next.sent[next.sent.length - 1] as string[];
    const after = await old.leases.claimOrThrow(key);
    expect(await raw.send(revoke)).toEqual(next.replies[next.replies.length - 1]);
    expect(revoking).toMatchObject({ ok: true });
    expect((await next.leases.inspect(key)).grant).toMatchObject({ token: after.token, holder: 'old' });
  });

  it('two fenced writes on one lease in flight together, both re-delivered (twice, in either order): each applies once and replays its own first reply', async () => {
    const { leases, sent } = worker('new');
    const key = `concurrent-replay:${Date.now()}`;
    const [a, b] = [`${prefix}${hashTagOf(key)}:a`, `${prefix}${hashTagOf(key)}:b`];
    const lease = await leases.claimOrThrow(key);
    const before = sent.length;
    const [first, second] = await Promise.all([
      leases.fencedWriteOrThrow(lease, (tx) => tx.call('INCR', a)),
      leases.fencedWriteOrThrow(lease, (tx) => tx.call('INCRBY', b, 10)),
    ]);
    expect([first, second]).toEqual([1, 10]);
    const [writeA, writeB] = sent.slice(before) as [string[], string[]];
    const replies = await Promise.all([raw.send(writeB), raw.send(writeA), raw.send(writeA), raw.send(writeB)]);
    expect((replies[1] as unknown[])[WRITTEN.replies]).toEqual([1]);
    expect((replies[0] as unknown[])[WRITTEN.replies]).toEqual([10]);
    expect(replies[2]).toEqual(replies[1]);
    expect(replies[3]).toEqual(replies[0]);
    expect([await counterOf(a), await counterOf(b)]).toEqual(['1', '10']);
  });

  it('a fenced write with a submission re-delivered applies once: within the replay window it replays its first reply; after it (memo gone), the submission lookup answers and nothing runs', async () => {
    const { store, sent } = recordingStore();
    const key = `submit-replay:${Date.now()}`;
    const counter = `${prefix}${hashTagOf(key)}:n`;
    const secret = newSecret();
    const claimed = await store.claim({ key, holder: 'w', runId: 'r', secret, ttlMs: 60_000, attributes: {}, recovering: false });
    if (!claimed.ok) throw new Error('not granted');
    const fence = { key, token: claimed.token, secret, holder: 'w', runId: 'r' };
    const submission = { runId: 'decision-9', digest: 'a'.repeat(64), receiptJson: '{"ok":true}', bindToGrant: false };
    const first = await store.fencedWrite(fence, (tx) => tx.call('INCR', counter), { submission });
    expect(first).toMatchObject({ ok: true, value: 1, submission: { runId: 'decision-9', token: claimed.token } });
    const command = sent[sent.length - 1] as string[];
    const reply = await raw.send(command);
    expect((reply as unknown[])[WRITTEN.replies]).toEqual([1]);
    expect(await counterOf(counter)).toBe('1');
    // NOTE: push the memo out (REPLAY_SLOTS newer memoised writes without a submission), then end the grant.
    for (let i = 0; i < REPLAY_SLOTS; i += 1) await store.fencedWrite(fence, (tx) => tx.call('GET', counter));
    await store.release({ fence });
    const late = (await raw.send(command)) as unknown[];
    expect(String(late[REPLY.status]).startsWith('-')).toBe(true);
    expect(String(late[REPLY.extras]).startsWith(`${'a'.repeat(64)}\u0000${claimed.token}\u0000w\u0000`)).toBe(true);
    expect(await counterOf(counter)).toBe('1');
    // the store answers the retry of a worker whose lease ended: replayed, with its receipt
    expect(await store.fencedWrite(fence, (tx) => tx.call('INCR', counter), { submission })).toMatchObject({
      ok: false,
      reason: 'replayed',
      submission: { runId: 'decision-9', digest: 'a'.repeat(64), token: claimed.token, holder: 'w', receiptJson: '{"ok":true}' },
    });
    expect(await counterOf(counter)).toBe('1');
  });

  it('a remove re-delivered after the key was claimed again returns its first reply and leaves the new record alone', async () => {
    const { store, sent } = recordingStore();
    const key = `remove-replay:${Date.now()}`;
    const claim = () =>
      store.claim({ key, holder: 'w', runId: null, secret: newSecret(), ttlMs: 60_000, attributes: {}, recovering: false });
    const first = await claim();
    const removed = await store.remove({ key, force: true, expectedToken: null });
    expect(removed).toMatchObject({ ok: true, grant: { live: true } });
    const command = sent[sent.length - 1] as string[];
    const firstReply = await raw.send(command);
    const again = await claim();
    if (!first.ok || !again.ok) throw new Error('not granted');
    expect(again.token > first.token).toBe(true);
    expect(await raw.send(command)).toEqual(firstReply);
    expect(await store.inspect(key)).toMatchObject({ exists: true, grant: { token: again.token } });
  });

  it('a key-state change re-delivered after another writer changed the state returns its first reply and sets nothing again', async () => {
    const { store, sent } = recordingStore();
    const key = `state-replay:${Date.now()}`;
    const first = await store.setKeyState({ key, values: { rev: '2' }, by: 'scanner-a' });
    expect(first).toMatchObject({ changed: ['rev'], state: { rev: '2' } });
    const command = sent[sent.length - 1] as string[];
    const firstReply = await raw.send(command);
    const secret = newSecret();
    const claimed = await store.claim({
      key,
      holder: 'w',
      runId: null,
      secret,
      ttlMs: 60_000,
      attributes: {},
      recovering: false,
      expect: { rev: '2' },
    });
    expect(await store.setKeyState({ key, values: { rev: '3' }, by: 'scanner-b' })).toMatchObject({
      changed: ['rev'],
      ended: { kind: 'state-changed' },
    });
    const again = await store.claim({
      key,
      holder: 'w',
      runId: null,
      secret: newSecret(),
      ttlMs: 60_000,
      attributes: {},
      recovering: false,
      expect: { rev: '3' },
    });
    expect(claimed.ok && again.ok).toBe(true);
    expect(await raw.send(command)).toEqual(firstReply);
    expect(await store.inspect(key)).toMatchObject({ state: { rev: '3' }, grant: { token: again.ok ? again.token : 0n } });
  });
});
