/**
 * What an etcd fenced write's callback receives: puts and deletes of your keys, recorded while the
 * callback runs and then sent in the one transaction that checks the fence and updates the lease record.
 * They apply together or not at all.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { StoreTime } from '../../fence/types.js';
import { refuseWrite } from '../../write-refusal.js';
import type { EtcdRequestOp } from './client.js';

/** A key or value: text (sent as UTF-8) or bytes. */
export type EtcdBytes = string | Uint8Array;

/** The context of an etcd fenced write. */
export interface EtcdWriteContext {
  /** The lease key. */
  readonly key: string;
  /** The token of the grant the write runs under (store it next to your data to order writers). */
  readonly token: bigint;
  /** The store's now when the fence was checked. */
  readonly now: StoreTime;
  /** Puts `value` at `key` in the fenced transaction. A key may be written once per fenced write. */
  put(key: EtcdBytes, value: EtcdBytes): void;
  /** Deletes `key` in the fenced transaction. */
  delete(key: EtcdBytes): void;
  /**
   * Refuses the write (after reading your own data, with the etcd client): the store answers `write-refused`
   * with this code and sends nothing (none of your puts and deletes, no checkpoint, no submission). Reads
   * made with your client are not part of the fenced transaction: to make the write depend on what you
   * read, refuse on it here and let the fence's transaction carry only what you decided.
   */
  refuse(code: string, detail?: string): never;
}

/** etcd's default limit of operations in one transaction (`--max-txn-ops`), less the lease record's put. */
export const MAX_WRITE_OPERATIONS = 127;

const bytesOf = (what: string, value: unknown): Buffer => {
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new InvalidArgumentError(`an etcd fenced write's ${what} must be a string or a Uint8Array`);
};

/**
 * Records the operations of one fenced write. Refuses, by throwing `InvalidArgumentError` in the callback
 * (so nothing is sent): keys inside the store's own prefix, a key written twice (etcd refuses that in a
 * transaction), more than `MAX_WRITE_OPERATIONS`, and any call after the callback returned.
 */
export class WriteRecorder {
  readonly operations: EtcdRequestOp[] = [];
  #open = true;
  readonly #written = new Set<string>();

  constructor(private readonly reservedPrefix: Buffer) {}

  context(key: string, token: bigint, now: StoreTime): EtcdWriteContext {
    return {
      key,
      token,
      now,
      put: (target, value) => {
        const bytes = this.#claim(target, 'put');
        this.operations.push({ request_put: { key: bytes, value: bytesOf('value', value) } });
      },
      delete: (target) => {
        const bytes = this.#claim(target, 'delete');
        this.operations.push({ request_delete_range: { key: bytes } });
      },
      refuse: refuseWrite,
    };
  }

  /** Ends recording: later calls through the context throw. */
  close(): void {
    this.#open = false;
  }

  #claim(target: unknown, operation: string): Buffer {
    if (!this.#open)
      throw new InvalidArgumentError(`etcd fenced write: ${operation} after the callback returned would run outside the fence`);
    const bytes = bytesOf('key', target);
    if (bytes.length === 0) throw new InvalidArgumentError('etcd fenced write: an empty key');
    if (bytes.subarray(0, this.reservedPrefix.length).equals(this.reservedPrefix)) {
      throw new InvalidArgumentError(
        `etcd fenced write: ${operation} of a key under the store's prefix ${JSON.stringify(this.reservedPrefix.toString('utf8'))} (the lease records live there)`,
      );
    }
    const id = bytes.toString('base64');
    if (this.#written.has(id))
      throw new InvalidArgumentError(
        `etcd fenced write: the key ${JSON.stringify(bytes.toString('utf8'))} is written twice (etcd allows one change per key in a transaction)`,
      );
    if (this.operations.length >= MAX_WRITE_OPERATIONS)
      throw new InvalidArgumentError(`etcd fenced write: more than ${MAX_WRITE_OPERATIONS} operations (etcd's transaction limit)`);
    this.#written.add(id);
    return bytes;
  }
}
