/**
 * The etcd store's harness for the shared suites, on a real single-member etcd started for this test
 * worker (stopped at exit, see etcd-server.ts). Each harness works under its own key prefix; `connect()`
 * opens a new etcd3 client (its own gRPC channel); the ledger is one etcd key per entry, put inside the
 * fenced transaction and read back in commit order; `expireNow` rewrites the grant's stored expires-at
 * to the host clock's now, under a compare of the record's mod revision.
 */
import { Etcd3 } from 'etcd3';
import { randomBytes } from 'node:crypto';
import { createEtcdStore, type EtcdStore } from '../../src/adapters/etcd/index.js';
import type { StoreHarness } from '../../src/testing/index.js';
import { startEtcd, type EtcdServer } from '../support/etcd-server.js';

let ownServer: Promise<EtcdServer> | null = null;

/** The client URL of the etcd member this test worker shares (started on first use, stopped at exit). */
export async function sharedEtcdUrl(): Promise<string> {
  ownServer ??= startEtcd();
  return (await ownServer).url;
}

/** A prefix no other test uses. */
export const freshEtcdPrefix = (label = 'lf'): string => `${label}/${randomBytes(6).toString('hex')}/`;

/** The key range `[start, end)` of every key that starts with `prefix`. */
export function prefixRange(prefix: string): { key: Buffer; range_end: Buffer } {
  const key = Buffer.from(prefix, 'utf8');
  const end = Buffer.from(key);
  let i = end.length - 1;
  while (i >= 0 && end[i] === 0xff) i -= 1;
  end[i] = (end[i] ?? 0) + 1;
  return { key, range_end: end.subarray(0, i + 1) };
}

/** Rewrites the grant of `key`'s record to expire at the host clock's now (no-op without a grant). */
export async function expireEtcdGrant(client: Etcd3, prefix: string, key: string): Promise<void> {
  const name = Buffer.from(`${prefix}lease/${key}`, 'utf8');
  for (;;) {
    const { kvs } = await client.kv.range({ key: name });
    const found = kvs[0];
    if (found === undefined) return;
    const record = JSON.parse(found.value.toString('utf8')) as { grant?: { expiresAt: number | null } | null };
    // NOTE: a removal mark (a removed record, see record.ts) has no grant either.
    if (record.grant === undefined || record.grant === null) return;
    const now = Date.now();
    record.grant.expiresAt = record.grant.expiresAt === null ? now : Math.min(record.grant.expiresAt, now);
    const { succeeded } = await client.kv.txn({
      compare: [{ key: name, target: 'Mod', result: 'Equal', mod_revision: found.mod_revision }],
      success: [{ request_put: { key: name, value: Buffer.from(JSON.stringify(record), 'utf8') } }],
    });
    if (succeeded) return;
  }
}

/** A harness factory: a fresh prefix per harness, one etcd3 client per `connect()`. */
export function makeEtcdHarness(): () => Promise<StoreHarness<EtcdStore>> {
  return async () => {
    const url = await sharedEtcdUrl();
    const prefix = freshEtcdPrefix('lf-etcd');
    const ledgerPrefix = `${prefix.replace(/\/$/, '')}-ledger/`;
    const clients: Etcd3[] = [];
    const open = (): { client: Etcd3; store: EtcdStore } => {
      const client = new Etcd3({ hosts: url });
      clients.push(client);
      return { client, store: createEtcdStore({ client, prefix }) };
    };
    const main = open();
    let keys = 0;
    let entries = 0;
    return {
      store: main.store,
      connect: async () => open().store,
      appendUnderFence: (leases, lease, entry, options) =>
        leases.fencedWrite(
          lease,
          (tx) => tx.put(`${ledgerPrefix}${lease.key}/${String(++entries).padStart(8, '0')}-${randomBytes(4).toString('hex')}`, entry),
          options,
        ),
      fencedAppend: (fence, entry, options, refuse) =>
        main.store.fencedWrite(
          fence,
          (tx) => {
            tx.put(`${ledgerPrefix}${fence.key}/${String(++entries).padStart(8, '0')}-${randomBytes(4).toString('hex')}`, entry);
            // NOTE: etcd sends the transaction after the callback: a refusal after the put sends nothing.
            if (refuse !== undefined) tx.refuse(refuse.code, refuse.detail);
          },
          options,
        ),
      readLedger: async (key) => {
        const { kvs } = await main.client.kv.range({
          ...prefixRange(`${ledgerPrefix}${key}/`),
          sort_order: 'Ascend',
          sort_target: 'Create',
        });
        return kvs.map((kv) => kv.value.toString('utf8'));
      },
      expireNow: (key) => expireEtcdGrant(main.client, prefix, key),
      advanceClock: null,
      freshKey: (label = 'key') => `${label}:${++keys}:${randomBytes(4).toString('hex')}`,
      close: async () => {
        for (const client of clients) client.close();
      },
    };
  };
}
