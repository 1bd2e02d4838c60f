/**
 * A census of the fuzz property on the memory store: runs 3,000 sampled calls (times LEASEFENCE_TEST_SCALE) without
 * stopping at the first failure and prints how many violate the property, by method and kind. For reports
 * (`npx tsx test/security/fuzz-census.ts`), not part of `npm test`.
 */
import fc from 'fast-check';
import { calls, runCall } from './fuzz-property.js';
import { memoryFuzzTarget } from './memory-fuzz-target.js';
import { scaled } from '../support/scale.js';

const runs = scaled(3_000);
const target = await memoryFuzzTarget();
const failures = new Map<string, number>();
let failed = 0;
for (const recipe of fc.sample(calls(true, true), { numRuns: runs, seed: 42 })) {
  try {
    await runCall(target, recipe);
  } catch (error) {
    failed += 1;
    const text = String(error instanceof Error ? error.message : error)
      .split('\n')[0]
      ?.replace(/\d+/g, 'N')
      .slice(0, 110);
    const label = `${recipe.method}: ${text}`;
    failures.set(label, (failures.get(label) ?? 0) + 1);
  }
}
console.log(`${failed} of ${runs} runs violate the property (${failures.size} kinds)`);
for (const [label, count] of [...failures].sort((a, b) => b[1] - a[1])) console.log(`${String(count).padStart(5)}  ${label}`);
