/**
 * Listing on a real Redis Cluster (three masters, started here): the listing scans every master in turn
 * and lists each key once, across the slots of all three, while an ioredis Cluster client runs the store.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { createLeases } from '../../src/leases.js';
import { createOperator } from '../../src/operator.js';
import { listPages } from './list-specs.js';

const exec = promisify(execFile);

/** A free loopback port (the cluster bus uses port + 10000, which must be free too). */
async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
      });
    });
    if (port + 10_000 < 65_536) return port;
  }
}

describe('list: redis cluster (ioredis Cluster, 3 masters)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasefence-cluster-'));
  const servers: ChildProcess[] = [];
  let cluster: Cluster;

  beforeAll(async () => {
    const ports = [await freePort(), await freePort(), await freePort()];
    for (const port of ports) {
      const args = [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--dir',
        dir,
      ];
      servers.push(
        spawn('redis-server', [...args, '--save', '', '--appendonly', 'no', '--dbfilename', `dump-${port}.rdb`, '--logfile', ''], {
          stdio: 'ignore',
        }),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    await exec('redis-cli', ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-yes']);
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const { stdout } = await exec('redis-cli', ['-p', String(ports[0]), 'cluster', 'info']);
      if (stdout.includes('cluster_state:ok')) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    cluster = new Cluster(ports.map((port) => ({ host: '127.0.0.1', port })));
    await new Promise<void>((resolve) => cluster.once('ready', () => resolve()));
  }, 60_000);

  afterAll(async () => {
    cluster?.disconnect();
    for (const server of servers) server.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('scans each master and lists every key once', async () => {
    const store = createRedisStore({ client: cluster });
    const leases = createLeases(store, { holder: 'w', ttlMs: 60_000 });
    const keys = Array.from({ length: 60 }, (_, index) => `c:${index}`);
    for (const key of keys) await leases.claimOrThrow(key);
    await leases.claimOrThrow('other:1');
    expect(cluster.nodes('master')).toHaveLength(3);
    const pages = await listPages(createOperator(store), { prefix: 'c:', limit: 7 });
    const listed = pages.flat().map((lease) => lease.key);
    expect(listed.sort()).toEqual([...keys].sort());
    expect(pages.length).toBeGreaterThanOrEqual(3);
  });
});
