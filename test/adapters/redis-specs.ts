/**
 * Redis-only specs, run once per client (ioredis, node-redis) by the tiny test files: round trips per
 * operation as the server counts them, the script cache being flushed, tokens past 2^53, fenced writes of
 * Redis commands, keys full of Lua/RESP metacharacters, hash tags, and input refused before I/O.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import type { Lease } from '../../src/lease.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { toConnection, type RedisConnection } from '../../src/adapters/redis/connection.js';
import {
  createRedisStore,
  createRedisTokenGate,
  hashTagOf,
  RedisCommandError,
  type RedisClient,
  type RedisWriteContext,
} from '../../src/adapters/redis/index.js';
import { MAX_COMMAND_ARGUMENTS } from '../../src/adapters/redis/recorder.js';
import { MAX_REPLAY_WINDOW_MS } from '../../src/adapters/redis/replay-window.js';
import { REPLAY_SLOTS } from '../../src/adapters/redis/script-parts.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { freshPrefix, openClient, type RedisClientKind, type RedisStore } from './redis-harness.js';
import { watchCommands, type CommandWatch } from './redis-monitor.js';
import { clusterSlot } from './redis-slot.js';
import { describeGateResetSpecs } from './gate-reset-specs.js';

export function describeRedisAdapterSpecs(kind: RedisClientKind): void {
  describe(`redis adapter (${kind})`, () => {
    let server: RedisServer;
    let client: RedisClient;
    let closeClient: () => Promise<void>;
    let raw: RedisConnection;
    let prefix = '';
    let store: RedisStore;
    let watch: CommandWatch;
    let keyCount = 0;
    const fresh = (label: string): string => `${label}:${++keyCount}`;
    const leasesFor = (holder: string, ttlMs: number | null = 60_000): Leases<RedisStore> => createLeases(store, { holder, ttlMs });

    beforeAll(async () => {
      // NOTE: a server of its own: these specs flush the script cache, which would disturb other files' counts.
      server = await startRedis({ persistence: 'none' });
      const { url } = server;
      ({ client, close: closeClient } = await openClient(kind, url));
      raw = toConnection(client);
      prefix = freshPrefix(`lf-${kind}-specs`);
      store = createRedisStore({ client, prefix });
      watch = await watchCommands(url, client);
    });
    afterAll(async () => {
      // NOTE: each step runs even when beforeAll failed part-way, so no server outlives the file.
      await watch?.close();
      await closeClient?.();
      await server?.stop();
    });

    /** Runs every operation once on a fresh key, each through `step(name, run)`. */
    const everyOperation = async (step: (name: string, run: () => Promise<unknown>) => Promise<void>): Promise<void> => {
      const key = fresh('ops');
      const a = leasesFor('a');
      const b = leasesFor('b');
      const gate = createRedisTokenGate({ client, prefix });
      let lease = null as unknown as Lease;
      await step('claim', async () => (lease = await a.claimOrThrow(key)));
      await step('renew', () => a.renewOrThrow(lease));
      await step('checkpoint', () => a.checkpointOrThrow(lease, { step: 1 }));
      await step('fenced write', () => a.fencedWriteOrThrow(lease, (tx) => tx.call('SET', `${prefix}${hashTagOf(key)}:out`, 'x')));
      await step('token gate write', () => gate.write(key, lease.fence(), (tx) => tx.call('SET', `${prefix}${hashTagOf(key)}:gated`, 'x')));
      await step('inspect', () => a.inspect(key));
      await step('revoke', () => a.revoke(key, { reason: 'count', requireRecovery: true }));
      await step('claim', async () => (lease = await b.claimOrThrow(key, { recovering: true })));
      await step('recover', () => b.recover(lease, 'resume'));
      await step('release', () => b.release(lease));
    };

    it('sends exactly one EVALSHA per operation once its script is cached', async () => {
      await everyOperation(async (_, run) => void (await run()));
      const counted: Array<[string, string[]]> = [];
      await everyOperation(async (name, run) => void counted.push([name, await watch.commandsDuring(run)]));
      for (const [name, commands] of counted) expect({ name, commands }).toEqual({ name, commands: ['EVALSHA'] });
    });

    it('on the hot path each script runs TIME once, one read of the record (a granted claim: the lease, then what it inherits) and one HSET (no second read, no memo key; a memoised operation past the 8th on a key overwrites the slot of the oldest reply: no HDEL); fenced writes add the checks of their commands', async () => {
      const a = leasesFor('a');
      const key = fresh('lean');
      await a.release(await a.claimOrThrow(key));
      let lease = null as unknown as Lease;
      // NOTE: a claim reads the lease first: a claim refused 'held' reads nothing else (it never fetches the
      // checkpoint, issue 29 item 2); a grant then reads what it inherits.
      expect(await watch.scriptCommandsDuring(async () => (lease = await a.claimOrThrow(key)))).toEqual(['TIME', 'HGET', 'HMGET', 'HSET']);
      expect(await watch.scriptCommandsDuring(() => leasesFor('b').claim(key))).toEqual(['TIME', 'HGET']);
      // NOTE: renew and release read the lease with the record's `item` field (claim-next's index, item-index.ts):
      // one HMGET, no more commands for a key that is no item.
      expect(await watch.scriptCommandsDuring(() => a.renewOrThrow(lease))).toEqual(['TIME', 'HMGET', 'HSET']);
      // NOTE: a checkpoint is memoised per request inside the record (read with it, written with the checkpoint).
      expect(await watch.scriptCommandsDuring(() => a.checkpointOrThrow(lease, { step: 1 }))).toEqual(['TIME', 'HMGET', 'HSET']);
      const out = `${prefix}${hashTagOf(key)}:out`;
      expect(
        await watch.scriptCommandsDuring(() => a.fencedWriteOrThrow(lease, (tx) => tx.call('SET', out, 'x'), { checkpoint: { step: 2 } })),
      ).toEqual(['TIME', 'HMGET', 'SET', 'HSET']);
      for (let filled = 2; filled < REPLAY_SLOTS; filled += 1) await a.fencedWriteOrThrow(lease, (tx) => tx.call('SET', out, 'x'));
      expect(await watch.scriptCommandsDuring(() => a.fencedWriteOrThrow(lease, (tx) => tx.call('SET', out, 'y')))).toEqual([
        'TIME',
        'HMGET',
        'SET',
        'HSET',
      ]);
      // NOTE: a release publishes on the lease's freed channel (freed-channel.ts) only while someone watches the key
      // (freed-interest.ts): nobody does here.
      expect(await watch.scriptCommandsDuring(() => a.release(lease))).toEqual(['TIME', 'HMGET', 'HSET']);
    });

    it('submissions are read only by a fenced write that carries one (one HGET of its run id before the fence, the order after the write); key state is read only by a claim that requires some', async () => {
      const a = leasesFor('a');
      const key = fresh('submissions');
      const out = `${prefix}${hashTagOf(key)}:out`;
      const lease = await a.claimOrThrow(key);
      const submission = { runId: 'decision-1', digest: 'b'.repeat(64), receiptJson: null, bindToGrant: false };
      const write = () => store.fencedWrite(lease.fence(), (tx) => tx.call('SET', out, 'x'), { submission });
      expect(await watch.scriptCommandsDuring(() => store.fencedWrite(lease.fence(), (tx) => tx.call('SET', out, 'x')))).toEqual([
        'TIME',
        'HMGET',
        'SET',
        'HSET',
      ]);
      expect(await watch.scriptCommandsDuring(write)).toEqual(['TIME', 'HMGET', 'HGET', 'SET', 'HGET', 'HSET', 'HSET']);
      // a retry finds its run id before the fence: it reads the refusal's explanation and writes nothing
      expect(await watch.scriptCommandsDuring(write)).toEqual(['TIME', 'HMGET', 'HGET', 'HMGET']);
      await a.release(lease);
      const claim = (expect?: Record<string, string | null>) =>
        store.claim({
          key,
          holder: 'a',
          runId: null,
          secret: 'c'.repeat(32),
          ttlMs: 1_000,
          attributes: {},
          recovering: false,
          ...(expect ? { expect } : {}),
        });
      expect(await watch.scriptCommandsDuring(() => claim({ rev: null }))).toEqual(['TIME', 'HGET', 'HGET', 'HMGET', 'HSET']);
    });

    it('judges every reply with the pure core: a reply whose applied flag contradicts the core is reported as a bug', async () => {
      const flip = (status: unknown): unknown =>
        typeof status === 'string' ? `${status[0] === '+' ? '-' : '+'}${status.slice(1)}` : status;
      const lying: RedisConnection = {
        send: async (args) => {
          const reply = await raw.send(args);
          return Array.isArray(reply) ? [flip(reply[0]), ...reply.slice(1)] : flip(reply);
        },
      };
      const liar = createLeases(createRedisStore({ client: lying, prefix }), { holder: 'a', ttlMs: 60_000 });
      const honest = leasesFor('a');
      await expect(liar.claim(fresh('liar'))).rejects.toThrow(/this is a bug/);
      const lease = await honest.claimOrThrow(fresh('liar'));
      await expect(liar.renew(lease)).rejects.toThrow(/this is a bug/);
      await expect(liar.release(lease)).rejects.toThrow(/this is a bug/);
      expect(await honest.release(lease)).toMatchObject({ ok: true, alreadyReleased: true });
      await expect(liar.renew(lease)).rejects.toThrow(/this is a bug/);
    });

    it('refuses NUL in a holder, run id, secret or revoker given to the store directly, before any I/O (the record joins them with NUL)', async () => {
      const key = fresh('nul');
      const claim = { key, holder: 'a', runId: null, secret: 'f'.repeat(32), ttlMs: 60_000, attributes: {}, recovering: false };
      const sent = await watch.commandsDuring(async () => {
        await expect(store.claim({ ...claim, holder: 'a\u0000b' })).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(store.claim({ ...claim, runId: '\u0000' })).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(store.claim({ ...claim, secret: 'f\u0000' })).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(
          store.revoke({ key, reason: 'r', by: 'op\u0000', requireRecovery: false, expectedToken: null }),
        ).rejects.toBeInstanceOf(InvalidArgumentError);
      });
      expect(sent).toEqual([]);
    });

    it('after SCRIPT FLUSH an operation costs one EVALSHA (NOSCRIPT) and one EVAL, which caches it: one EVALSHA again', async () => {
      await raw.send(['SCRIPT', 'FLUSH']);
      const seen = new Set<string>();
      await everyOperation(async (name, run) => {
        const expected = seen.has(name) ? ['EVALSHA'] : ['EVALSHA', 'EVAL'];
        seen.add(name);
        expect({ name, commands: await watch.commandsDuring(run) }).toEqual({ name, commands: expected });
      });
      await everyOperation(async (name, run) =>
        expect({ name, commands: await watch.commandsDuring(run) }).toEqual({ name, commands: ['EVALSHA'] }),
      );
    });

    it('a SCRIPT FLUSH in the middle of a busy run breaks nothing: every operation completes and tokens increase', async () => {
      const key = fresh('flush');
      const workers = ['w1', 'w2', 'w3', 'w4'].map((holder) => leasesFor(holder, 5_000));
      let flushing = true;
      const flusher = (async () => {
        while (flushing) {
          await raw.send(['SCRIPT', 'FLUSH']);
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
      })();
      const tokens: bigint[] = [];
      await Promise.all(
        workers.map(async (leases) => {
          for (let round = 0; round < 25; round += 1) {
            const claimed = await leases.claim(key);
            if (!claimed.ok) continue;
            tokens.push(claimed.lease.token);
            await leases.fencedWriteOrThrow(claimed.lease, (tx) =>
              tx.call('RPUSH', `${prefix}${hashTagOf(key)}:log`, String(claimed.lease.token)),
            );
            await leases.checkpointOrThrow(claimed.lease, { round });
            expect(await leases.release(claimed.lease)).toMatchObject({ ok: true, alreadyReleased: false });
          }
        }),
      );
      flushing = false;
      await flusher;
      expect(tokens.length).toBeGreaterThan(0);
      expect([...tokens].sort((x, y) => (x < y ? -1 : 1))).toEqual(tokens);
      expect(new Set(tokens).size).toBe(tokens.length);
      const log = (await raw.send(['LRANGE', `${prefix}${hashTagOf(key)}:log`, '0', '-1'])) as string[];
      expect(log).toEqual(tokens.map(String));
    });

    it('the first token of a key is the server clock in microseconds (the floor that survives data loss)', async () => {
      const claimed = await leasesFor('a').claimOrThrow(fresh('floor'));
      expect(claimed.token / 1000n).toBe(BigInt(claimed.acquiredAt!));
    });

    it('tokens stay exact beyond 2^53: claims and revokes count up by one across 2^53, 2^63 and 10^20', async () => {
      const names = keyNames(prefix);
      // NOTE: a token above the clock floor (same digit count) counts up by one; 2^53 is where doubles stop.
      const aboveFloor = BigInt(Date.now()) * 1000n + 10n ** 12n;
      for (const [seed, next] of [
        [aboveFloor, aboveFloor + 1n],
        [2n ** 53n - 2n, 2n ** 53n - 1n],
        [2n ** 53n - 1n, 2n ** 53n],
        [2n ** 63n - 2n, 2n ** 63n - 1n],
        [10n ** 20n - 1n, 10n ** 20n],
      ] as const) {
        const key = fresh('big');
        await raw.send(['HSET', names.record(key, 'lease'), 'lease', seed.toString()]);
        const a = leasesFor('a');
        const lease = await a.claimOrThrow(key);
        expect(lease.token).toBe(next);
        expect(await a.fencedWrite(lease, () => 'ok')).toMatchObject({ ok: true, token: next });
        expect(await a.revoke(key, { reason: 'big' })).toMatchObject({ ok: true, token: next + 1n, revoked: { token: next } });
        expect((await a.claimOrThrow(key)).token).toBe(next + 2n);
        expect((await a.inspect(key)).token).toBe(next + 2n);
      }
    });

    it('the token gate compares tokens past 2^53 exactly and refuses an older token or another key, applying nothing', async () => {
      const gate = createRedisTokenGate({ client, prefix, leasePrefix: null });
      const resource = fresh('resource');
      const target = `${prefix}${hashTagOf(resource)}:value`;
      const big = 2n ** 60n;
      const write = (key: string, token: bigint, value: string) =>
        gate.write(resource, { key, token } as never, (tx) => tx.call('SET', target, value));
      expect(await write('job', big + 1n, 'newer')).toEqual({ ok: true, value: 'OK', token: big + 1n });
      expect(await write('job', big, 'older')).toEqual({
        ok: false,
        reason: 'stale-token',
        resource,
        expected: { key: 'job', token: big },
        found: { key: 'job', token: big + 1n },
      });
      expect(await write('other', big + 5n, 'other')).toMatchObject({
        ok: false,
        reason: 'key-mismatch',
        found: { key: 'job', token: big + 1n },
      });
      expect(await raw.send(['GET', target])).toBe('newer');
      expect(await write('job', big + 1n, 'same token again')).toMatchObject({ ok: true });
      expect(await raw.send(['GET', target])).toBe('same token again');
    });

    it('keys, holders, run ids, attributes and reasons full of Lua and RESP metacharacters round-trip exactly', async () => {
      const nasty = ['a\'b"c]]--[[', '\r\n*3\r\n$4\r\nPING\r\n', '%s%d\\0', '{tag}x}', '}{', 'ünïcødé ✓ 🎉', 'KEYS[1]..ARGV[1]', ' '];
      for (const text of nasty) {
        const key = `${text}:${fresh('meta')}`;
        const a = createLeases(store, { holder: text, ttlMs: 60_000 });
        const lease = await a.claimOrThrow(key, { runId: text, attributes: { [text]: text } });
        expect(
          await a.fencedWrite(lease, (tx) => tx.call('SET', `${prefix}${hashTagOf(key)}:${text}`, text), { attributes: { [text]: text } }),
        ).toMatchObject({ ok: true, value: 'OK' });
        expect(await raw.send(['GET', `${prefix}${hashTagOf(key)}:${text}`])).toBe(text);
        expect(await a.checkpoint(lease, { text })).toMatchObject({ ok: true });
        expect(await a.inspect(key)).toMatchObject({
          key,
          grant: { holder: text, runId: text, attributes: { [text]: text } },
          checkpoint: { value: { text } },
        });
        expect(await a.revoke(key, { reason: text, by: text })).toMatchObject({
          ok: true,
          revoked: { reason: text, by: text, holder: text, runId: text },
        });
      }
    });

    it('a fenced write runs its commands in the fence script, replies per command; refused, it applies none of them', async () => {
      const key = fresh('write');
      const a = leasesFor('a');
      const lease = await a.claimOrThrow(key);
      const [hash, counter] = [`${prefix}${hashTagOf(key)}:hash`, `${prefix}${hashTagOf(key)}:n`];
      const replies: unknown[] = [];
      const outcome = await a.fencedWrite(lease, (tx) => {
        void tx.call('HSET', hash, 'f', 'v', 'g', 42).then((reply) => replies.push(reply));
        void tx.call('GET', 'missing-key').then((reply) => replies.push(reply));
        void tx.call('RENAME', hash, tx.key(`${hash}:renamed`)).then((reply) => replies.push(reply));
        return tx.call('INCRBY', counter, 5n);
      });
      expect(outcome).toMatchObject({ ok: true, value: 5, token: lease.token });
      expect(replies).toEqual([2, null, 'OK']);
      await a.revoke(key, { reason: 'fence it' });
      let ran = false;
      const refused = await a.fencedWrite(lease, (tx) => {
        ran = true;
        return tx.call('INCRBY', counter, 100);
      });
      expect(ran).toBe(true);
      expect(refused).toMatchObject({ ok: false, reason: 'revoked' });
      expect(await raw.send(['GET', counter])).toBe('5');
    });

    it('a command failing while it runs inside a fenced write rejects with RedisCommandError; Redis keeps the commands before it', async () => {
      const key = fresh('fails');
      const a = leasesFor('a');
      const lease = await a.claimOrThrow(key);
      const [text, after] = [`${prefix}${hashTagOf(key)}:text`, `${prefix}${hashTagOf(key)}:after`];
      const failed = a.fencedWrite(lease, (tx) => {
        void tx.call('SET', text, 'not a number');
        void tx.call('INCR', text);
        void tx.call('SET', after, 'never');
      });
      await expect(failed).rejects.toMatchObject({ name: 'RedisCommandError', commandIndex: 1, applied: 1 });
      await expect(failed).rejects.toBeInstanceOf(RedisCommandError);
      expect(await raw.send(['GET', text])).toBe('not a number');
      expect(await raw.send(['GET', after])).toBeNull();
    });

    it('a fenced write with a checkpoint saves both in one script (stamped with the token, resolving a pending recovery); refused or failed, neither', async () => {
      const key = fresh('exactly-once');
      const a = leasesFor('a');
      const rows = `${prefix}${hashTagOf(key)}:rows`;
      expect(await a.fencedWrite(await a.claimOrThrow(key), () => 'no commands', { checkpoint: { batch: 0 } })).toMatchObject({
        ok: true,
        value: 'no commands',
      });
      await a.revoke(key, { reason: 'recover it', requireRecovery: true });
      const lease = await a.claimOrThrow(key, { recovering: true });
      const sent = await watch.commandsDuring(async () => {
        const outcome = await a.fencedWrite(lease, (tx) => tx.call('RPUSH', rows, 'batch 1'), { checkpoint: { batch: 1 } });
        expect(outcome).toMatchObject({ ok: true, value: 1, checkpoint: { json: '{"batch":1}', token: lease.token } });
        if (outcome.ok) expect(outcome.checkpoint?.writtenAt).toBe(outcome.now);
      });
      expect(sent).toEqual(['EVALSHA']);
      expect(await a.inspect(key)).toMatchObject({ recoveryRequired: false, checkpoint: { token: lease.token, value: { batch: 1 } } });
      const failed = a.fencedWrite(
        lease,
        (tx) => {
          void tx.call('INCR', rows);
        },
        { checkpoint: { batch: 2 } },
      );
      await expect(failed).rejects.toBeInstanceOf(RedisCommandError);
      expect(await a.inspect(key)).toMatchObject({ checkpoint: { value: { batch: 1 } } });
      await a.revoke(key, { reason: 'fence it' });
      expect(await a.fencedWrite(lease, (tx) => tx.call('RPUSH', rows, 'stale'), { checkpoint: { batch: 3 } })).toMatchObject({
        ok: false,
        reason: 'revoked',
      });
      expect(await raw.send(['LRANGE', rows, '0', '-1'])).toEqual(['batch 1']);
      expect(await a.inspect(key)).toMatchObject({ checkpoint: { value: { batch: 1 } } });
    });

    it('release with an explicit checkpoint decision (set or clear) resolves a pending recovery; keeping it leaves it pending', async () => {
      for (const decision of [{ checkpoint: null }, { checkpoint: { done: true } }, {}] as const) {
        const key = fresh('release-recovery');
        const a = leasesFor('a');
        await a.checkpointOrThrow(await a.claimOrThrow(key), { step: 1 });
        await a.revoke(key, { reason: 'recover it', requireRecovery: true });
        expect(await a.release(await a.claimOrThrow(key, { recovering: true }), decision)).toMatchObject({ ok: true });
        const pending = !('checkpoint' in decision);
        expect(await a.inspect(key)).toMatchObject({ recoveryRequired: pending });
        expect(await a.claim(key)).toMatchObject({ ok: !pending });
      }
    });

    it('an async callback is awaited, then everything it recorded is sent in one script, whatever it awaited in between', async () => {
      const key = fresh('async');
      const a = leasesFor('a');
      const lease = await a.claimOrThrow(key);
      const gate = createRedisTokenGate({ client, prefix });
      const list = `${prefix}${hashTagOf(key)}:async`;
      const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 5));
      await a.fencedWrite(lease, () => undefined);
      await gate.write(key, lease.fence(), () => undefined);
      const sent = await watch.commandsDuring(async () => {
        const first = await a.fencedWrite(lease, async (tx) => {
          void tx.call('RPUSH', list, 'one');
          await tick();
          void tx.call('RPUSH', list, 'two');
          return 'done';
        });
        expect(first).toMatchObject({ ok: true, value: 'done' });
        const gated = await gate.write(key, lease.fence(), async (tx) => {
          await tick();
          void tx.call('RPUSH', list, 'three');
          return 'gated';
        });
        expect(gated).toMatchObject({ ok: true, value: 'gated' });
      });
      expect(sent).toEqual(['EVALSHA', 'EVALSHA']);
      expect(await raw.send(['LRANGE', list, '0', '-1'])).toEqual(['one', 'two', 'three']);
    });

    it('an async callback that uses a reply before it finishes (await, .then, return) is refused before anything is sent; a rejecting one sends nothing', async () => {
      const key = fresh('async-misuse');
      const a = leasesFor('a');
      const lease = await a.claimOrThrow(key);
      const gate = createRedisTokenGate({ client, prefix });
      const list = `${prefix}${hashTagOf(key)}:misuse`;
      const misuses: Array<(tx: RedisWriteContext) => Promise<unknown>> = [
        async (tx) => {
          const length = await tx.call('RPUSH', list, 'one');
          return tx.call('RPUSH', list, `after ${String(length)}`);
        },
        async (tx) => tx.call('RPUSH', list, 'returned'),
        async (tx) => {
          void tx.call('RPUSH', list, 'then').then(
            () => undefined,
            () => undefined,
          );
          await new Promise((resolve) => setTimeout(resolve, 1));
        },
      ];
      const sent = await watch.commandsDuring(async () => {
        for (const misuse of misuses) {
          await expect(a.fencedWrite(lease, misuse)).rejects.toBeInstanceOf(InvalidArgumentError);
          await expect(gate.write(key, lease.fence(), misuse)).rejects.toBeInstanceOf(InvalidArgumentError);
        }
        const failing = a.fencedWrite(lease, async (tx) => {
          void tx.call('RPUSH', list, 'before the throw');
          await Promise.resolve();
          throw new Error('callback failed');
        });
        await expect(failing).rejects.toThrow('callback failed');
      });
      expect(sent).toEqual([]);
      expect(await raw.send(['EXISTS', list])).toBe(0);
    });

    it(`a recorded command with more than MAX_COMMAND_ARGUMENTS (${MAX_COMMAND_ARGUMENTS}) arguments is refused before anything is sent; at the limit it runs`, async () => {
      const key = fresh('wide');
      const a = leasesFor('a');
      const lease = await a.claimOrThrow(key);
      const list = `${prefix}${hashTagOf(key)}:wide`;
      const values = (count: number): string[] => Array.from({ length: count }, (_, index) => String(index));
      const sent = await watch.commandsDuring(async () => {
        const tooWide = a.fencedWrite(lease, (tx) => {
          void tx.call('SET', `${list}:first`, 'x');
          return tx.call('RPUSH', list, ...values(MAX_COMMAND_ARGUMENTS - 1));
        });
        await expect(tooWide).rejects.toBeInstanceOf(InvalidArgumentError);
      });
      expect(sent).toEqual([]);
      expect(await raw.send(['EXISTS', `${list}:first`])).toBe(0);
      expect(await a.fencedWrite(lease, (tx) => tx.call('RPUSH', list, ...values(MAX_COMMAND_ARGUMENTS - 2)))).toMatchObject({
        ok: true,
        value: MAX_COMMAND_ARGUMENTS - 2,
      });
    });

    it('a command Redis would refuse (unknown, wrong argument count, not allowed in scripts) is found before any command runs: nothing applied, no checkpoint', async () => {
      const key = fresh('checked');
      const a = leasesFor('a');
      const lease = await a.claimOrThrow(key);
      const [first, later] = [`${prefix}${hashTagOf(key)}:first`, `${prefix}${hashTagOf(key)}:later`];
      for (const [bad, index] of [
        [['NOSUCHCOMMAND', later], 1],
        [['GET', later, 'extra'], 1],
        [['WATCH', later], 1],
        [['SET', later], 1],
      ] as const) {
        const write = a.fencedWrite(
          lease,
          (tx) => {
            void tx.call('SET', first, 'applied?');
            void tx.call(bad[0], bad[1], ...bad.slice(2));
          },
          { checkpoint: { bad: bad[0] } },
        );
        await expect(write).rejects.toMatchObject({ name: 'RedisCommandError', commandIndex: index, applied: 0 });
        expect(await raw.send(['EXISTS', first])).toBe(0);
      }
      expect((await a.inspect(key)).checkpoint).toBeNull();
    });

    it("stores the secret's SHA1 (hashed by the script), never replies a stored secret or hash", async () => {
      const names = keyNames(prefix);
      const key = fresh('hashed');
      const record = names.record(key, 'lease');
      const replies: unknown[] = [];
      const spying: RedisConnection = {
        send: async (args) => {
          const reply = await raw.send(args);
          replies.push(reply);
          return reply;
        },
      };
      const a = createLeases(createRedisStore({ client: spying, prefix }), { holder: 'a', ttlMs: 60_000 });
      const lease = await a.claimOrThrow(key);
      const { secret } = lease.fence();
      const hash = `#${createHash('sha1').update(secret).digest('hex')}`;
      const stored = String(await raw.send(['HGET', record, 'lease']));
      expect(stored.split('\u0000')[1]).toBe(hash);
      expect(stored).not.toContain(secret);
      expect(await store.claim({ key, holder: 'a', runId: null, secret, ttlMs: 60_000, attributes: {}, recovering: false })).toMatchObject({
        ok: true,
        token: lease.token,
      });
      await a.renewOrThrow(lease);
      await a.checkpointOrThrow(lease, { step: 1 });
      await a.fencedWriteOrThrow(lease, (tx) => tx.call('SET', `${prefix}${hashTagOf(key)}:out`, 'x'));
      // Whoever read the stored hash cannot present it.
      for (const presented of [hash, hash.slice(1)]) {
        expect(await store.renew({ fence: { ...lease.fence(), secret: presented }, ttlMs: 60_000 })).toMatchObject({
          ok: false,
          reason: 'wrong-secret',
        });
        expect(
          await store.claim({ key, holder: 'a', runId: null, secret: presented, ttlMs: 60_000, attributes: {}, recovering: false }),
        ).toMatchObject({ ok: false, reason: 'held' });
      }
      await a.inspect(key);
      await a.revoke(key, { reason: 'read it all' });
      expect(await a.renew(lease)).toMatchObject({ ok: false, reason: 'revoked' });
      for (const reply of replies) {
        expect(JSON.stringify(reply)).not.toContain(secret);
        expect(JSON.stringify(reply)).not.toContain(hash.slice(1));
      }
    });

    it('replayWindowMs (store and gate) is an integer of 1 ms to one day, refused at construction otherwise (1e19 included)', () => {
      for (const replayWindowMs of [
        1e19,
        2 ** 53,
        MAX_REPLAY_WINDOW_MS + 1,
        0,
        -1,
        1.5,
        Number.NaN,
        Number.POSITIVE_INFINITY,
        '5' as unknown as number,
      ]) {
        expect(() => createRedisStore({ client, prefix, replayWindowMs })).toThrow(InvalidArgumentError);
        expect(() => createRedisTokenGate({ client, prefix, replayWindowMs })).toThrow(InvalidArgumentError);
      }
      expect(createRedisStore({ client, prefix, replayWindowMs: MAX_REPLAY_WINDOW_MS }).id).toBe(`redis:${prefix}`);
      expect(() => createRedisTokenGate({ client, prefix, replayWindowMs: 1 })).not.toThrow();
    });

    it(`memoised replies live in the record they protect, at most ${REPLAY_SLOTS} per key: 1,000 fenced writes, checkpoints and gate writes add no key`, async () => {
      const countPrefix = freshPrefix(`lf-${kind}-memos`);
      const counted = createRedisStore({ client, prefix: countPrefix });
      const gate = createRedisTokenGate({ client, prefix: countPrefix });
      const a = createLeases(counted, { holder: 'a', ttlMs: 60_000 });
      const key = fresh('memos');
      const lease = await a.claimOrThrow(key);
      const counter = `${countPrefix}${hashTagOf(key)}:n`;
      for (let round = 0; round < 1_000; round += 1) {
        await a.fencedWriteOrThrow(lease, (tx) => tx.call('INCR', counter), { checkpoint: { round } });
        if (round % 10 === 0) await gate.write(key, lease.fence(), (tx) => tx.call('INCR', counter));
      }
      await a.checkpointOrThrow(lease, { done: true });
      const keys = (await raw.send(['KEYS', `${countPrefix}*`])) as string[];
      expect(keys.sort()).toEqual([counter, keyNames(countPrefix).record(key, 'gate'), keyNames(countPrefix).record(key, 'lease')].sort());
      // NOTE: a gate checking the full fence keeps its memos in the writer's lease record too.
      // NOTE: the index holds one 48-character entry per memo, and the replies fill the slot fields m0 to m7.
      const record = keyNames(countPrefix).record(key, 'lease');
      expect(String(await raw.send(['HGET', record, 'memos'])).length).toBe(48 * REPLAY_SLOTS);
      const fields = (await raw.send(['HKEYS', record])) as string[];
      const slot = (field: string): boolean => /^m[0-7]$/.test(field);
      expect(fields.filter(slot)).toHaveLength(REPLAY_SLOTS);
      expect(fields.filter((field) => !slot(field)).sort()).toEqual(
        ['checkpoint', 'ending', 'lease', 'memos', 'recovery'].filter((field) => fields.includes(field)).sort(),
      );
      expect(await raw.send(['HKEYS', keyNames(countPrefix).record(key, 'gate')])).toEqual(['key', 'token']);
      expect(await raw.send(['GET', counter])).toBe('1100');
    });

    it('the token gate checks the full fence in its script: a forged handle (huge token, wrong secret) or an ended grant is refused with the fence refusal and changes nothing', async () => {
      const key = fresh('gate-fence');
      const resource = `${hashTagOf(key)}:report`;
      const target = `${prefix}${hashTagOf(key)}:report-body`;
      const gate = createRedisTokenGate({ client, prefix });
      const a = leasesFor('a');
      const lease = await a.claimOrThrow(key);
      expect(await gate.write(resource, lease.fence(), (tx) => tx.call('SET', target, 'real'))).toMatchObject({
        ok: true,
        value: 'OK',
        token: lease.token,
      });
      const forged = { ...lease.fence(), token: lease.token + 10n ** 12n, secret: 'f'.repeat(32) };
      const wrongSecret = { ...lease.fence(), secret: 'e'.repeat(32) };
      for (const fence of [forged, wrongSecret]) {
        const refused = await gate.write(resource, fence, (tx) => tx.call('SET', target, 'forged'));
        expect(refused).toMatchObject({ ok: false, key, expected: { token: fence.token } });
        expect(refused).not.toHaveProperty('resource');
      }
      expect(await gate.inspect(resource)).toEqual({ resource, found: { key, token: lease.token } });
      expect(await raw.send(['GET', target])).toBe('real');
      await expect(gate.write(resource, { key, token: lease.token + 1n }, () => 'tokens only')).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
      await a.revoke(key, { reason: 'ended' });
      expect(await gate.write(resource, lease.fence(), (tx) => tx.call('SET', target, 'after revoke'))).toMatchObject({
        ok: false,
        reason: 'revoked',
      });
      const next = await a.claimOrThrow(key);
      expect(await gate.write(resource, next.fence(), (tx) => tx.call('SET', target, 'next'))).toMatchObject({
        ok: true,
        token: next.token,
      });
      expect(await raw.send(['GET', target])).toBe('next');
    });

    describeGateResetSpecs(
      () => {
        const gate = createRedisTokenGate({ client, prefix, leasePrefix: null });
        return {
          gate,
          write: async (resource, key, token) => (await gate.write(resource, { key, token }, () => undefined)).ok,
          sentDuring: (run) => watch.commandsDuring(run),
        };
      },
      { raceRuns: 30 },
    );

    it('token gate inspect and reset: an operator sees what a resource is bound to and re-keys it; leasePrefix: null gates by token only', async () => {
      const gate = createRedisTokenGate({ client, prefix });
      const a = leasesFor('a');
      const [first, second] = [await a.claimOrThrow(fresh('bound')), await a.claimOrThrow(fresh('rebound'))];
      const resource = fresh('shared-resource');
      expect(await gate.inspect(resource)).toEqual({ resource, found: null });
      expect(await gate.write(resource, first.fence(), () => 1)).toMatchObject({ ok: true });
      expect(await gate.write(resource, second.fence(), () => 2)).toMatchObject({
        ok: false,
        reason: 'key-mismatch',
        found: { key: first.key, token: first.token },
      });
      expect(await gate.reset(resource)).toEqual({ ok: true, resource, found: { key: first.key, token: first.token } });
      expect(await gate.inspect(resource)).toEqual({ resource, found: null });
      expect(await gate.reset(resource)).toEqual({ ok: true, resource, found: null });
      expect(await gate.write(resource, second.fence(), () => 2)).toMatchObject({ ok: true, value: 2 });
      expect(await gate.inspect(resource)).toEqual({ resource, found: { key: second.key, token: second.token } });
      const tokensOnly = createRedisTokenGate({ client, prefix, leasePrefix: null });
      const elsewhere = fresh('other-store-resource');
      expect(await tokensOnly.write(elsewhere, { key: 'kept-elsewhere', token: 7n }, () => 'ok')).toMatchObject({ ok: true, value: 'ok' });
      expect(await tokensOnly.write(elsewhere, { key: 'kept-elsewhere', token: 6n }, () => 'old')).toMatchObject({
        ok: false,
        reason: 'stale-token',
      });
    });

    it('a stored checkpoint that is not what leasefence writes (no stamp, invalid JSON, NUL inside) never bricks the key: claim, inspect, revoke and recover report it (token 0 when unstamped) and an operator clears it', async () => {
      const names = keyNames(prefix);
      const claimOf = (key: string, secret: string, recovering = false) => ({
        key,
        holder: 'a',
        runId: null,
        secret,
        ttlMs: 60_000,
        attributes: {},
        recovering,
      });
      for (const [stored, expected] of [
        ['not a checkpoint', { json: 'not a checkpoint', token: 0n, writtenAt: 0 }],
        ['7\u00001700000000000\u0000{oops', { json: '{oops', token: 7n, writtenAt: 1700000000000 }],
        ['x\u0000y\u0000z\u0000w', { json: 'x\ufffdy\ufffdz\ufffdw', token: 0n, writtenAt: 0 }],
      ] as const) {
        const key = fresh('corrupt');
        await raw.send(['HSET', names.record(key, 'lease'), 'lease', '5', 'checkpoint', stored]);
        expect(await store.inspect(key)).toMatchObject({ exists: true, token: 5n, checkpoint: expected });
        const first = await store.claim(claimOf(key, 'a'.repeat(32)));
        expect(first).toMatchObject({ ok: true, checkpoint: expected });
        expect(await store.claim(claimOf(key, 'b'.repeat(32)))).toMatchObject({ ok: false, reason: 'held' });
        expect(await store.revoke({ key, reason: 'corrupt', by: 'op', requireRecovery: true, expectedToken: null })).toMatchObject({
          ok: true,
          recoveryRequired: true,
        });
        expect(await store.claim(claimOf(key, 'c'.repeat(32)))).toMatchObject({
          ok: false,
          reason: 'recovery-required',
          checkpoint: expected,
        });
        const recovering = await store.claim(claimOf(key, 'd'.repeat(32), true));
        expect(recovering).toMatchObject({ ok: true, checkpoint: expected });
        if (!recovering.ok) continue;
        const fence = { key, token: recovering.token, secret: 'd'.repeat(32), holder: 'a', runId: null };
        expect(await store.recover({ fence, action: 'discard' })).toMatchObject({ ok: true, checkpoint: null });
        expect(await store.inspect(key)).toMatchObject({ checkpoint: null, recoveryRequired: false });
        expect(await store.release({ fence, checkpointJson: null })).toMatchObject({ ok: true });
        expect((await leasesFor('a').inspect(key)).checkpoint).toBeNull();
      }
    });

    it('refuses bad input before sending anything: an over-size checkpoint, a lone surrogate, a late tx.call', async () => {
      const leases = createLeases(store, { holder: 'a', ttlMs: 60_000, maxCheckpointBytes: 64 });
      const lease = await leases.claimOrThrow(fresh('input'));
      const sent = await watch.commandsDuring(async () => {
        await expect(leases.checkpoint(lease, { big: 'x'.repeat(100) })).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(leases.release(lease, { checkpoint: { big: 'x'.repeat(100) } })).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(leases.claim('lone \ud800 surrogate')).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(leases.fencedWrite(lease, (tx) => tx.call('SET', '\udfff', 'x'))).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(leases.fencedWrite(lease, (tx) => tx.call('SET k', 'x'))).rejects.toBeInstanceOf(InvalidArgumentError);
      });
      expect(sent).toEqual([]);
      let late: (() => unknown) | null = null;
      await leases.fencedWrite(lease, (tx) => {
        late = () => tx.call('SET', 'late', 'x');
      });
      expect(() => late?.()).toThrow(InvalidArgumentError);
    });

    it("hash tags: a lease's record, its gate record and keys named with hashTagOf(key) share one cluster slot", () => {
      const names = keyNames(prefix);
      for (const key of ['job:42', 'order:{42}:ship', '{a}', 'a{b', 'a}b', '{}x}', 'x{}', '{{nested}}']) {
        const slot = clusterSlot(names.record(key, 'lease'));
        expect([clusterSlot(`${prefix}${hashTagOf(key)}:mine`), clusterSlot(names.record(key, 'gate'))]).toEqual([slot, slot]);
        // Where Redis can place the lease key itself, the adapter's keys follow it.
        if (!key.includes('}') || /\{[^}]+\}/.test(key)) expect(slot).toBe(clusterSlot(key));
      }
    });
  });
}
