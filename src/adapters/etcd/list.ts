/**
 * The etcd store's `list`: one linearizable range per page over the lease records whose key starts with
 * the query's prefix (`<store prefix>lease/<query prefix>` up to the end of that prefix), from just after
 * the cursor (the last lease key examined), at most `limit` records. etcd orders keys by their bytes, so a
 * prefix's keys are contiguous and each page continues exactly where the last stopped; one range is read
 * at one revision, so every record of a page is as it stood at that revision. The checkpoint's JSON and
 * the secret's hash cross the wire (etcd cannot project a value) but are never returned: a listed
 * checkpoint is its token, time and size.
 */
import * as transitions from '../../fence/transitions.js';
import type { ListedInspection, StoreListPage, StoreListQuery } from '../../list.js';
import { utf8Length } from '../../validate.js';
import type { EtcdKv } from './client.js';
import { readFailure } from './failures.js';
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
export function createEtcdList(kv: EtcdKv, recordsPrefix: Buffer, now: () => number): (query: StoreListQuery) => Promise<StoreListPage> {
  return async ({ prefix, limit, cursor }) => {
    const under = Buffer.concat([recordsPrefix, Buffer.from(prefix, 'utf8')]);
    // NOTE: just after the cursor's key: the key with a NUL byte appended is the next possible one.
    const start = cursor === null ? under : Buffer.concat([recordsPrefix, Buffer.from(cursor, 'utf8'), Buffer.from([0])]);
    let response;
    try {
      response = await kv.range({ key: Buffer.compare(start, under) > 0 ? start : under, range_end: prefixEnd(under), limit });
    } catch (error) {
      throw readFailure(error, 'list');
    }
    const leases: ListedInspection[] = [];
    let last: string | null = null;
    const at = now();
    for (const found of response.kvs) {
      const key = found.key.subarray(recordsPrefix.length).toString('utf8');
      last = key;
      const { record, stamp } = decodeRecord(key, found.value);
      const inspection = transitions.inspect(record, key, Math.max(at, stamp));
      const { checkpoint } = inspection;
      leases.push({ ...inspection, checkpoint: checkpoint === null ? null : { token: checkpoint.token, writtenAt: checkpoint.writtenAt, bytes: utf8Length(checkpoint.json) } });
    }
    return { leases, cursor: response.more && last !== null ? last : null };
  };
}
