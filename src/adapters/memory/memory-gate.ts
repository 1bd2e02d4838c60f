import type { GateOutcome } from '../../fence/operations.js';
import type { TokenGate } from '../../gate.js';
import { KeyLock } from './key-lock.js';

/** What a memory gate's write callback receives. */
export interface MemoryGateContext {
  /** The token the write carries, now the resource's highest. */
  readonly token: bigint;
}

/**
 * Creates an in-process token gate: per resource, the highest token that wrote it; older tokens are refused.
 *
 * ```ts
 * const gate = createMemoryTokenGate();
 * const outcome = await gate.write('report.csv', lease, () => fs.writeFileSync('report.csv', rows));
 * ```
 */
export function createMemoryTokenGate(): TokenGate<MemoryGateContext> {
  const highest = new Map<string, { key: string; token: bigint }>();
  const lock = new KeyLock();
  return {
    write: <T>(resource: string, lease: { key: string; token: bigint }, write: (context: MemoryGateContext) => T | Promise<T>) =>
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
      }),
  };
}
