/**
 * A rolling upgrade: workers on the previous release's scripts (`redis-previous-scripts.ts`) and workers on
 * these share one Redis and one lease. Each reads what the other wrote, and a request re-delivered after a
 * lost reply (the very command sent again, as ioredis re-sends it after a reconnect) never applies twice,
 * whichever version sent it, also when two writes on one lease were in flight together.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisStore, hashTagOf } from '../../src/adapters/redis/index.js';
import { fromIoredis, type IoredisClient, type RedisConnection } from '../../src/adapters/redis/connection.js';
import { defineScript } from '../../src/adapters/redis/runner.js';
import { FENCED_WRITE_SCRIPT, WRITTEN } from '../../src/adapters/redis/write-scripts.js';
import { REPLAY_SLOTS } from '../../src/adapters/redis/script-parts.js';
import { createLeases } from '../../src/leases.js';
import { CURRENT_SCRIPTS, freshPrefix, openClient, sharedRedisUrl } from './redis-harness.js';
import { PREVIOUS_SCRIPTS } from './redis-previous-scripts.js';

const FENCED_WRITE_SHA = defineScript('fenced write', FENCED_WRITE_SCRIPT).sha;

let raw: RedisConnection;
let close: () => Promise<void> = async () => undefined;
const prefix = freshPrefix('lf-upgrade');

beforeAll(async () => {
  const opened = await openClient('ioredis', await sharedRedisUrl());
  raw = fromIoredis(opened.client as IoredisClient);
  close = opened.close;
});
afterAll(async () => close());

/** A worker's connection: records every command it sends and every reply; `previous` runs the previous release's scripts instead. */
function worker(previous: boolean) {
  const previousBySha = new Map(Object.entries(CURRENT_SCRIPTS).map(([name, source]) => [defineScript(name, source).sha, PREVIOUS_SCRIPTS[name] as string]));
  const sent: string[][] = [];
  const replies: unknown[] = [];
  const connection: RedisConnection = {
    send: (args) => {
      // NOTE: a previous worker's own client sends every command count positive (the current one negates the
      // counts its table of known commands accepted); no other argument is a bare negative number (user
      // arguments are tagged 'v' / 'k').
      const command = previous && args[0] === 'EVALSHA' ? ['EVAL', previousBySha.get(args[1] as string) ?? '', ...args.slice(2).map((arg) => (/^-\d+$/.test(arg) ? arg.slice(1) : arg))] : [...args];
      sent.push(command);
      return raw.send(command).then((reply) => {
        replies.push(reply);
        // NOTE: a previous worker's own client reads its applied fenced write's reply (results after the
        // padded pre-image); this one reads the current shape (results after the status).
        const oldWrite = previous && args[1] === FENCED_WRITE_SHA && Array.isArray(reply) && String(reply[0]).startsWith('+');
        return oldWrite ? [reply[0], ...(reply as unknown[]).slice(5)] : reply;
      });
    },
  };
  return { leases: createLeases(createRedisStore({ client: connection, prefix }), { holder: previous ? 'old' : 'new', ttlMs: 60_000 }), sent, replies };
}

const counterOf = async (counter: string): Promise<string | null> => (await raw.send(['GET', counter])) as string | null;

describe('redis adapter: a rolling upgrade (previous and current scripts on one Redis)', () => {
  it('each version reads the records the other wrote: claims, checkpoints, fenced writes, releases, revokes', async () => {
    const [old, next] = [worker(true), worker(false)];
    const key = `upgrade:${Date.now()}`;
    const counter = `${prefix}${hashTagOf(key)}:n`;
    const first = await old.leases.claimOrThrow(key);
    await old.leases.fencedWriteOrThrow(first, (tx) => tx.call('INCR', counter), { checkpoint: { step: 1 } });
    // NOTE: the new worker continues the old one's grant (lease.export / restore), then the old one again.
    const restored = next.leases.restore(first.export());
    await next.leases.fencedWriteOrThrow(restored, (tx) => tx.call('INCR', counter), { checkpoint: { step: 2 } });
    await old.leases.checkpointOrThrow(first, { step: 3 });
    expect((await next.leases.inspect(key)).checkpoint?.value).toEqual({ step: 3 });
    expect(await next.leases.release(restored)).toMatchObject({ ok: true });
    const second = await old.leases.claimOrThrow(key);
    expect(second.token > first.token).toBe(true);
    expect(second.previous).toMatchObject({ kind: 'released', token: first.token, holder: 'old' });
    expect((await next.leases.revoke(key, { reason: 'upgrade', requireRecovery: true })).ok).toBe(true);
    const third = await old.leases.claimOrThrow(key, { recovering: true });
    expect(third.inherited?.value).toEqual({ step: 3 });
    expect(await counterOf(counter)).toBe('2');
  });

  it('a fenced write, checkpoint or revoke re-delivered after either version wrote in between applies once and replies as it first did', async () => {
    const [old, next] = [worker(true), worker(false)];
    const key = `upgrade-replay:${Date.now()}`;
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
    // NOTE: each version keeps its own memos (6 each here, within REPLAY_SLOTS): every request again, in order.
    expect(firsts.length / 2).toBeLessThanOrEqual(REPLAY_SLOTS);
    for (const { command, reply } of firsts) expect(await raw.send(command)).toEqual(reply);
    expect(await counterOf(counter)).toBe('6');
    expect((await next.leases.inspect(key)).checkpoint).toEqual(checkpoint);
    // NOTE: a revoke re-delivered after the next grant returns its first reply and leaves that grant alone.
    const revoking = await next.leases.revoke(key, { reason: 'upgrade' });
    const revoke = next.sent[next.sent.length - 1] as string[];
    const after = await old.leases.claimOrThrow(key);
    expect(await raw.send(revoke)).toEqual(next.replies[next.replies.length - 1]);
    expect(revoking).toMatchObject({ ok: true });
    expect((await next.leases.inspect(key)).grant).toMatchObject({ token: after.token, holder: 'old' });
  });

  it('two fenced writes on one lease in flight together, both re-delivered (twice, in either order): each applies once and replays its own first reply', async () => {
    const { leases, sent } = worker(false);
    const key = `concurrent-replay:${Date.now()}`;
    const [a, b] = [`${prefix}${hashTagOf(key)}:a`, `${prefix}${hashTagOf(key)}:b`];
    const lease = await leases.claimOrThrow(key);
    const before = sent.length;
    const [first, second] = await Promise.all([leases.fencedWriteOrThrow(lease, (tx) => tx.call('INCR', a)), leases.fencedWriteOrThrow(lease, (tx) => tx.call('INCRBY', b, 10))]);
    expect([first, second]).toEqual([1, 10]);
    const [writeA, writeB] = sent.slice(before) as [string[], string[]];
    const replies = await Promise.all([raw.send(writeB), raw.send(writeA), raw.send(writeA), raw.send(writeB)]);
    expect((replies[1] as unknown[])[WRITTEN.replies]).toEqual([1]);
    expect((replies[0] as unknown[])[WRITTEN.replies]).toEqual([10]);
    expect(replies[2]).toEqual(replies[1]);
    expect(replies[3]).toEqual(replies[0]);
    expect([await counterOf(a), await counterOf(b)]).toEqual(['1', '10']);
  });
});
