import { Etcd3 } from 'etcd3';
import { createEtcdStore } from './src/adapters/etcd/index.js';
import { createLeases } from './src/leases.js';
import { startEtcd } from './test/support/etcd-server.js';

const server = await startEtcd();
const client = new Etcd3({ hosts: server.url });
const N = Number(process.env.N ?? 400);
const run = async (label: string) => {
  const leases = createLeases(createEtcdStore({ client, prefix: `b/${label}/${Math.random()}/` }), { holder: 'b', ttlMs: 30_000 });
  for (let i = 0; i < 50; i++) { const l = await leases.claimOrThrow('w'); await leases.release(l); }
  let t = performance.now();
  for (let i = 0; i < N; i++) { const l = await leases.claimOrThrow('k'); await leases.release(l); }
  const cr = (performance.now() - t) / N;
  const l = await leases.claimOrThrow('f');
  t = performance.now();
  for (let i = 0; i < N; i++) await leases.fencedWriteOrThrow(l, (tx) => tx.put(`data/${label}`, String(i)));
  const fw = (performance.now() - t) / N;
  return { cr, fw };
};
const results: Record<string, { cr: number[]; fw: number[] }> = { mark: { cr: [], fw: [] }, nomark: { cr: [], fw: [] } };
for (let round = 0; round < 8; round++) {
  for (const mode of ['mark', 'nomark'] as const) {
    (globalThis as { LF_NO_MARK?: boolean }).LF_NO_MARK = mode === 'nomark';
    const { cr, fw } = await run(mode);
    results[mode]!.cr.push(cr); results[mode]!.fw.push(fw);
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [mode, r] of Object.entries(results)) console.log(mode, 'claim+release ms', med(r.cr).toFixed(3), r.cr.map((x) => x.toFixed(2)).join(' '), '| fencedWrite ms', med(r.fw).toFixed(3), r.fw.map((x) => x.toFixed(2)).join(' '));
client.close();
await server.stop();
process.exit(0);
