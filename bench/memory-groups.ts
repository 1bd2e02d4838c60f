/**
 * `npm run bench`, memory store: claim + release through the public API (the baseline), the store's own
 * claim + release without the shell, `withLease` around an empty function (one that takes only the lease,
 * and one that takes the signal), and the AbortSignal alone, in one process on one core.
 * Every tree runs as bundled ESM (library.ts), as users run `dist/`. With BENCH_COMPARE (another checkout's
 * `src/`), that tree's claim + release and withLease run in the same groups: before and after in the same run;
 * the self-check row (a second bundle of this tree) shows what loading a second copy alone does to a ratio.
 */
import type { Lease } from '../src/lease.js';
import type { createLeases } from '../src/leases.js';
import type { Store } from '../src/store.js';
import { comparedLibrary, loadLibrary, thisLibrary, THIS_SRC, type Library } from './library.js';
import type { Contender, Group } from './slices.js';

type LeasesFactory = typeof createLeases;
type StoreFactory = () => Store;

/** claim + release and withLease contenders of one tree, named with `label`. */
function leasefence(label: string, makeLeases: LeasesFactory, makeStore: StoreFactory, baseline: string): Contender[] {
  const leases = makeLeases(makeStore(), { holder: 'bench', ttlMs: 30_000 });
  const claimRelease = `${label}claim + release`;
  return [
    {
      name: claimRelease,
      baseline,
      prepare: async (worker) => async () => {
        const claimed = await leases.claim(`cycle:${worker}`);
        if (!claimed.ok) throw new Error(`${label}: not granted`);
        await leases.release(claimed.lease);
      },
    },
    withLeaseOf(`${label}withLease((lease) => token)`, leases, async (lease) => lease.token, claimRelease, label),
    withLeaseOf(`${label}withLease((lease, signal) => signal.aborted)`, leases, async (_lease, signal) => signal.aborted, claimRelease, label),
  ];
}

/**
 * withLease around `work`, which does nothing: a one-parameter `work` (the usual form) lets the run skip the
 * AbortSignal; one that takes the signal pays for it (~2.5 µs on Node 20).
 */
function withLeaseOf(name: string, leases: ReturnType<LeasesFactory>, work: (lease: Lease, signal: AbortSignal) => Promise<unknown>, baseline: string, label: string): Contender {
  return {
    name,
    baseline,
    prepare: async (worker) => async () => {
      const outcome = await leases.withLease(`with:${worker}`, work);
      if (!outcome.ok) throw new Error(`${label}: withLease ${outcome.reason}`);
    },
  };
}

/** The store alone: its claim and release commands, without validation, secrets or handles. */
function storeAlone(library: Library): Contender {
  const store = library.memory.createMemoryStore();
  return {
    name: 'store.claim + store.release (no shell)',
    baseline: 'claim + release',
    prepare: async (worker) => {
      const key = `store:${worker}`;
      const secret = '0123456789abcdef0123456789abcdef';
      return async () => {
        const claimed = await store.claim({ key, holder: 'bench', runId: null, secret, ttlMs: 30_000, attributes: {}, recovering: false });
        if (!claimed.ok) throw new Error('store: not granted');
        await store.release({ fence: { key, token: claimed.token, secret, holder: 'bench', runId: null, attributes: {} } });
      };
    },
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
  const [mine, ...withLease] = leasefence('', library.root.createLeases, () => library.memory.createMemoryStore(), 'claim + release');
  const control: Contender = { ...(mine as Contender), name: 'claim + release (control)' };
  const copy = await loadLibrary(THIS_SRC);
  const [selfCheck] = leasefence('self-check, a second bundle of this tree: ', copy.root.createLeases, () => copy.memory.createMemoryStore(), 'claim + release');
  const contenders: Contender[] = [mine as Contender, control, selfCheck as Contender, ...withLease, storeAlone(library), abortSignalAlone()];
  const before = await comparedLibrary();
  if (before !== null) contenders.push(...leasefence('before: ', before.root.createLeases, () => before.memory.createMemoryStore(), 'claim + release'));
  return [{ title: 'Memory store', workers: 1, contenders }];
}
