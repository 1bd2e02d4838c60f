/**
 * The parts of an etcd v3 client the etcd store uses, typed structurally: the `etcd3` npm client's `kv`
 * service (its raw gRPC calls) fits, and leasefence never imports `etcd3` at run time.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { EtcdWatchBuilder } from './freed-watch.js';

/** An etcd response header: `revision` is the store's revision when the request was applied (a decimal string). */
export interface EtcdResponseHeader {
  readonly revision: string;
}

/** One key-value as etcd returns it (revisions as decimal strings). */
export interface EtcdKeyValue {
  readonly key: Buffer;
  readonly value: Buffer;
  readonly mod_revision: string;
  /** The id of the etcd lease the key is attached to ('0': none). */
  readonly lease: string;
}

/** A range (read) request: linearizable unless `serializable`. */
export interface EtcdRangeRequest {
  key?: Buffer;
  range_end?: Buffer;
  limit?: string | number;
}

/** What a `range` answers: the matching key-values and the header (the store's revision). */
export interface EtcdRangeResponse {
  readonly header: EtcdResponseHeader;
  readonly kvs: readonly EtcdKeyValue[];
  readonly more: boolean;
}

/** A compare of a transaction (`target` 2 = mod revision, `result` 0 = equal: the numbers of etcd's enums). */
export interface EtcdCompare {
  key?: Buffer;
  target?: number;
  result?: number;
  mod_revision?: string | number;
}

/** One operation of a transaction's success branch. */
export interface EtcdRequestOp {
  request_range?: EtcdRangeRequest;
  request_put?: { key?: Buffer; value?: Buffer; lease?: string | number };
  request_delete_range?: { key?: Buffer };
}

/** One etcd transaction: compare, then `success` or `failure` operations, atomically. */
export interface EtcdTxnRequest {
  compare?: EtcdCompare[];
  success?: EtcdRequestOp[];
  failure?: EtcdRequestOp[];
}

/** What a transaction answers: whether the compares held, the responses of the branch it ran, the header. */
export interface EtcdTxnResponse {
  readonly header: EtcdResponseHeader;
  readonly succeeded: boolean;
  /** One per operation of the branch taken (a range's `response_range`). */
  readonly responses?: readonly { readonly response_range?: EtcdRangeResponse | null }[];
}

/** The KV service: `range` and `txn` (the `etcd3` client's `client.kv`). */
export interface EtcdKv {
  /** Reads keys (linearizable unless the request says otherwise). */
  range(request: EtcdRangeRequest): Promise<EtcdRangeResponse>;
  /** Runs one transaction. */
  txn(request: EtcdTxnRequest): Promise<EtcdTxnResponse>;
}

/** The Lease service (the `etcd3` client's `client.leaseClient`): grants the etcd leases that end grants on etcd's timer. */
export interface EtcdLeaseService {
  /** Grants an etcd lease of `TTL` seconds. */
  leaseGrant(request: { TTL?: string | number }): Promise<{ readonly ID: string }>;
  /** Revokes an etcd lease (its keys are deleted). */
  leaseRevoke(request: { ID?: string | number }): Promise<unknown>;
}

/**
 * Your etcd client: an `Etcd3` instance from the `etcd3` package (1.x), or anything with the same `kv`.
 * NOTE: pass the client itself, not `client.namespace(...)`: the raw `kv` service ignores a namespace;
 * use the store's `prefix` option instead.
 */
export interface EtcdClient {
  readonly kv: EtcdKv;
  readonly leaseClient: EtcdLeaseService;
  /** The watch builder (`client.watch()`): with it the store wakes waiting claims on a release (`watchFreed`). */
  watch?(): EtcdWatchBuilder;
}

/** Validates the client before any I/O: an object whose `kv` has `range` and `txn`. */
export function assertEtcdClient(client: unknown): asserts client is EtcdClient {
  let usable: boolean;
  try {
    const { kv, leaseClient } = (client ?? {}) as Partial<EtcdClient>;
    usable =
      typeof kv?.range === 'function' &&
      typeof kv.txn === 'function' &&
      typeof leaseClient?.leaseGrant === 'function' &&
      typeof leaseClient.leaseRevoke === 'function';
  } catch {
    // NOTE: a Proxy or getter that throws is no client either.
    usable = false;
  }
  if (!usable)
    throw new InvalidArgumentError(
      'client must be an etcd3 client (kv with range and txn, leaseClient with leaseGrant and leaseRevoke): `new Etcd3({ hosts })`',
    );
}
