/**
 * The Redis store's `list`: one `SCAN` step per page over the adapter's own lease records (`MATCH` on
 * the namespace and, where the key names allow, on the lease-key prefix), then the page's records read
 * with the list script, all sent at once (one pipelined round trip; the script masks the secret and sends
 * the checkpoint's size, never its JSON).
 * On a cluster client (ioredis or node-redis), each master is scanned in turn (in address order); the cursor names the master.
 *
 * NOTE: `SCAN` returns every key that exists throughout the iteration; a key may come back twice only if
 * the server's hash table shrinks during it (when keys of the database are deleted: lease records only by
 * `remove`). A key created during the listing may or may not be listed; a removed record's tombstone (no
 * lease) is not listed.
 */
import { InvalidArgumentError } from '../../errors.js';
import * as transitions from '../../fence/transitions.js';
import type { ListedInspection, StoreListPage, StoreListQuery } from '../../list.js';
import { fromNodeRedis, toConnection, type NodeRedisClient, type RedisClient, type RedisConnection } from './connection.js';
import { parseLeaseReply } from './record.js';
import { defineScript, runScript } from './runner.js';
import { REPLY } from './scripts.js';
import { CLOCK, GRANT_LOCALS, GRANT_PARTS, MASKED, SAFE_CHECKPOINT } from './script-parts.js';

/**
 * One listed record. KEYS: record. Replies as the inspect script does (`{ status, lease, ending,
 * checkpoint, recovery, state, hold }`, the secret masked), except that the checkpoint is its header alone
 * (token SEP writtenAt SEP, no JSON) and an eighth element (`REPLY.extras`) is the JSON's size in bytes: the
 * body stays on the server. The queue follows at `REPLY.waiters`, as inspect replies it.
 * ATOMICITY: one script, reads only.
 */
export const LIST_RECORD_SCRIPT: string = `${CLOCK}
local v = redis.call('HMGET', KEYS[1], 'lease', 'ending', 'checkpoint', 'recovery', 'state', 'hold', 'waiters')
local checkpoint = v[3]
${SAFE_CHECKPOINT}
local bytes = 0
if checkpoint and checkpoint ~= '' then
  local c1 = string.find(checkpoint, '\0', 1, true)
  local c2 = string.find(checkpoint, '\0', c1 + 1, true)
  bytes = #checkpoint - c2
  checkpoint = string.sub(checkpoint, 1, c2)
end
v[3] = checkpoint
local lease = v[1]
local s1 = lease and string.find(lease, '\0', 1, true)
${GRANT_LOCALS}
if s1 then
  ${GRANT_PARTS}
  v[1] = ${MASKED}
end
return {'-' .. clock, v[1], v[2], v[3], v[4], v[5], v[6], bytes, v[7]}
`;

const LIST_RECORD = defineScript('list record', LIST_RECORD_SCRIPT);
const NO_ARGS: string[] = [];
const RECORD_SUFFIX = ':lease';

/** Escapes the glob characters of `text` for `SCAN ... MATCH`. */
const glob = (text: string): string => text.replace(/[*?[\]\\]/g, '\\$&');

/** The lease key of a record key name under `namespace` (see `keys.ts`), or `null` when it is not one. */
export function leaseKeyOf(namespace: string, name: string): string | null {
  if (!name.startsWith(`${namespace}{`) || !name.endsWith(RECORD_SUFFIX)) return null;
  const rest = name.slice(namespace.length, -RECORD_SUFFIX.length);
  const close = rest.indexOf('}');
  if (close === rest.length - 1) return rest.slice(1, close);
  return close > 0 && rest[close + 1] === '#' ? rest.slice(close + 2) : null;
}

/**
 * The `MATCH` pattern of a listing: a lease key with `}` is spelled out after `#`, so a prefix with one
 * is matched there; any other prefix may belong to either spelling and is checked on the decoded keys.
 */
export function matchPattern(namespace: string, prefix: string): string {
  return prefix.includes('}') ? `${glob(namespace)}{*}#${glob(prefix)}*${RECORD_SUFFIX}` : `${glob(namespace)}{*${RECORD_SUFFIX}`;
}

