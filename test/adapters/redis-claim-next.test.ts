/**
 * Claim-next on Redis (issue 24, capability 1; the conformance specs run with every store's, conformance.ts): the
 * Redis-only rules: the tag rule refused before any I/O, the index equal to the pure
 * `availableSince` of each item's record, a claim-next delivered twice, an ordinary key's record untouched.
 */
import { describe, expect, it } from 'vitest';
import { availableSince } from '../../src/fence/claim-next.js';
import { isLeaseError } from '../../src/errors.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { toConnection, type RedisConnection } from '../../src/adapters/redis/connection.js';
import { parseLeaseReply } from '../../src/adapters/redis/record.js';
import { INSPECT_SCRIPT } from '../../src/adapters/redis/scripts.js';
import type { LeaseRecord } from '../../src/fence/types.js';
import { createRedisStore, type RedisStore } from '../../src/adapters/redis/index.js';
import { newSecret } from '../../src/secret.js';
import { freshPrefix, openClient, readyIndex, sharedRedisUrl, type RedisClientKind } from './redis-harness.js';

type ItemStore = RedisStore & Required<Pick<RedisStore, 'addItems' | 'removeItems' | 'claimNext'>>;

async function openStore(kind: RedisClientKind = 'ioredis') {
  const { client, close } = await openClient(kind, await sharedRedisUrl());
  const prefix = freshPrefix('lf-next');
  const store = createRedisStore({ client, prefix }) as ItemStore;
  return { store, prefix, raw: toConnection(client), close };
}

const command = (set: string, holder: string) => ({
  set,
  holder,
  runId: null,
  secret: newSecret(),
  ttlMs: 60_000,
  attributes: {},
  onExpired: 'take-over' as const,
});

