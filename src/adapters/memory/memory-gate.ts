import type { GateOutcome, GateRecord, GateRefusal, GateResetOptions, GateResetOutcome } from '../../fence/operations.js';
import type { Fence, FenceRefusal } from '../../fence/types.js';
import { gateResetOutcome, readGateResetOptions, type TokenGate } from '../../gate.js';
import type { Store } from '../../store.js';
import { InvalidArgumentError } from '../../errors.js';
import { assertName, describe, readOptions } from '../../validate.js';
import { KeyLock } from './key-lock.js';

/** What a memory gate's write callback receives. */
export interface MemoryGateContext {
  /** The token the write carries, now the resource's highest. */
  readonly token: bigint;
}

/** Options of `createMemoryTokenGate`. */
export interface MemoryTokenGateOptions {
  /**
   * The memory lease store the gate's writers hold their leases in. With it, the gate checks the full fence
   * (token, secret, holder, run, live grant at the store's clock) while the store holds the key's lock,
   * in the same step as the gate check and the write. Without it the gate checks tokens only: a handle
   * restored with a forged token passes (see `TokenGate`).
   * @default undefined (token-only)
   */
  readonly store?: Store;
}

/** The memory token gate: `inspect` and `reset` are always there. */
export interface MemoryTokenGate extends TokenGate<MemoryGateContext> {
  inspect(resource: string): Promise<GateRecord>;
  reset(resource: string, options?: GateResetOptions): Promise<GateResetOutcome>;
}

/** The `store` option: absent, or a store with a `fencedWrite` (checked here, not at the first write). */
function toGateStore(store: unknown): Store | undefined {
  if (store === undefined) return undefined;
  let fencedWrite: unknown;
  try {
    fencedWrite = typeof store === 'object' && store !== null ? (store as Store).fencedWrite : undefined;
  } catch {
    fencedWrite = undefined;
  }
  if (typeof fencedWrite !== 'function')
    throw new InvalidArgumentError(`store must be the memory lease store the gate's writers hold their leases in, got ${describe(store)}`);
  return store as Store;
}

/**
 * Creates an in-process token gate: per resource, the highest token that wrote it; older tokens are refused.
 *
 * ```ts
 * const store = createMemoryStore();
 * const gate = createMemoryTokenGate({ store });
 * const outcome = await leases.gateWrite(gate, 'report.csv', lease, () => fs.writeFileSync('report.csv', rows));
 * ```
 */
export function createMemoryTokenGate(options?: MemoryTokenGateOptions): MemoryTokenGate {
  const store = toGateStore(readOptions('createMemoryTokenGate options', options, ['store']).store);
  const highest = new Map<string, { key: string; token: bigint }>();
  const lock = new KeyLock();

  const gateStep = <T>(resource: string, lease: Fence, write: (context: MemoryGateContext) => T | Promise<T>): Promise<GateOutcome<T>> =>
    lock.run(resource, async (): Promise<GateOutcome<T>> => {
      const seen = highest.get(resource);
      const expected = { key: lease.key, token: lease.token };
      if (seen !== undefined && seen.key !== lease.key) return { ok: false, reason: 'key-mismatch', resource, expected, found: seen };
      if (seen !== undefined && lease.token < seen.token) return { ok: false, reason: 'stale-token', resource, expected, found: seen };
      // NOTE: record the token before running the write: a newer token that arrives while this write runs
      // waits on the lock, and the callback's failure does not lower what was promised to later writers.
      highest.set(resource, expected);
      const value = await write({ token: lease.token });
      return { ok: true, value, token: lease.token };
    });

  const recordOf = (resource: string): GateRecord => ({ resource, found: highest.get(resource) ?? null });

  return {
    write: async <T>(resource: string, lease: Fence, write: (context: MemoryGateContext) => T | Promise<T>): Promise<GateOutcome<T>> => {
      if (store === undefined) return gateStep(resource, lease, write);
      // NOTE: the store checks the fence and keeps the key locked while the gate step runs inside its
      // fenced write: no claim, revoke or expiry judgement can come between the fence check and the write.
      const outcome = await store.fencedWrite(lease, () => gateStep(resource, lease, write));
      // NOTE: a write with no submission whose callback cannot refuse itself: only the fence refuses it.
      if (!outcome.ok) return outcome as FenceRefusal;
      return outcome.value satisfies GateOutcome<T> as GateOutcome<T> | GateRefusal;
    },
    inspect: (resource) => lock.run(resource, () => recordOf(resource)),
    reset: async (resource, options) => {
      assertName('resource', resource);
      const expected = readGateResetOptions(options);
      // NOTE: judged and deleted under the resource's lock: no write can come between the check and the delete.
      return lock.run(resource, () => {
        const outcome = gateResetOutcome(resource, expected, recordOf(resource).found);
        if (outcome.ok) highest.delete(resource);
        return outcome;
      });
    },
  };
}
