// Ad-hoc A/B: this branch's etcd store against the base commit's (13017f5), same etcd, same client, alternating.
import { Etcd3 } from 'etcd3';
import * as now from './src/adapters/etcd/index.js';
import * as base from '/tmp/etcdbase/src/adapters/etcd/index.js';
import { createLeases } from './src/leases.js';
import { startEtcd } from './test/support/etcd-server.js';

const server = await startEtcd();
const client = new Etcd3({ hosts: server.url });
const N = Number(process.env.N ?? 300);
const run = async (label: string, create: typeof now.createEtcdStore) => {
  const leases = createLeases(create({ client, prefix: `b/${label}/${Math.random()}/` }), { holder: 'b', ttlMs: 30_000 });
  for (let i = 0; i < 30; i++) { const l = await leases.claimOrThrow('w'); await leases.release(l); }
  let t = performance.now();
  for (let i = 0; i < N; i++) { const l = await leases.claimOrThrow('k'); await leases.release(l); }
  const cr = (performance.now() - t) / N;
  const l = await leases.claimOrThrow('f');
  t = performance.now();
  for (let i = 0; i < N; i++) await leases.fencedWriteOrThrow(l, (tx) => tx.put(`data/${label}`, String(i)));
  const fw = (performance.now() - t) / N;
  return { cr, fw };
};
const results: Record<string, { cr: number[]; fw: number[] }> = { etcd24: { cr: [], fw: [] }, base: { cr: [], fw: [] } };
for (let round = 0; round < Number(process.env.ROUNDS ?? 8); round++) {
  for (const [mode, create] of [['etcd24', now.createEtcdStore], ['base', base.createEtcdStore as unknown as typeof now.createEtcdStore]] as const) {
    const { cr, fw } = await run(mode, create);
    results[mode]!.cr.push(cr); results[mode]!.fw.push(fw);
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [mode, r] of Object.entries(results)) console.log(mode, 'claim+release ms/cycle median', med(r.cr).toFixed(2), 'min', Math.min(...r.cr).toFixed(2), '| fencedWrite ms median', med(r.fw).toFixed(2), 'min', Math.min(...r.fw).toFixed(2));
client.close();
await server.stop();
process.exit(0);
