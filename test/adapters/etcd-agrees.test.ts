/**
 * The etcd store answers #24's operations exactly as the memory store (the reference implementation of the
 * pure transitions) does: random sequences of claims with `expect`, releases with `holdMs`, `setKeyState`,
 * `remove`, renews, revokes, fenced writes with submissions and refusals, inspections and clock steps, waiting
 * claims (with a queue's waiter ids, or jumping it) and dequeues, run on both with the same manual clock; every
 * outcome equal. Tokens differ by design (etcd mints from its
 * revision), so each is compared as the step that minted it (a claim or a revoke).
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import type { SubmissionCommand } from '../../src/fence/operations.js';
import type { Fence } from '../../src/fence/types.js';
import { newSecret } from '../../src/secret.js';
import type { Store } from '../../src/store.js';
import { NO_ATTRIBUTES } from '../../src/validate.js';
import { openEtcdRig, type EtcdRig } from './etcd-rig.js';

let rig: EtcdRig | null = null;
afterEach(() => {
  rig?.close();
  rig = null;
});

const HOLDERS = ['a', 'b'] as const;
/** Long enough in manual time that etcd's own timer (real seconds) never ends a grant during a run. */
const TTL_MS = 600_000;

type Step =
  | {
      kind: 'claim';
      key: number;
      holder: number;
      expect: Record<string, string | null> | null;
      wait: string[] | null;
      waitTtlMs: number;
      jumpQueue: boolean;
    }
  | { kind: 'dequeue'; key: number; waiterIds: string[] }
  | { kind: 'release'; key: number; holder: number; holdMs: number | null }
  | { kind: 'renew'; key: number; holder: number }
  | { kind: 'set'; key: number; values: Record<string, string | null>; holdMs: number | null | undefined }
  | { kind: 'remove'; key: number; force: boolean; expectCurrent: boolean }
  | { kind: 'revoke'; key: number }
  | { kind: 'write'; key: number; holder: number; runId: string | null; payload: string; bind: boolean; refuse: boolean }
  | { kind: 'inspect'; key: number }
  | { kind: 'advance'; ms: number };

const value = fc.constantFrom('1', '2', null);
const values = fc.dictionary(fc.constantFrom('rev', 'tier'), value, { maxKeys: 2 });
// NOTE: mostly one key and one holder, so that writes, replays and releases meet the grants they concern.
const key = fc.constantFrom(0, 0, 0, 1);
const holder = fc.constantFrom(0, 0, 0, 1);
/** Waiter ids of a waiting claim (the claimant first) or a dequeue: few, so that queues meet their own waiters again. */
const waiterIds = fc.uniqueArray(fc.constantFrom('q1', 'q2', 'q3'), { minLength: 1, maxLength: 3 });
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('claim' as const),
      key,
      holder,
      expect: fc.oneof({ weight: 2, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: values }),
      wait: fc.option(waiterIds, { nil: null, freq: 3 }),
      waitTtlMs: fc.constantFrom(1_000, 5_000),
      jumpQueue: fc.constantFrom(false, false, false, true),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('dequeue' as const), key, waiterIds }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      key,
      holder,
      holdMs: fc.option(fc.constantFrom(0, 1_000, 5_000), { nil: null }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('renew' as const), key, holder }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('set' as const),
      key,
      values,
      holdMs: fc.constantFrom(undefined, null, 0, 2_000),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), key, force: fc.boolean(), expectCurrent: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('revoke' as const), key }) },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('write' as const),
      key,
      holder,
      runId: fc.option(fc.constantFrom('r1', 'r1', 'r2'), { nil: null, freq: 4 }),
      payload: fc.constantFrom('p', 'p', 'q'),
      bind: fc.boolean(),
      refuse: fc.constantFrom(false, false, false, true),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('inspect' as const), key }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.constantFrom(500, 2_000, TTL_MS) }) },
);

/** One store's side of a run: its fences per (key, holder), and its tokens by the step that minted them. */
class Side {
  readonly fences = new Map<string, Fence>();
  /** Per key: token -> the step that minted it (stores may mint equal tokens for different keys). */
  readonly ordinals = new Map<string, Map<bigint, number>>();
  constructor(readonly store: Store<{ refuse(code: string, detail?: string): never }>) {}

  onMint: (token: bigint) => void = () => undefined;

  minted(key: string, token: bigint, step: number): void {
    this.onMint(token);
    const tokens = this.ordinals.get(key) ?? new Map<bigint, number>();
    this.ordinals.set(key, tokens);
    if (tokens.has(token)) throw new Error(`${key}: token ${token} minted again at step ${step} (first at step ${tokens.get(token)})`);
    tokens.set(token, step);
  }

  /** `outcome` (of one key) with each token replaced by `g<step that minted it>` (0n stays 0: a record no grant made). */
  normal(outcome: unknown, key: string): unknown {
    const tokens = this.ordinals.get(key) ?? new Map<bigint, number>();
    return JSON.parse(
      JSON.stringify(outcome, (_, v: unknown) => {
        if (typeof v !== 'bigint') return v;
        if (v === 0n) return '0';
        const ordinal = tokens.get(v);
        return ordinal === undefined ? `unknown ${v}` : `g${ordinal}`;
      }),
    );
  }
}

