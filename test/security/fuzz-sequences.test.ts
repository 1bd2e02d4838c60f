/**
 * Random interleavings on SEVERAL keys, through the public API, on every store: three holders (each its
 * own `Leases`, one also presenting handles restored from another's export) claim, write, checkpoint,
 * renew, release and revoke three keys. The single-key model suite (`leasefence/testing`) judges every
 * answer of one key exactly; this one checks what it cannot see, across keys and handles:
 * - per key, every granted token is larger than every token granted before (never reused);
 * - a claim is granted only when the key is free, and a held key answers `held` with the holder's token;
 * - a fenced write, checkpoint or renew applies only with the key's current grant; a stale handle is
 *   refused as `superseded` (a newer grant exists), `released` or `revoked`; a release of the grant whose
 *   release is the key's latest ending answers `alreadyReleased`; no stale release ends the current grant;
 * - after every step, each key's grant in the store is the one the model expects (no operation on one key
 *   changes another).
 * No time passes (TTL 60 s). Runs 60 sequences per store (times LEASEFENCE_TEST_SCALE; about 1.5 s in all).
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { Lease } from '../../src/lease.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import type { Store } from '../../src/store.js';
import type { FuzzTarget } from './fuzz-property.js';
import { postgresFuzzTarget, redisFuzzTarget, sqliteFuzzTarget, type Closers } from './fuzz-targets.js';
import { memoryFuzzTarget } from './memory-fuzz-target.js';
import { scaled } from '../support/scale.js';

const RUNS = scaled(60);
const closers: Closers = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

type Step =
  | { readonly op: 'claim'; readonly holder: number; readonly key: number }
  | { readonly op: 'write' | 'checkpoint' | 'renew' | 'release'; readonly handle: number }
  | { readonly op: 'restore'; readonly handle: number; readonly holder: number }
  | { readonly op: 'revoke'; readonly key: number };

const steps: fc.Arbitrary<Step[]> = fc.array(
  fc.oneof(
    { weight: 3, arbitrary: fc.record({ op: fc.constant('claim' as const), holder: fc.nat(2), key: fc.nat(2) }) },
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constantFrom('write' as const, 'checkpoint' as const, 'renew' as const, 'release' as const),
        handle: fc.nat(20),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('restore' as const), handle: fc.nat(20), holder: fc.nat(2) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('revoke' as const), key: fc.nat(2) }) },
  ),
  { minLength: 1, maxLength: 20 },
);

/** What the model knows of one key. */
interface KeyModel {
  /** Every token the store issued for the key (claims and revokes), in order. */
  readonly tokens: bigint[];
  /** The latest claim's token (0n: none yet). */
  latestGrant: bigint;
  /** The current grant's token and holder, or null (free). */
  current: { readonly token: bigint; readonly holder: string } | null;
  /** How each ended grant ended, by token. */
  readonly endings: Map<bigint, 'released' | 'revoked'>;
  /** The key's latest ending (the one the store records): which grant, and how. */
  lastEnding: { readonly token: bigint; readonly kind: 'released' | 'revoked' } | null;
}

/** A handle someone holds: the lease and the `Leases` that presents it. */
interface Held {
  readonly lease: Lease;
  readonly by: Leases<Store>;
}

