/**
 * The hot path of the shell on the memory store: claim + release of one key, N times, after a warm-up.
 * Prints wall-clock and CPU ns per claim+release (CPU time is the steadier figure on a shared machine), the
 * median and best of 9 rounds. Run: `npx tsx bench/claim-release-memory.ts [N]`.
 */
import { createMemoryStore } from '../src/adapters/memory/index.js';
import { createLeases } from '../src/leases.js';

const iterations = Number(process.argv[2] ?? 200_000);
const leases = createLeases(createMemoryStore(), { holder: 'bench', ttlMs: 30_000 });

async function loop(count: number): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    const claimed = await leases.claim('bench:key');
    if (!claimed.ok) throw new Error('claim refused');
    await leases.release(claimed.lease);
  }
}

await loop(20_000);
const wall: number[] = [];
const cpu: number[] = [];
for (let round = 0; round < 9; round += 1) {
  const start = process.hrtime.bigint();
  const startCpu = process.cpuUsage();
  await loop(iterations);
  const used = process.cpuUsage(startCpu);
  wall.push(Number(process.hrtime.bigint() - start) / iterations);
  cpu.push(((used.user + used.system) * 1000) / iterations);
}
wall.sort((a, b) => a - b);
cpu.sort((a, b) => a - b);
const show = (values: number[]): string => `median ${values[4]?.toFixed(0)} ns, best ${values[0]?.toFixed(0)} ns`;
console.log(`claim+release (memory), 9 rounds of ${iterations}: wall ${show(wall)}; cpu ${show(cpu)}`);
