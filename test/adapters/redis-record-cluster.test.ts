/**
 * Issue 24's operations on a real Redis Cluster (3 masters), with ioredis `Cluster` and node-redis
 * `createCluster`: every script's keys (the record, the submissions hash, a condition's and a command's keys
 * named with `hashTagOf`) share the lease's slot, so nothing is refused CROSSSLOT, for a plain key and for a
 * key with a hash tag of its own; `list` (which scans every master) shows the key state and the hold.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisStore, hashTagOf } from '../../src/adapters/redis/index.js';
import type { Fence } from '../../src/fence/types.js';
import type { StoreListPage } from '../../src/list.js';
import { newSecret } from '../../src/secret.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import { openClusterClient, type ClusterClientKind } from '../topology/redis-cluster-harness.js';
import { freshPrefix } from './redis-harness.js';

const KINDS: readonly ClusterClientKind[] = ['ioredis', 'node-redis'];

describe('redis cluster: issue 24 operations keep to the lease slot', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 0 });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it.each(KINDS)(
    '%s: setKeyState, claim expect, release holdMs, a submission with a condition, remove and list',
    { timeout: 60_000 },
    async (kind) => {
      const { client, close } = await openClusterClient(kind, cluster.seeds);
      const prefix = freshPrefix(`lf-cluster-ops-${kind}`);
      const store = createRedisStore({ client, prefix });
      try {
        for (const key of [`job:${randomBytes(3).toString('hex')}`, `order:{${randomBytes(3).toString('hex')}}:ship`]) {
          const owner = `${prefix}${hashTagOf(key)}:owner`;
          expect(await store.setKeyState({ key, values: { rev: '1' }, by: 'scanner' })).toMatchObject({ changed: ['rev'] });
          const secret = newSecret();
          const claimed = await store.claim({
            key,
            holder: 'w',
            runId: 'r',
            secret,
            ttlMs: 60_000,
            attributes: {},
            recovering: false,
            expect: { rev: '1' },
          });
          if (!claimed.ok) throw new Error(`not granted: ${claimed.reason}`);
          const fence: Fence = { key, token: claimed.token, secret, holder: 'w', runId: 'r' };
          const submission = { runId: 'd1', digest: createHash('sha256').update('x').digest('hex'), receiptJson: null, bindToGrant: true };
          const write = () =>
            store.fencedWrite(
              fence,
              (tx) => {
                tx.refuseUnless({ read: ['GET', owner], equals: 'active' }, 'owner-inactive');
                return tx.call('INCR', `${prefix}${hashTagOf(key)}:n`);
              },
              { submission },
            );
          expect(await write()).toMatchObject({ ok: false, reason: 'write-refused', code: 'owner-inactive' });
          await store.fencedWrite(fence, (tx) => tx.call('SET', owner, 'active'));
          expect(await write()).toMatchObject({ ok: true, value: 1, submission: { runId: 'd1' } });
          expect(await write()).toMatchObject({ ok: false, reason: 'replayed' });
          expect(await store.release({ fence, holdMs: 60_000 })).toMatchObject({ ok: true });
          const listed = [];
          let cursor: string | null = null;
          do {
            const page: StoreListPage | undefined = await store.list?.({ prefix: key, limit: 100, cursor });
            if (page === undefined) throw new Error('the redis store lists');
            listed.push(...page.leases);
            cursor = page.cursor;
          } while (cursor !== null);
          expect(listed.find((lease) => lease.key === key)).toMatchObject({ state: { rev: '1' }, heldUntil: expect.any(Number) });
          expect(
            await store.claim({ key, holder: 'v', runId: null, secret: newSecret(), ttlMs: 1_000, attributes: {}, recovering: false }),
          ).toMatchObject({
            ok: false,
            reason: 'held-back',
          });
          expect(await store.remove({ key, force: false, expectedToken: null })).toMatchObject({ ok: true, token: claimed.token });
          const again = await store.claim({
            key,
            holder: 'v',
            runId: null,
            secret: newSecret(),
            ttlMs: 1_000,
            attributes: {},
            recovering: false,
          });
          expect(again.ok && again.token > claimed.token).toBe(true);
        }
      } finally {
        await close();
      }
    },
  );
});
