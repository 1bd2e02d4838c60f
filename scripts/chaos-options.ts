/**
 * The options of `npm run chaos`, checked before any server starts: a misspelt store, scenario, client or
 * variant, or a duration that is not a number, is a usage error (exit 2), not a run of nothing that reports
 * "0 violations".
 */
import { parseArgs } from 'node:util';

/** What the harness can run: the scenario names of each store, the drivers and the planted bugs. */
export interface ChaosCatalog {
  /** Every store the harness knows, with the names of the scenarios it runs there. */
  readonly scenarios: Readonly<Record<string, readonly string[]>>;
  /** The drivers a worker can use, by store. */
  readonly clients: Readonly<Record<string, readonly string[]>>;
  /** The planted bugs `--variant` takes. */
  readonly variants: readonly string[];
  /** The queue workload's stores and planted bugs (`--workload queue`). */
  readonly queue?: { readonly stores: readonly string[]; readonly variants: readonly string[] };
  /** The semaphore workload's stores and planted bugs (`--workload semaphore`). */
  readonly semaphore?: { readonly stores: readonly string[]; readonly variants: readonly string[] };
}

/** A chaos run as the command line asked for it. */
export interface ChaosOptions {
  readonly totalMs: number;
  readonly scenarioMs: number;
  readonly stores: readonly string[];
  /** The drivers to mix; `undefined`: every driver of each store. */
  readonly clients: readonly string[] | undefined;
  /** The scenarios to run; `null`: every scenario of each store. */
  readonly scenarios: readonly string[] | null;
  /** `--seed` as given (validated as `CHAOS_SEED` is), or `undefined`. */
  readonly seed: string | undefined;
  readonly keep: boolean;
  readonly variant: string | null;
  /**
   * `leases` (workers claim keys), `election` (workers campaign for them with `createElection`) or `queue`
   * (workers claim the next item of a set and finalize runs with idempotent submissions: test/chaos/queue.ts) or
   * `semaphore` (workers acquire permits of one semaphore and write under them: test/chaos/semaphore.ts).
   */
  readonly workload: 'leases' | 'election' | 'queue' | 'semaphore';
  /** `--submit-only`: the queue workload claims known keys even where the store has claim-next. */
  readonly submitOnly: boolean;
}

/** A bad command line: the message says what to change. */
export class ChaosUsageError extends Error {
  override name = 'ChaosUsageError' as const;
}

/** One line of usage, printed after a usage error. */
export const CHAOS_USAGE =
  'usage: npm run chaos -- [--duration <s>] [--scenario-duration <s>] [--stores a,b] [--scenarios a,b] [--clients a,b] [--seed <n>] [--keep] [--variant <bug>] [--workload leases|election|queue|semaphore] [--submit-only]';

const list = (text: string | undefined): string[] | undefined =>
  text === undefined ? undefined : text.split(',').map((item) => item.trim());

function seconds(text: string, option: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value <= 0)
    throw new ChaosUsageError(`--${option} must be a positive number of seconds, got ${JSON.stringify(text)}`);
  return value * 1000;
}

function oneOf(items: readonly string[], known: readonly string[], option: string): void {
  const unknown = items.filter((item) => !known.includes(item));
  if (unknown.length > 0)
    throw new ChaosUsageError(`--${option}: unknown ${unknown.map((item) => JSON.stringify(item)).join(', ')}; known: ${known.join(', ')}`);
}

/** Parses and checks `argv` (the arguments after the script) against `catalog`. */
export function parseChaosOptions(argv: readonly string[], catalog: ChaosCatalog): ChaosOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        duration: { type: 'string', default: '600' },
        'scenario-duration': { type: 'string', default: '30' },
        stores: { type: 'string', default: 'postgres,redis,sqlite' },
        clients: { type: 'string' },
        scenarios: { type: 'string' },
        seed: { type: 'string' },
        keep: { type: 'boolean', default: false },
        variant: { type: 'string' },
        workload: { type: 'string', default: 'leases' },
        'submit-only': { type: 'boolean', default: false },
      },
    }));
  } catch (error) {
    throw new ChaosUsageError(error instanceof Error ? error.message : String(error));
  }
  oneOf([values.workload], ['leases', 'election', 'queue', 'semaphore'], 'workload');
  const queue = values.workload === 'queue';
  // NOTE: the queue and semaphore workloads run on their own stores, with their own faults and planted bugs.
  const none = { stores: [], variants: [] };
  const own = queue ? (catalog.queue ?? none) : values.workload === 'semaphore' ? (catalog.semaphore ?? none) : undefined;
  const stores = list(values.stores) ?? [];
  oneOf(stores, own !== undefined ? own.stores : Object.keys(catalog.scenarios), 'stores');
  if (own !== undefined && values.scenarios !== undefined)
    throw new ChaosUsageError(`--scenarios: the ${values.workload} workload has no scenarios (its faults are its own)`);
  if (!queue && values['submit-only']) throw new ChaosUsageError('--submit-only belongs to --workload queue');
  const scenarios = list(values.scenarios) ?? null;
  if (scenarios !== null) {
    oneOf(scenarios, [...new Set(Object.values(catalog.scenarios).flat())], 'scenarios');
    for (const store of stores) {
      const runs = catalog.scenarios[store] ?? [];
      if (!scenarios.some((scenario) => runs.includes(scenario))) {
        throw new ChaosUsageError(`--scenarios ${scenarios.join(',')}: store ${store} runs none of them (it runs ${runs.join(', ')})`);
      }
    }
  }
  const clients = list(values.clients);
  if (clients !== undefined) {
    const usable = [...new Set(stores.flatMap((store) => catalog.clients[store] ?? []))];
    oneOf(clients, usable, 'clients');
  }
  if (values.variant !== undefined) oneOf([values.variant], own !== undefined ? own.variants : catalog.variants, 'variant');
  if (values.seed !== undefined && !(/^\d{1,10}$/.test(values.seed) && Number(values.seed) <= 0xffffffff))
    throw new ChaosUsageError(`--seed must be an integer in [0, 2^32), got ${JSON.stringify(values.seed)}`);
  return {
    totalMs: seconds(values.duration, 'duration'),
    scenarioMs: seconds(values['scenario-duration'], 'scenario-duration'),
    stores,
    clients,
    scenarios,
    seed: values.seed,
    keep: values.keep,
    variant: values.variant ?? null,
    workload: values.workload as ChaosOptions['workload'],
    submitOnly: values['submit-only'],
  };
}