/** A master to scan: its address (the cursor names it) and a connection to it. */
interface ScanTarget {
  readonly address: string;
  readonly connection: RedisConnection;
}

/** The parts of an ioredis `Cluster` that listing uses. */
interface IoredisCluster {
  nodes(role: 'master'): Array<RedisClient & { readonly options: { readonly host?: string; readonly port?: number } }>;
}

/** The parts of a node-redis cluster that listing uses. */
interface NodeRedisCluster {
  readonly masters: ReadonlyArray<{ readonly address: string }>;
  nodeClient(node: { readonly address: string }): Promise<NodeRedisClient>;
}

const isIoredisCluster = (client: RedisClient): client is RedisClient & IoredisCluster =>
  typeof (client as Partial<IoredisCluster>).nodes === 'function';
const isNodeRedisCluster = (client: RedisClient): client is RedisClient & NodeRedisCluster =>
  Array.isArray((client as Partial<NodeRedisCluster>).masters) && typeof (client as Partial<NodeRedisCluster>).nodeClient === 'function';

/** The masters to scan, in address order (one target, the client itself, when it is not a cluster). */
async function scanTargets(client: RedisClient, connection: RedisConnection): Promise<ScanTarget[]> {
  let targets: ScanTarget[];
  if (isIoredisCluster(client)) {
    targets = client
      .nodes('master')
      .map((node) => ({ address: `${node.options.host ?? 'localhost'}:${node.options.port ?? 6379}`, connection: toConnection(node) }));
  } else if (isNodeRedisCluster(client)) {
    targets = await Promise.all(
      client.masters.map(async (master) => ({ address: master.address, connection: fromNodeRedis(await client.nodeClient(master)) })),
    );
  } else {
    return [{ address: '', connection }];
  }
  return targets.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
}

/** Splits a cursor `address|scan cursor`. */
function parseCursor(cursor: string | null): { address: string; scan: string } {
  if (cursor === null) return { address: '', scan: '0' };
  const bar = cursor.lastIndexOf('|');
  const scan = cursor.slice(bar + 1);
  if (bar < 0 || !/^\d+$/.test(scan)) throw new InvalidArgumentError('cursor is not a cursor this Redis store returned');
  return { address: cursor.slice(0, bar), scan };
}

/** Builds `list` for the adapter's records under `namespace`. */
export function createRedisList(
  client: RedisClient,
  connection: RedisConnection,
  namespace: string,
): (query: StoreListQuery) => Promise<StoreListPage> {
  return async ({ prefix, limit, cursor }) => {
    const position = parseCursor(cursor);
    const targets = await scanTargets(client, connection);
    // NOTE: the first master at or after the cursor's address (a master that failed over since is skipped).
    const index = targets.findIndex((target) => target.address >= position.address);
    const target = targets[index];
    if (target === undefined) return { leases: [], cursor: null };
    const scan = target.address === position.address ? position.scan : '0';
    const reply = (await target.connection.send(['SCAN', scan, 'MATCH', matchPattern(namespace, prefix), 'COUNT', String(limit)])) as [
      string,
      string[],
    ];
    const [nextScan, names] = reply;
    const keys = [...new Set(names)]
      .map((name) => [name, leaseKeyOf(namespace, name)] as const)
      .filter(([, key]) => key?.startsWith(prefix));
    const replies = await Promise.all(keys.map(([name]) => runScript(connection, LIST_RECORD, [name], NO_ARGS)));
    const leases: ListedInspection[] = [];
    keys.forEach(([, key], at) => {
      const reply = replies[at];
      const { record, now } = parseLeaseReply(reply, key as string, '', 'held', true);
      if (record === null) return;
      const inspection = transitions.inspect(record, key as string, now);
      const { checkpoint } = inspection;
      const bytes = Number((reply as unknown[])[REPLY.extras] ?? 0);
      leases.push({
        ...inspection,
        checkpoint: checkpoint === null ? null : { token: checkpoint.token, writtenAt: checkpoint.writtenAt, bytes },
      });
    });
    leases.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const next =
      nextScan !== '0' ? `${target.address}|${nextScan}` : index + 1 < targets.length ? `${targets[index + 1]?.address}|0` : null;
    return { leases, cursor: next };
  };
}
