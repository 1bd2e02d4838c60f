/**
 * The etcd adapter as a chaos backend. Workers use the etcd3 client as the docs tell users to (every member a
 * host, a deadline on every unary call: a frozen member must not hang a call), the ledger is one etcd key per
 * entry put inside the fenced transaction (read back in create-revision order, which is commit order), and
 * the gated resource is a row in a SQLite file shared by the run's workers, behind SQLite's token-only gate:
 * data outside etcd, fenced by etcd's tokens. A fenced write holds nothing open in the client (one
 * transaction), so there is no `dieInNextWrite`.
 *
 * The run's "URL": `http://host:port/?gate=<file>` (one member, reachable through a fault proxy) or
 * `etcd-cluster://host:port,host:port,host:port?gate=<file>` (every member of a cluster).
 */
import Database from 'better-sqlite3';
import { Etcd3 } from 'etcd3';
import { createEtcdStore, type EtcdWriteContext } from '../../src/adapters/etcd/index.js';
import { createSqliteTokenGate, type SqliteWriteContext } from '../../src/adapters/sqlite/index.js';
import type { Lease } from '../../src/lease.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import type { Store } from '../../src/store.js';
import { finalKeyState, resourceOf, type StoreAdmin, type WorkerBackend } from './backend.js';

/** The adapter's default prefix (src/adapters/etcd/options.ts): records at `<prefix>lease/<key>`, live keys at `<prefix>live/<key>`. */
const PREFIX = 'leasefence/';
const LEDGER = 'chaos-ledger/';
/** The deadline of every unary call: a call to a frozen member fails after it (and is retried on another member). */
export const ETCD_CALL_DEADLINE_MS = 1500;

/** The URL of a run: the members' client URLs (one: a plain `http://` URL) and the gate's SQLite file. */
export function etcdRunUrl(urls: readonly string[], gateFile: string): string {
  const query = `?gate=${encodeURIComponent(gateFile)}`;
  if (urls.length === 1) return `${urls[0]}/${query}`;
  return `etcd-cluster://${urls.map((url) => new URL(url).host).join(',')}${query}`;
}

/** The members' client URLs and the gate file of a run URL. */
export function parseEtcdRunUrl(url: string): { hosts: string[]; gateFile: string } {
  const [base = '', query = ''] = url.split('?');
  const gateFile = new URLSearchParams(query).get('gate') ?? '';
  if (base.startsWith('etcd-cluster://')) {
    return {
      hosts: base
        .slice('etcd-cluster://'.length)
        .split(',')
        .map((host) => `http://${host}`),
      gateFile,
    };
  }
  return { hosts: [base.replace(/\/$/, '')], gateFile };
}

/** A client over every member with a deadline per unary call (never on watches, which are streams). */
export function etcdClient(hosts: readonly string[], deadlineMs = ETCD_CALL_DEADLINE_MS): Etcd3 {
  return new Etcd3({
    hosts: [...hosts],
    dialTimeout: 2_000,
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + deadlineMs }),
  });
}

export const ledgerPrefix = (key: string): string => `${LEDGER}${key}/`;

/** The key range of every key under `prefix`. */
function prefixRange(prefix: string): { key: Buffer; range_end: Buffer } {
  const key = Buffer.from(prefix, 'utf8');
  const end = Buffer.from(key);
  end[end.length - 1] = (end[end.length - 1] ?? 0) + 1;
  return { key, range_end: end };
}

function openGate(file: string): Database.Database {
  return new Database(file, { timeout: 2_000 });
}

/** Builds the worker's backend. */
export async function createEtcdBackend(url: string): Promise<WorkerBackend> {
  const { hosts, gateFile } = parseEtcdRunUrl(url);
  const client = etcdClient(hosts);
  const store = createEtcdStore({ client });
  const database = openGate(gateFile);
  const gate = createSqliteTokenGate({ client: database });
  return {
    store: store as Store,
    gate: gate as unknown as WorkerBackend['gate'],
    appendUnderFence: (leases: Leases, lease: Lease, entry: string) =>
      leases.fencedWrite(lease, (tx) => {
        // NOTE: the entry names its key: a transaction the client re-sent puts the same key, never a second one.
        (tx as EtcdWriteContext).put(`${ledgerPrefix(lease.key)}${entry}`, entry);
      }),
    appendThroughGate: (leases: Leases, lease: Lease, resource: string, entry: string) =>
      leases.gateWrite(gate as unknown as WorkerBackend['gate'], resource, lease, (tx) => {
        (tx as unknown as SqliteWriteContext).run('INSERT INTO chaos_gate_ledger (resource, entry) VALUES (?, ?)', resource, entry);
      }),
    close: async () => {
      client.close();
      database.close();
    },
  };
}

/**
 * The harness's admin connection: creates the gate's tables, forces expiries by revoking the etcd lease of a
 * grant's live key (etcd's own expiry path: the grant then counts as expired whatever the clocks say),
 * revokes as an operator, reads the end state.
 */
export async function createEtcdAdmin(url: string): Promise<StoreAdmin> {
  const { hosts, gateFile } = parseEtcdRunUrl(url);
  // NOTE: the final read may come right after a leader kill or a quorum regained: a longer deadline.
  const client = etcdClient(hosts, 15_000);
  const store = createEtcdStore({ client });
  const database = openGate(gateFile);
  await createSqliteTokenGate({ client: database }).migrate();
  database.exec(
    'CREATE TABLE IF NOT EXISTS chaos_gate_ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, resource TEXT NOT NULL, entry TEXT NOT NULL)',
  );
  const gated = database.prepare('SELECT entry FROM chaos_gate_ledger WHERE resource = ? ORDER BY id');
  const operator = createLeases(store, { holder: 'chaos-operator' });
  return {
    forceExpire: async (key) => {
      const { kvs } = await client.kv.range({ key: Buffer.from(`${PREFIX}live/${key}`, 'utf8') });
      const lease = kvs[0]?.lease ?? '0';
      if (lease !== '0') await client.leaseClient.leaseRevoke({ ID: lease });
    },
    killConnections: async () => 0,
    revoke: async (key) => (await operator.revoke(key, { reason: 'chaos: operator revoke', by: 'chaos-operator' })).ok,
    readFinal: (keys) =>
      Promise.all(
        keys.map(async (key) => {
          const { kvs } = await client.kv.range({ ...prefixRange(ledgerPrefix(key)), sort_order: 'Ascend', sort_target: 'Create' });
          const ledger = kvs.map((kv) => kv.value.toString('utf8'));
          const gateLedger = (gated.all(resourceOf(key)) as Array<{ entry: string }>).map((row) => row.entry);
          return finalKeyState(key, await store.inspect(key), ledger, gateLedger);
        }),
      ),
    close: async () => {
      client.close();
      database.close();
    },
  };
}