/** What both sides of one step share: the run's key names, the claim's secret, the grant's ordinal. */
interface Shared {
  readonly keys: readonly string[];
  readonly secret: string;
  readonly ordinal: number;
}

async function apply(side: Side, step: Step, { keys: KEYS, secret, ordinal }: Shared): Promise<unknown> {
  const { store } = side;
  const fenceOf = (k: number, h: number) => side.fences.get(`${k}/${h}`);
  switch (step.kind) {
    case 'claim': {
      const name = `${step.key}/${step.holder}`;
      const outcome = await store.claim({
        key: KEYS[step.key]!,
        secret,
        holder: HOLDERS[step.holder]!,
        runId: null,
        ttlMs: TTL_MS,
        attributes: NO_ATTRIBUTES,
        recovering: false,
        ...(step.expect === null ? {} : { expect: step.expect }),
        ...(step.wait === null ? {} : { queue: { waiterIds: step.wait, ttlMs: step.waitTtlMs } }),
        ...(step.jumpQueue ? { jumpQueue: true } : {}),
      });
      if (outcome.ok) {
        side.minted(outcome.key, outcome.token, ordinal);
        side.fences.set(name, { key: KEYS[step.key]!, token: outcome.token, secret, holder: HOLDERS[step.holder]!, runId: null });
      }
      return outcome;
    }
    case 'dequeue':
      return store.dequeue({ key: KEYS[step.key]!, waiterIds: step.waiterIds });
    case 'release': {
      const fence = fenceOf(step.key, step.holder);
      if (fence === undefined) return 'no fence';
      return store.release({ fence, ...(step.holdMs === null ? {} : { holdMs: step.holdMs }) });
    }
    case 'renew': {
      const fence = fenceOf(step.key, step.holder);
      return fence === undefined ? 'no fence' : store.renew({ fence, ttlMs: TTL_MS });
    }
    case 'set':
      return store.setKeyState({
        key: KEYS[step.key]!,
        values: step.values,
        by: 'ops',
        ...(step.holdMs === undefined ? {} : { holdMs: step.holdMs }),
      });
    case 'remove': {
      const current = step.expectCurrent ? (await store.inspect(KEYS[step.key]!)).token : null;
      return store.remove({ key: KEYS[step.key]!, force: step.force, expectedToken: current });
    }
    case 'revoke': {
      const outcome = await store.revoke({ key: KEYS[step.key]!, reason: 'test', by: 'ops', requireRecovery: false, expectedToken: null });
      // NOTE: a revoke moves the token past the revoked grant's.
      if (outcome.ok) side.minted(outcome.key, outcome.token, ordinal);
      return outcome;
    }
    case 'write': {
      const fence = fenceOf(step.key, step.holder);
      if (fence === undefined) return 'no fence';
      const submission: SubmissionCommand | undefined =
        step.runId === null
          ? undefined
          : { runId: step.runId, digest: step.payload.repeat(64).slice(0, 64), receiptJson: `"${step.payload}"`, bindToGrant: step.bind };
      return store.fencedWrite(
        fence,
        (context) => {
          if (step.refuse) context.refuse('no-owner', 'the owner is inactive');
          return 'written';
        },
        submission === undefined ? {} : { submission },
      );
    }
    case 'inspect':
      return store.inspect(KEYS[step.key]!);
    case 'advance':
      return 'advanced';
  }
}

describe('etcd agrees with the memory store on #24 operations', () => {
  it('every outcome of random sequences equal (tokens as the step that minted them)', async () => {
    const r = await openEtcdRig();
    rig = r;
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 40, size: 'max' }), async (steps) => {
        run += 1;
        // NOTE: the floor makes the memory store mint above every token it issued for any key. Its own
        // store-wide floor (core24, 3b14e18) passes `highestToken` itself as the floor, which `mintToken` may
        // return: a key removed and claimed again gets that token again (reported to the lead).
        let highest = 0n;
        const memory = new Side(createMemoryStore({ clock: r.clock, tokenFloor: () => highest + 1n }) as never);
        memory.onMint = (token) => {
          if (token > highest) highest = token;
        };
        const etcd = new Side(r.storeWith({ client: r.client }) as never);
        // NOTE: keys of their own per run on the shared etcd prefix.
        const keys = [`run${run}:k0`, `run${run}:k1`];
        for (const [index, step] of steps.entries()) {
          if (step.kind === 'advance') {
            r.clock.advance(step.ms);
            continue;
          }
          const shared: Shared = { keys, secret: newSecret(), ordinal: index };
          const expected = memory.normal(await apply(memory, step, shared), keys[step.key]!);
          const found = etcd.normal(await apply(etcd, step, shared), keys[step.key]!);
          expect(found, `step ${index} ${JSON.stringify(step)}`).toEqual(expected);
        }
      }),
      { numRuns: 100 },
    );
  }, 120_000);
});
