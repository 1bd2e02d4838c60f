/**
 * `npm run bench`, memory store: claim + release through the public API (the baseline), the store's own
 * claim + release without the shell, `withLease` around an empty function (one that takes only the lease,
 * and one that takes the signal), and the AbortSignal alone, in one process on one core.
 * Every tree runs as bundled ESM (library.ts), as users run `dist/`. With BENCH_COMPARE (another checkout's
 * `src/`), that tree's claim + release and withLease run in the same groups: before and after in the same run;
 * the self-check row (a second bundle of this tree) shows what loading a second copy alone does to a ratio.
 */
import type { RunningLease } from '../src/leases-types.js';
import { comparedLibrary, loadLibrary, thisLibrary, THIS_SRC, type Library } from './library.js';
import type { Contender, Group } from './slices.js';

/** claim + release and withLease contenders of one tree, named with `label`, on a memory store of its own. */
function leasefence(label: string, library: Library, baseline: string): Contender[] {
  const { cycles } = library;
  const leases = library.root.createLeases(library.memory.createMemoryStore(), { holder: 'bench', ttlMs: 30_000 });
  const claimRelease = `${label}claim + release`;
  // NOTE: a one-parameter `fn` (the usual form) lets the run skip the AbortSignal; one that takes the
  // signal pays for it (~2.5 µs on Node 20).
  const withLease = (name: string, work: (lease: RunningLease, signal: AbortSignal) => Promise<unknown>): Contender => ({
    name,
    baseline: claimRelease,
    prepare: async (worker) => cycles.withLease(leases, `with:${worker}`, work, label),
  });
  return [
    { name: claimRelease, baseline, prepare: async (worker) => cycles.claimRelease(leases, `cycle:${worker}`, label) },
    withLease(`${label}withLease((lease) => token)`, cycles.returnToken),
    withLease(`${label}withLease((lease, signal) => signal.aborted)`, cycles.readSignal),
  ];
}

/** The store alone: its claim and release commands, without validation, secrets or handles. */
function storeAlone(library: Library): Contender {
  const store = library.memory.createMemoryStore();
  return {
    name: 'store.claim + store.release (no shell)',
    baseline: 'claim + release',
    prepare: async (worker) => library.cycles.storeCycle(store, `store:${worker}`),
  };
}

/**
 * What every withLease run pays before it does anything: the AbortSignal handed to `fn` (Node 20 builds
 * its EventTarget when `.signal` is first read). A reference row, not a contender.
 */
function abortSignalAlone(): Contender {
  return {
    name: 'new AbortController().signal alone (reference)',
    baseline: 'claim + release',
    prepare: async () => async () => new AbortController().signal,
  };
}

/**
 * The memory groups (one worker: the memory store is one process). Every tree runs bundled (library.ts):
 * this one, a second bundle of this one (the self-check: ~1.00 when loading adds no bias), and
 * BENCH_COMPARE's.
 */
export async function memoryGroups(): Promise<Group[]> {
  const library = await thisLibrary();
  const [mine, ...withLease] = leasefence('', library, 'claim + release');
  const control: Contender = { ...(mine as Contender), name: 'claim + release (control)' };
  const [selfCheck] = leasefence('self-check, a second bundle of this tree: ', await loadLibrary(THIS_SRC), 'claim + release');
  const contenders: Contender[] = [
    mine as Contender,
    control,
    selfCheck as Contender,
    ...withLease,
    storeAlone(library),
    abortSignalAlone(),
  ];
  const before = await comparedLibrary();
  if (before !== null) contenders.push(...leasefence('before: ', before, 'claim + release'));
  return [{ title: 'Memory store', workers: 1, contenders }];
}
