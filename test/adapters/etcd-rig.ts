/**
 * An etcd store for adapter-only tests: the test worker's shared etcd member, a fresh prefix, a manual
 * clock (or the host clock), and the raw etcd3 client to look at what etcd holds.
 */
import { Etcd3 } from 'etcd3';
import { createManualClock, type ManualClock } from '../../src/clock.js';
import {
  createEtcdStore,
  type EtcdClient,
  type EtcdStore,
  type EtcdTxnRequest,
  type EtcdTxnResponse,
} from '../../src/adapters/etcd/index.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { freshEtcdPrefix, prefixRange, sharedEtcdUrl } from './etcd-harness.js';

/** A fixed start for manual clocks: 2024-01-01T00:00:00Z. */
export const ETCD_EPOCH = 1_704_067_200_000;

export interface EtcdRig {
  readonly url: string;
  readonly prefix: string;
  readonly client: Etcd3;
  readonly clock: ManualClock;
  readonly store: EtcdStore;
  leasesFor(holder: string, ttlMs?: number, store?: EtcdStore): Leases<EtcdStore>;
  /** Another store on the same prefix, over `client` (default: a new etcd3 client), with its own `clock`. */
  storeWith(options: { client?: EtcdClient; clock?: () => number }): EtcdStore;
  /** The values under `<ledger prefix><key>/`, in commit order. */
  read(prefix: string): Promise<string[]>;
  /** The raw value at `key`, or `null`. */
  get(key: string): Promise<string | null>;
  /** The record key's mod revision ('0' when absent). */
  modRevision(leaseKey: string): Promise<bigint>;
  close(): void;
}

/** A client over `real` whose writing transactions (those with compares; reads have none) go through `txn`. */
export const intercepted = (
  real: EtcdClient,
  txn: (request: EtcdTxnRequest, send: (request: EtcdTxnRequest) => Promise<EtcdTxnResponse>) => Promise<EtcdTxnResponse>,
): EtcdClient => ({
  kv: {
    range: (request) => real.kv.range(request),
    txn: (request) => ((request.compare ?? []).length === 0 ? real.kv.txn(request) : txn(request, (again) => real.kv.txn(again))),
  },
  leaseClient: real.leaseClient,
});

/** The etcd lease's TTL once it is revoked (-1), or its last TTL after 5 s (a revoke sent after the commit, unawaited). */
export async function ttlOnceRevoked(r: EtcdRig, lease: string | number): Promise<number> {
  let ttl = 0;
  for (const deadline = Date.now() + 5_000; Date.now() < deadline; ) {
    ttl = Number((await r.client.leaseClient.leaseTimeToLive({ ID: lease })).TTL);
    if (ttl === -1) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return ttl;
}

export async function openEtcdRig(options: { hostClock?: boolean } = {}): Promise<EtcdRig> {
  const url = await sharedEtcdUrl();
  const prefix = freshEtcdPrefix('lf-rig');
  const clients: Etcd3[] = [];
  const newClient = (): Etcd3 => {
    const client = new Etcd3({ hosts: url });
    clients.push(client);
    return client;
  };
  const client = newClient();
  const clock = createManualClock(ETCD_EPOCH);
  const store = createEtcdStore({ client, prefix, ...(options.hostClock === true ? {} : { clock }) });
  return {
    url,
    prefix,
    client,
    clock,
    store,
    leasesFor: (holder, ttlMs = 10_000, on = store) => createLeases(on, { holder, ttlMs }),
    storeWith: (given) => createEtcdStore({ client: given.client ?? newClient(), prefix, clock: given.clock ?? clock }),
    read: async (under) =>
      (await client.kv.range({ ...prefixRange(under), sort_order: 'Ascend', sort_target: 'Create' })).kvs.map((kv) =>
        kv.value.toString('utf8'),
      ),
    get: async (key) => (await client.kv.range({ key: Buffer.from(key, 'utf8') })).kvs[0]?.value.toString('utf8') ?? null,
    modRevision: async (leaseKey) =>
      BigInt((await client.kv.range({ key: Buffer.from(`${prefix}lease/${leaseKey}`, 'utf8') })).kvs[0]?.mod_revision ?? '0'),
    close: () => {
      for (const opened of clients) opened.close();
    },
  };
}
