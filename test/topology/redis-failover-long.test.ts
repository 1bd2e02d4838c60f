/**
 * The long failover measurement (not part of npm test): `LEASEFENCE_TEST_SCALE=20 npx vitest run
 * test/topology/redis-failover-long.test.ts` kills the key's master 20 times on a Redis Cluster (ioredis
 * Cluster) and behind Sentinel (ioredis), workers running throughout, and prints the figures RELIABILITY.md
 * records. Fails on any violation. `LEASEFENCE_TOPOLOGY_DIAG=1` prints, per cluster round, the replication
 * state of the killed master and its replica just before the kill, and what the round lost.
 *
 * NOTE: not node-redis' cluster client: node-redis 5.12 rediscovers the cluster only on MOVED/ASK, so
 * after its master dies a slot's commands wait for that node to come back (measured: no grant within
 * 120 s). See docs/topologies.md.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterSlot } from '../../src/adapters/redis/cross-slot.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { freshPrefix } from '../adapters/redis-harness.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import { startRedisSentinel, type RedisSentinelSetup } from '../support/redis-sentinel.js';
import type { RedisServer } from '../support/redis-server.js';
import { openClusterClient, type ClusterClientKind } from './redis-cluster-harness.js';
import { measureFailovers, percentile, type FailoverSeries, type MeasureRig } from './redis-failover-measure.js';
import { measuring, testScale } from '../support/scale.js';

const rounds = measuring() ? Math.round(testScale()) : 0;
const timeoutMs = 60_000 + rounds * 30_000;

function report(topology: string, series: FailoverSeries): void {
  const { takeoverMs, ...counts } = series;
  const figures = {
    ...counts,
    takeoverP50Ms: Math.round(percentile(takeoverMs, 50)),
    takeoverP99Ms: Math.round(percentile(takeoverMs, 99)),
    takeoverMaxMs: Math.round(Math.max(...takeoverMs)),
  };
  console.info(`[topology] ${topology}: ${JSON.stringify(figures)}`);
  expect(series.violations).toEqual([]);
}

describe.skipIf(rounds === 0)('redis failovers, measured (LEASEFENCE_TEST_SCALE rounds)', () => {
  describe.each(['ioredis'] as const)('cluster (%s)', (kind: ClusterClientKind) => {
    let cluster: RedisCluster;
    beforeAll(async () => {
      cluster = await startRedisCluster();
    });
    afterAll(async () => void (await cluster?.stop()));

    it(`${rounds} master kills`, { timeout: timeoutMs }, async () => {
      const prefix = freshPrefix(`lf-failovers-${kind}`);
      let killed: RedisServer | null = null;
      const rig: MeasureRig = {
        openClient: () => openClusterClient(kind, cluster.seeds),
        async killMaster(key) {
          const master = await cluster.masterOf(clusterSlot(keyNames(prefix).record(key, 'lease')));
          killed = cluster.server(master.port);
          const infos = process.env['LEASEFENCE_TOPOLOGY_DIAG']
            ? await Promise.all(
                [master.port, ...(await cluster.replicasOf(master.id)).map((node) => node.port)].map(
                  async (port) =>
                    `${port}: ${String(await cluster.admin(port).info('replication')).replace(/\r\n/g, ' ')} KEYS ${await cluster.admin(port).dbsize()}`,
                ),
              )
            : [];
          await killed.kill();
          for (const info of infos) console.info(`[diag] ${info}`);
        },
        async heal() {
          await killed?.restart();
          await cluster.waitUntilHealthy(60_000);
        },
      };
      report(`redis cluster (${kind})`, await measureFailovers(rig, prefix, 'measured:job', rounds));
    });
  });

  describe('sentinel (ioredis)', () => {
    let setup: RedisSentinelSetup;
    beforeAll(async () => {
      setup = await startRedisSentinel();
    });
    afterAll(async () => void (await setup?.stop()));

    it(`${rounds} master kills`, { timeout: timeoutMs }, async () => {
      let killed: RedisServer | null = null;
      const rig: MeasureRig = {
        async openClient() {
          const client = new Redis({ sentinels: [...setup.sentinels], name: setup.name, lazyConnect: true });
          client.on('error', () => undefined);
          await client.connect();
          return { client, close: async () => void client.disconnect() };
        },
        async killMaster() {
          killed = setup.server(await setup.masterPort());
          await killed.kill();
        },
        async heal() {
          await killed?.restart();
          await setup.waitUntilHealthy(60_000);
        },
      };
      report('redis sentinel (ioredis)', await measureFailovers(rig, freshPrefix('lf-failovers-sentinel'), 'measured:job', rounds));
    });
  });
});