describe('redis claim-next', () => {
  it('refuses, before any I/O, a set name with braces and an item key without the set tag', async () => {
    const { store, close } = await openStore();
    try {
      const sent: unknown[] = [];
      const bad = [
        () => store.addItems({ set: 'a{b}', keys: ['{a{b}}:x'] }),
        () => store.addItems({ set: 'jobs', keys: ['job-1'] }),
        () => store.addItems({ set: 'jobs', keys: ['{jobs}:1', '{other}:2'] }),
        () => store.addItems({ set: 'jobs', keys: ['x:{jobs-x}'] }),
        () => store.addItems({ set: 'jobs', keys: ['{}jobs'] }),
        () => store.removeItems({ set: 'jobs', keys: ['{jobs2}:1'] }),
        () => store.claimNext({ ...command('a}b', 'w1') }),
      ];
      for (const call of bad) {
        const error: unknown = await call().then(
          (value) => sent.push(value),
          (caught: unknown) => caught,
        );
        expect(isLeaseError(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
      }
      expect(sent).toEqual([]);
      // NOTE: the key named like the set is the set's own tag ({jobs}), as is any '{jobs}...' key.
      expect(await store.addItems({ set: 'jobs', keys: ['jobs', '{jobs}:1', 'x{jobs}'] })).toMatchObject({ ok: true });
    } finally {
      await close();
    }
  });

  it("removeItems, adding again, a key of another set (the spec's steps with Redis' answer)", async () => {
    const { store, close } = await openStore();
    try {
      const set = 'keep';
      const [kept, gone] = [`{${set}}:kept`, `{${set}}:gone`];
      await store.addItems({ set, keys: [kept, gone] });
      const held = await store.claimNext(command(set, 'w1'));
      expect(held).toMatchObject({ ok: true, key: gone });
      if (!held.ok) return;
      expect(await store.removeItems({ set, keys: [gone, `{${set}}:never-added`] })).toMatchObject({ ok: true, removed: [gone] });
      expect(await store.inspect(gone)).toMatchObject({ grant: { token: held.token, live: true } });
      expect(await store.addItems({ set, keys: [kept, gone] })).toMatchObject({ ok: true, added: [gone] });
      const other = `${set}-other`;
      const refused = await store.addItems({ set: other, keys: [`{${other}}:x`, kept] }).catch((error: unknown) => error);
      expect(isLeaseError(refused, 'INVALID_ARGUMENT')).toBe(true);
      expect(await store.claimNext(command(other, 'w2'))).toMatchObject({ ok: false, reason: 'idle', nextAt: null });
    } finally {
      await close();
    }
  });

  it("keeps an ordinary key's record and reply as before, and adds no key for it", async () => {
    const { store, raw, prefix, close } = await openStore();
    try {
      const claimed = await store.claim({
        key: 'plain',
        holder: 'w',
        runId: null,
        secret: 's'.repeat(32),
        ttlMs: 60_000,
        attributes: {},
        recovering: false,
      });
      expect(claimed.ok).toBe(true);
      if (!claimed.ok) return;
      const fence = { key: 'plain', token: claimed.token, secret: 's'.repeat(32), holder: 'w', runId: null };
      await store.renew({ fence, ttlMs: 60_000 });
      await store.checkpoint({ fence, json: '{}' });
      await store.release({ fence });
      const keys = (await raw.send(['KEYS', `${prefix}*`])) as string[];
      expect(keys).toEqual([`${prefix}{plain}:lease`]);
      const fields = (await raw.send(['HKEYS', `${prefix}{plain}:lease`])) as string[];
      expect(fields.filter((field) => field === 'item' || field === 'listed')).toEqual([]);
    } finally {
      await close();
    }
  });

  it('a claim-next re-sent after its reply was lost answers the grant it made, on the server as it is then', async () => {
    const { store, close } = await openStore();
    try {
      const set = 'again';
      const keys = [`{${set}}:1`, `{${set}}:2`];
      await store.addItems({ set, keys });
      const sent = command(set, 'w1');
      const first = await store.claimNext(sent);
      // NOTE: meanwhile another worker claims the other item: the re-sent command still holds one item only.
      const other = await store.claimNext(command(set, 'w2'));
      const again = await store.claimNext(sent);
      expect(first).toMatchObject({ ok: true, key: keys[0] });
      expect(other).toMatchObject({ ok: true, key: keys[1] });
      if (first.ok) expect(again).toMatchObject({ ok: true, key: first.key, token: first.token, expiresAt: first.expiresAt });
      const expired = await store.claimNext(command(set, 'w3'));
      expect(expired).toMatchObject({ ok: false, reason: 'idle' });
    } finally {
      await close();
    }
  });

  it('the very EVALSHA of a claim-next sent again (its reply lost) answers the grant it made and grants nothing more', async () => {
    const { store, raw, prefix, close } = await openStore();
    try {
      const set = 'bytes';
      const keys = [`{${set}}:1`, `{${set}}:2`, `{${set}}:3`];
      await store.addItems({ set, keys });
      const sent: (readonly string[])[] = [];
      const send = (args: readonly string[]): Promise<unknown> => {
        sent.push(args);
        return raw.send(args);
      };
      const recording = createRedisStore({ client: { send }, prefix }) as ItemStore;
      const first = await recording.claimNext(command(set, 'w1'));
      expect(first).toMatchObject({ ok: true, key: keys[0] });
      expect(await store.claimNext(command(set, 'w2'))).toMatchObject({ ok: true, key: keys[1] });
      const [evalsha] = sent as [readonly string[]];
      const again = (await raw.send(evalsha)) as unknown[];
      expect([again[0], again[2]]).toEqual(['again', keys[0]]);
      // NOTE: the third item is still there: the re-sent command took nothing.
      expect(await store.claimNext(command(set, 'w3'))).toMatchObject({ ok: true, key: keys[2] });
    } finally {
      await close();
    }
  });

  it('grants an item whose hold has passed as available since the hold (the claim reply leaves a passed hold out)', async () => {
    const { store, close } = await openStore();
    try {
      const set = 'held';
      const [key] = [`{${set}}:1`];
      await store.addItems({ set, keys: [key] });
      const sent = command(set, 'w1');
      const first = await store.claimNext(sent);
      if (!first.ok) throw new Error('idle');
      const released = await store.release({
        fence: { key, token: first.token, secret: sent.secret, holder: 'w1', runId: null },
        holdMs: 20,
      });
      if (!released.ok) throw new Error('refused');
      await new Promise((resolve) => setTimeout(resolve, 30));
      // NOTE: before the claim-next reply carried the hold, the adapter's core saw no hold and this threw "this is a bug".
      expect(await store.claimNext(command(set, 'w2'))).toMatchObject({ ok: true, key, availableSince: released.now + 20 });
    } finally {
      await close();
    }
  });

  it('the index holds exactly availableSince of each item record (released, held back, renewed, recovery, removed)', async () => {
    const { store, raw, prefix, close } = await openStore();
    try {
      const set = 'idx';
      const keys = ['a', 'b', 'c', 'd', 'e'].map((name) => `{${set}}:${name}`);
      const added = await store.addItems({ set, keys, notBeforeMs: 10 });
      if (!added.ok) throw new Error('refused');
      const check = async (): Promise<void> => {
        const index = await readyIndex(raw, prefix, set);
        for (const key of keys) {
          const since = availableSince(await recordOf(raw, prefix, key), { set, key, dueAt: added.dueAt });
          expect(index[key] ?? null, key).toBe(since);
        }
      };
      await new Promise((resolve) => setTimeout(resolve, 15));
      await check();
      const grants = [];
      for (const holder of ['w1', 'w2', 'w3', 'w4']) {
        const sent = command(set, holder);
        const outcome = await store.claimNext(sent);
        if (!outcome.ok) throw new Error('idle');
        grants.push({ key: outcome.key, token: outcome.token, secret: sent.secret, holder, runId: null });
      }
      await check();
      const [g1, g2, g3, g4] = grants as [(typeof grants)[0], (typeof grants)[0], (typeof grants)[0], (typeof grants)[0]];
      await store.release({ fence: g1, holdMs: 5_000 });
      await store.renew({ fence: g2, ttlMs: 120_000 });
      await store.renew({ fence: g3, ttlMs: null });
      await store.checkpoint({ fence: g4, json: '{"p":1}' });
      await store.revoke({ key: g4.key, reason: 'r', by: 'ops', requireRecovery: true, expectedToken: null });
      await check();
      await store.setKeyState({ key: g2.key, values: { rev: '2' }, by: 'scan' });
      await store.remove({ key: g3.key, force: true, expectedToken: null });
      await store.setKeyState({ key: g1.key, values: {}, by: 'ops', holdMs: null });
      await check();
    } finally {
      await close();
    }
  });
});

/** The record of `key` as the core sees it (the inspect script's pre-image, decoded). */
async function recordOf(raw: RedisConnection, prefix: string, key: string): Promise<LeaseRecord | null> {
  const reply = await raw.send(['EVAL', INSPECT_SCRIPT, '1', keyNames(prefix).record(key, 'lease')]);
  return parseLeaseReply(reply, key, '').record;
}
