/**
 * The etcd store's `list`: one linearizable read per page over the lease records whose key starts with
 * the query's prefix (`<store prefix>lease/<query prefix>` up to the end of that prefix), from just after
 * the cursor (the last lease key examined), at most `limit` records. etcd orders keys by their bytes, so a
 * prefix's keys are contiguous and each page continues exactly where the last stopped; one range is read
 * at one revision, so every record of a page is as it stood at that revision. The same read-only
 * transaction reads the live keys of the same span (at most `limit`: a live key exists only for a record,
 * so they reach at least as far as the records), so liveness counts etcd's expiry as `inspect` does.
 * (A record deleted by hand leaves its live key until its etcd lease ends; such strays can end the live
 * range early, and a page's last records may then show live grants as expired until they are gone.)
 * A removed record's mark (see `record.ts`) is examined, so it counts toward `limit`, and never listed.
 * The checkpoint's JSON and
 * the secret's hash cross the wire (etcd cannot project a value) but are never returned: a listed
 * checkpoint is its token, time and size.
 */
import * as transitions from '../../fence/transitions.js';
import type { ListedInspection, StoreListPage, StoreListQuery } from '../../list.js';
import { utf8Length } from '../../validate.js';
import type { EtcdKv } from './client.js';
import { readFailure } from './failures.js';
import { liveKeyOf, NO_LIVE_KEY, nowWithEtcdExpiry } from './grant-lease.js';
import { decodeRecord } from './record.js';

/** The first key after every key that starts with `prefix` (etcd's `range_end` of a prefix). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i -= 1) {
    if (end[i]! < 0xff) {
      end[i] = end[i]! + 1;
      return end.subarray(0, i + 1);
    }
  }
  // NOTE: a prefix of 0xff bytes only: etcd's "to the end of the keyspace".
  return Buffer.from([0]);
}

/** Builds `list` over the lease records under `recordsPrefix` (`<store prefix>lease/`). */
export function createEtcdList(
  kv: EtcdKv,
  recordsPrefix: Buffer,
  livePrefix: Buffer,
  now: () => number,
): (query: StoreListQuery) => Promise<StoreListPage> {
  /** The range from just after the cursor (or the prefix's start) to the prefix's end, under `namespace`. */
  const span = (namespace: Buffer, prefix: string, cursor: string | null, limit: number) => {
    const under = Buffer.concat([namespace, Buffer.from(prefix, 'utf8')]);
    // NOTE: just after the cursor's key: the key with a NUL byte appended is the next possible one.
    const start = cursor === null ? under : Buffer.concat([namespace, Buffer.from(cursor, 'utf8'), Buffer.from([0])]);
    return { key: Buffer.compare(start, under) > 0 ? start : under, range_end: prefixEnd(under), limit };
  };
  return async ({ prefix, limit, cursor }) => {
    let response;
    try {
      response = await kv.txn({
        compare: [],
        success: [
          { request_range: span(recordsPrefix, prefix, cursor, limit) },
          { request_range: span(livePrefix, prefix, cursor, limit) },
        ],
        failure: [],
      });
    } catch (error) {
      throw readFailure(error, 'list');
    }
    const records = response.responses?.[0]?.response_range;
    const lives = new Map(
      (response.responses?.[1]?.response_range?.kvs ?? []).map((found) => [
        found.key.subarray(livePrefix.length).toString('utf8'),
        liveKeyOf(found),
      ]),
    );
    const leases: ListedInspection[] = [];
    let last: string | null = null;
    const at = now();
    for (const found of records?.kvs ?? []) {
      const key = found.key.subarray(recordsPrefix.length).toString('utf8');
      last = key;
      const { record, stamp } = decodeRecord(key, found.value);
      // NOTE: a removed record's mark (see record.ts) is no record: examined, not listed.
      if (record === null) continue;
      const inspection = transitions.inspect(record, key, nowWithEtcdExpiry(record, lives.get(key) ?? NO_LIVE_KEY, Math.max(at, stamp)));
      const { checkpoint } = inspection;
      leases.push({
        ...inspection,
        checkpoint:
          checkpoint === null ? null : { token: checkpoint.token, writtenAt: checkpoint.writtenAt, bytes: utf8Length(checkpoint.json) },
      });
    }
    return { leases, cursor: records?.more === true && last !== null ? last : null };
  };
}
