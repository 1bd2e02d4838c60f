/**
 * bench/library.ts bundles a tree as the package build does: its entry points and target still match
 * tsup.config.ts, and every load is a copy of its own that works (a claim + release on the memory store).
 */
import { afterAll, expect, it } from 'vitest';
import config from '../../tsup.config.js';
import { ENTRIES, loadLibrary, removeBundles, TARGET, THIS_SRC } from '../../bench/library.js';

// NOTE: a vitest worker may end without Node's 'exit' event.
afterAll(removeBundles);

it("bench/library.ts bundles tsup.config.ts's entry points with its target", () => {
  const [library] = (Array.isArray(config) ? config : [config]) as { entry: Record<string, string>; target: string; format: string[] }[];
  for (const [name, file] of Object.entries(ENTRIES)) expect(library?.entry[name]).toBe(`src/${file}`);
  expect(library?.target).toBe(TARGET);
  expect(library?.format).toContain('esm');
});

it('every load is a separate bundled copy that claims and releases', async () => {
  const [first, second] = [await loadLibrary(THIS_SRC), await loadLibrary(THIS_SRC)];
  expect(first.root.createLeases).not.toBe(second.root.createLeases);
  for (const library of [first, second]) {
    const leases = library.root.createLeases(library.memory.createMemoryStore(), { holder: 'test', ttlMs: 1_000 });
    const claimed = await leases.claimOrThrow('key');
    expect((await leases.release(claimed)).ok).toBe(true);
  }
}, 20_000);
