/**
 * A quick latency comparison on a throwaway single-member etcd (run: `npx tsx test/adapters/etcd-bench.ts`,
 * iterations from LEASEFENCE_ETCD_BENCH_N, default 300): leasefence claim+release and fenced write
 * against raw etcd transactions doing the least the same work needs, and the etcd3 client's own Lock
 * (which gives no fencing token). Sequential, one client: latency, not throughput.
 */
import { Etcd3 } from 'etcd3';
import { createEtcdStore } from '../../src/adapters/etcd/index.js';
import { createLeases } from '../../src/leases.js';
import { startEtcd } from '../support/etcd-server.js';

const N = Number(process.env['LEASEFENCE_ETCD_BENCH_N'] ?? 300);

async function measure(name: string, run: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 20; i += 1) await run(-1 - i);
  const times: number[] = [];
  for (let i = 0; i < N; i += 1) {
    const started = performance.now();
    await run(i);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const at = (q: number): string => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(2);
  console.log(`${name.padEnd(46)} p50 ${at(0.5)} ms  p99 ${at(0.99)} ms  (${N} runs)`);
}

const server = await startEtcd();
const client = new Etcd3({ hosts: server.url });
try {
  const leases = createLeases(createEtcdStore({ client, prefix: 'bench/' }), { holder: 'bench', ttlMs: 30_000 });
  const key = (i: number): Buffer => Buffer.from(`raw/${i}`);

  await measure('leasefence claim + release', async (i) => {
    const lease = await leases.claimOrThrow(`job:${i}`);
    await leases.release(lease);
  });
  await measure('raw etcd: create-if-absent txn + delete', async (i) => {
    await client.kv.txn({
      compare: [{ key: key(i), target: 'Mod', result: 'Equal', mod_revision: 0 }],
      success: [{ request_put: { key: key(i), value: Buffer.from('held') } }],
    });
    await client.kv.deleteRange({ key: key(i) });
  });
  await measure('etcd3 Lock acquire + release (no token)', async (i) => {
    const lock = client.lock(`lock/${i}`).ttl(30);
    await lock.acquire();
    await lock.release();
  });

  const held = await leases.claimOrThrow('job:fenced');
  await measure('leasefence fenced write (1 put)', (i) => leases.fencedWriteOrThrow(held, (tx) => tx.put(`data/${i}`, 'x')));
  await measure('raw etcd: read + compare-and-put txn', async (i) => {
    const { kvs } = await client.kv.range({ key: Buffer.from('raw-fence') });
    const revision = kvs[0]?.mod_revision ?? '0';
    await client.kv.txn({
      compare: [{ key: Buffer.from('raw-fence'), target: 'Mod', result: 'Equal', mod_revision: revision }],
      success: [
        { request_put: { key: Buffer.from('raw-fence'), value: Buffer.from(String(i)) } },
        { request_put: { key: Buffer.from(`raw-data/${i}`), value: Buffer.from('x') } },
      ],
    });
  });
} finally {
  client.close();
  await server.stop();
}
