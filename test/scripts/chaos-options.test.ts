/**
 * `npm run chaos`'s command line: a misspelt store, scenario, client or planted bug, or a duration that is not
 * a number, is refused before any server starts, instead of a run of nothing that reports 0 violations.
 */
import { describe, expect, it } from 'vitest';
import { ChaosUsageError, parseChaosOptions, type ChaosCatalog } from '../../scripts/chaos-options.js';
import { CLIENTS, type StoreKind } from '../chaos/backend.js';
import { MUTANTS } from '../chaos/mutants.js';
import { SCENARIOS, scenariosFor } from '../chaos/scenarios.js';
import { runsInProcess } from '../chaos/in-process-fleet.js';

const CATALOG: ChaosCatalog = {
  scenarios: {
    ...Object.fromEntries(
      (Object.keys(CLIENTS) as StoreKind[]).map((store) => [store, scenariosFor(store).map((scenario) => scenario.name)]),
    ),
    memory: SCENARIOS.filter(runsInProcess).map((scenario) => scenario.name),
  },
  clients: CLIENTS,
  variants: MUTANTS,
};
const parse = (...argv: string[]) => parseChaosOptions(argv, CATALOG);
const refusal = (...argv: string[]): string => {
  try {
    parse(...argv);
  } catch (error) {
    expect(error).toBeInstanceOf(ChaosUsageError);
    return (error as Error).message;
  }
  throw new Error(`accepted ${argv.join(' ')}`);
};

describe('npm run chaos options', () => {
  it('takes the documented runs', () => {
    expect(parse()).toMatchObject({
      totalMs: 600_000,
      scenarioMs: 30_000,
      stores: ['postgres', 'redis', 'sqlite'],
      scenarios: null,
      clients: undefined,
      variant: null,
      workload: 'leases',
    });
    expect(parse('--workload', 'election')).toMatchObject({ workload: 'election' });
    expect(refusal('--workload', 'mutex')).toMatch(/--workload: unknown "mutex"/);
    expect(parse('--stores', 'redis-cluster')).toMatchObject({ stores: ['redis-cluster'] });
    expect(parse('--stores', 'memory', '--scenarios', 'kleppmann', '--duration', '1.5')).toMatchObject({
      totalMs: 1500,
      scenarios: ['kleppmann'],
    });
    expect(
      parse('--stores', 'postgres,redis', '--clients', 'postgres-js,node-redis', '--variant', 'blind-renew', '--seed', '42', '--keep'),
    ).toMatchObject({
      clients: ['postgres-js', 'node-redis'],
      variant: 'blind-renew',
      seed: '42',
      keep: true,
    });
  });

  it('refuses what would run nothing or something else than asked', () => {
    expect(refusal('--stores', 'memroy')).toContain('unknown "memroy"');
    expect(refusal('--stores', 'memory', '--scenarios', 'kleppman')).toContain('unknown "kleppman"');
    expect(refusal('--stores', 'memory', '--scenarios', 'failover')).toContain('store memory runs none of them');
    expect(refusal('--stores', 'redis', '--clients', 'pg')).toContain('unknown "pg"');
    expect(refusal('--variant', 'unfenced')).toContain('unknown "unfenced"');
    expect(refusal('--duration', 'ten')).toContain('--duration must be a positive number of seconds');
    expect(refusal('--scenario-duration', '0')).toContain('--scenario-duration must be a positive number');
    expect(refusal('--seed', '4294967296')).toContain('--seed must be an integer');
    expect(refusal('--store', 'redis')).toContain("Unknown option '--store'");
  });
});
