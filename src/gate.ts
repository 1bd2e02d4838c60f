/**
 * A token gate guards a resource that lives outside the lease store (a file, a row in another database,
 * an object in a bucket). It remembers, per resource, the lease key and the highest token that wrote it,
 * and refuses a write carrying an older token: Kleppmann's storage-side check. Equal tokens pass (one
 * grant may write many times). Check and write are atomic in the gate's backend.
 *
 * What a gate can check depends on where it lives:
 * - **In the lease store's backend** (a memory gate bound to the memory store, the Postgres gate with the
 *   Postgres store, the Redis gate with the Redis store), it checks the full fence (token, secret, holder,
 *   run, live grant at the store's clock) in the same atomic step as the gate check and the write. A
 *   forged handle (a guessed token, a wrong secret) is refused with the fence's refusal.
 * - **Anywhere else**, it sees only the key and token: it orders writers but cannot tell a real grant
 *   from a handle restored with a forged token. Such a token, higher than any real one, would lock every
 *   real holder out of the resource (`stale-token`) until an operator `reset`s it. Keep lease handles
 *   (and `lease.export()`) away from untrusted code, or put the gate next to the lease store.
 */
import type { GateOutcome, GateRecord, GateResetOptions, GateResetOutcome } from './fence/operations.js';
import type { Fence } from './fence/types.js';
import { InvalidArgumentError } from './errors.js';
import { assertName, assertToken, readOptions } from './validate.js';

/** A token gate: per resource, the lease key and highest token that wrote it; an older token is refused. */
export interface TokenGate<WriteContext = unknown> {
  /**
   * Applies `write` only if the fence's token is at least the highest token that wrote `resource` for its
   * key (and, for a gate in the lease store's backend, the fence holds), and records the token as the new
   * highest, atomically. A token of another lease key is refused (`key-mismatch`): tokens only order
   * grants of the same key.
   */
  write<T>(resource: string, lease: Fence, write: (context: WriteContext) => T | Promise<T>): Promise<GateOutcome<T>>;

  /** What the gate remembers of `resource`: the key and highest token that wrote it, or `null`. For operators. */
  inspect(resource: string): Promise<GateRecord>;

  /**
   * Forgets `resource` (answers what it forgot), so the next write by any key's current grant binds it
   * again: for operators, to re-key a resource or clear a forged token. Unsafe while an older grant may
   * still write: use it when the resource's writers are stopped or fenced by their lease store. With
   * `expectedToken` (and `expectedKey`), it forgets the resource only if the gate still records that token
   * (and key), in the same atomic step as the delete; otherwise it answers `superseded` with what the gate
   * records, and changes nothing.
   */
  reset(resource: string, options?: GateResetOptions): Promise<GateResetOutcome>;
}

/** What a reset expects the gate to record: a token, and its key (`null`: any key). */
export type GateResetExpectation = { readonly key: string | null; readonly token: bigint };

/**
 * A gate reset's options, checked before any I/O: `null` when the reset expects nothing, else the token
 * (1 to 2^63-1) and key it expects. `expectedKey` without `expectedToken` is refused: a key alone does not
 * say which grant the operator saw.
 */
export function readGateResetOptions(options: unknown): GateResetExpectation | null {
  const given = readOptions('gate reset options', options, ['expectedToken', 'expectedKey']);
  if (given.expectedToken === undefined) {
    if (given.expectedKey !== undefined)
      throw new InvalidArgumentError('gate reset options: expectedKey needs expectedToken (the token the operator saw)');
    return null;
  }
  assertToken('expectedToken', given.expectedToken);
  if (given.expectedKey === undefined) return { key: null, token: given.expectedToken };
  assertName('expectedKey', given.expectedKey);
  return { key: given.expectedKey, token: given.expectedToken };
}

/** Whether the gate's record of a resource is what a reset expects. */
export function resetExpectationHolds(expected: GateResetExpectation, found: GateRecord['found']): boolean {
  return found !== null && found.token === expected.token && (expected.key === null || found.key === expected.key);
}

/** The reset's outcome once judged: what it forgot, or `superseded` with what the gate records. */
export function gateResetOutcome(resource: string, expected: GateResetExpectation | null, found: GateRecord['found']): GateResetOutcome {
  if (expected === null || resetExpectationHolds(expected, found)) return { ok: true, resource, found };
  return { ok: false, reason: 'superseded', resource, expected, found };
}