async function runSequence(target: FuzzTarget, plan: readonly Step[]): Promise<void> {
  const holders = [0, 1, 2].map((index) => createLeases(target.leases.store, { holder: `h${index}`, ttlMs: 60_000 }));
  const keys = [target.freshKey(), target.freshKey(), target.freshKey()];
  const model: KeyModel[] = keys.map(() => ({ tokens: [], latestGrant: 0n, current: null, endings: new Map(), lastEnding: null }));
  const handles: Held[] = [];
  const keyIndex = (lease: Lease): number => keys.indexOf(lease.key);
  for (const [at, step] of plan.entries()) {
    const where = `step ${at} ${JSON.stringify(step)}`;
    if (step.op === 'claim') {
      const key = model[step.key]!;
      const result = await holders[step.holder]!.claim(keys[step.key]!);
      if (key.current !== null) {
        expect(result, where).toMatchObject({ ok: false, reason: 'held', token: key.current.token, holder: key.current.holder });
      } else {
        expect(result.ok, where).toBe(true);
        if (!result.ok) continue;
        const last = key.tokens.at(-1);
        if (last !== undefined) expect(result.lease.token > last, `${where}: token ${result.lease.token} after ${last}`).toBe(true);
        key.tokens.push(result.lease.token);
        key.latestGrant = result.lease.token;
        key.current = { token: result.lease.token, holder: `h${step.holder}` };
        handles.push({ lease: result.lease, by: holders[step.holder]! });
      }
    } else if (step.op === 'revoke') {
      const key = model[step.key]!;
      const result = await target.setup.revoke(keys[step.key]!, { reason: 'fuzz' });
      expect(result.ok, where).toBe(key.current !== null);
      if (result.ok && key.current !== null) {
        // NOTE: a revoke moves the token on: no later grant may reuse it.
        key.tokens.push(result.token);
        key.endings.set(key.current.token, 'revoked');
        key.lastEnding = { token: key.current.token, kind: 'revoked' };
        key.current = null;
      }
    } else {
      const held = handles[step.handle % Math.max(handles.length, 1)];
      if (held === undefined) continue;
      const key = model[keyIndex(held.lease)]!;
      const current = key.current?.token === held.lease.token;
      // NOTE: the reason a stale handle is refused with: a newer grant first, then how its own grant ended.
      const ending = key.endings.get(held.lease.token);
      const stale = held.lease.token < key.latestGrant ? 'superseded' : ending;
      if (step.op === 'restore') {
        handles.push({ lease: holders[step.holder]!.restore(held.lease.export()), by: holders[step.holder]! });
        continue;
      }
      const outcome =
        step.op === 'write'
          ? await held.by.fencedWrite(held.lease, () => 'written')
          : step.op === 'checkpoint'
            ? await held.by.checkpoint(held.lease, { at })
            : step.op === 'renew'
              ? await held.by.renew(held.lease)
              : await held.by.release(held.lease);
      if (current) {
        expect(outcome, where).toMatchObject({ ok: true });
        if (step.op === 'release') {
          key.endings.set(held.lease.token, 'released');
          key.lastEnding = { token: held.lease.token, kind: 'released' };
          key.current = null;
        }
      } else if (step.op === 'release' && key.lastEnding?.token === held.lease.token && key.lastEnding.kind === 'released') {
        // NOTE: release is idempotent for the grant whose release is the key's latest ending (even once a
        // newer grant holds the key); after a later ending it is refused like any stale handle.
        expect(outcome, where).toMatchObject({ ok: true, alreadyReleased: true });
      } else {
        expect(outcome, where).toMatchObject({ ok: false, reason: stale });
      }
    }
    for (const [index, key] of keys.entries()) {
      const { grant } = await target.setup.inspect(key);
      const expected = model[index]!.current;
      expect(grant === null ? null : { token: grant.token, holder: grant.holder }, `${where}: ${key} in the store`).toEqual(expected);
    }
  }
}

describe('fuzz: interleavings on several keys from several holders', () => {
  const stores: Record<string, (closing: Closers) => Promise<FuzzTarget>> = {
    memory: () => memoryFuzzTarget(),
    SQLite: sqliteFuzzTarget,
    Postgres: postgresFuzzTarget,
    Redis: redisFuzzTarget,
  };
  for (const [name, make] of Object.entries(stores)) {
    it(
      `${name}: tokens grow per key, only the current grant writes, stale handles get the right reason, keys stay apart (${RUNS} runs)`,
      async () => {
        const target = await make(closers);
        await fc.assert(
          fc.asyncProperty(steps, (plan) => runSequence(target, plan)),
          { numRuns: RUNS },
        );
      },
      60_000 + RUNS * 1_000,
    );
  }
});
