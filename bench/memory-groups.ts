/**
 * `npm run bench`, memory store: claim + release through the public API (the baseline), the store's own
 * claim + release without the shell, `withLease` around an empty function (one that takes only the lease,
 * and one that takes the signal), and the AbortSignal alone, in one process on one core.
 * With BENCH_COMPARE (another checkout's `src/`), that tree's claim + release and withLease run in the same
 * groups: before and after in the same run.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createMemoryStore } from '../src/adapters/memory/index.js';
import { createLeases } from '../src/leases.js';
import type { Lease } from '../src/lease.js';
import type { Store } from '../src/store.js';
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
function storeAlone(): Contender {
  const store = createMemoryStore();
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
 * Warns when the compared tree would load as CommonJS: tsx compiles `.ts` files under no `package.json`
 * with `"type": "module"` to CommonJS, whose imported bindings are getters called on every use. Measured:
 * an identical copy of this tree ran at 0.62–0.69 of this one that way, 0.77–0.84 with the `package.json`
 * (a second copy stays slower in this harness: read "before" rows against an identical copy's; see
 * BENCHMARKS.md, "Memory store and the shell, round three").
 */
function warnIfCommonJs(root: string): void {
  let type: unknown;
  try {
    type = (JSON.parse(readFileSync(resolve(root, '..', 'package.json'), 'utf8')) as { type?: unknown }).type;
  } catch {
    type = undefined;
  }
  if (type !== 'module') {
    console.log(
      `**Warning: ${root}/../package.json does not say "type": "module", so the compared tree runs as CommonJS and measures slower than it is. ` +
        'Extract it with its package.json: `git archive main src package.json | tar -x -C /tmp/before`.**\n',
    );
  }
}

/** The memory groups (one worker: the memory store is one process). */
export async function memoryGroups(compare: string | undefined): Promise<Group[]> {
  const [mine, ...withLease] = leasefence('', createLeases, () => createMemoryStore(), 'claim + release');
  const control: Contender = { ...(mine as Contender), name: 'claim + release (control)' };
  const contenders: Contender[] = [mine as Contender, control, ...withLease, storeAlone(), abortSignalAlone()];
  if (compare !== undefined && compare !== '') {
    const root = resolve(compare);
    warnIfCommonJs(root);
    const other = (await import(pathToFileURL(`${root}/leases.ts`).href)) as { createLeases: LeasesFactory };
    const memory = (await import(pathToFileURL(`${root}/adapters/memory/index.ts`).href)) as { createMemoryStore: StoreFactory };
    contenders.push(...leasefence('before: ', other.createLeases, memory.createMemoryStore, 'claim + release'));
  }
  return [{ title: 'Memory store', workers: 1, contenders }];
}
