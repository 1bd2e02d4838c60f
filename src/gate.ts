/**
 * A token gate guards a resource that lives outside the lease store (a file, a row in another database,
 * an object in a bucket). It remembers, per resource, the lease key and the highest token that wrote it,
 * and refuses a write carrying an older token: Kleppmann's storage-side check. Equal tokens pass (one
 * grant may write many times). Check and write are atomic in the gate's backend.
 */
import type { GateOutcome } from './fence/operations.js';

export interface TokenGate<WriteContext = unknown> {
  /**
   * Applies `write` only if `token` is at least the highest token that wrote `resource` for `key`, and
   * records `token` as the new highest, atomically. A token of another lease key is refused
   * (`key-mismatch`): tokens only order grants of the same key.
   */
  write<T>(resource: string, lease: { readonly key: string; readonly token: bigint }, write: (context: WriteContext) => T | Promise<T>): Promise<GateOutcome<T>>;
}
