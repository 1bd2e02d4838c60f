/** The options of `createEtcdStore`, and their checks (all before any I/O). */
import { systemClock, type Clock } from '../../clock.js';
import { subscribeTimeoutOf } from '../freed-subscriptions.js';
import { InvalidArgumentError } from '../../errors.js';
import type { StoreTime } from '../../fence/types.js';
import { describe, readOptions } from '../../validate.js';
import { assertEtcdClient, type EtcdClient } from './client.js';

/** Options of `createEtcdStore`. */
export interface EtcdStoreOptions {
  /** Your `etcd3` client (`new Etcd3({ hosts })`), not a namespace of it: see `EtcdClient`. */
  readonly client: EtcdClient;
  /**
   * Prefix of every key the store writes (lease records are `<prefix>lease/<key>`). Fenced writes may not
   * write under it. 1 to 256 characters.
   * @default 'leasefence/'
   */
  readonly prefix?: string;
  /**
   * The clock that decides expiry, in epoch milliseconds: etcd has no clock in a transaction, so the
   * deciding client's clock is the store's (never earlier than the record's last change; see the contract
   * in `etcd-store.ts`). Inject a manual clock in tests.
   * @default Date.now
   */
  readonly clock?: Clock;
  /**
   * How long a waiting claim waits for etcd to confirm the watch on its key before it gives up on the
   * wake-up (it then retries on its schedule only).
   * @default 2_000
   */
  readonly subscribeTimeoutMs?: number;
}

/** The key prefix the store writes under when `prefix` is not given. */
export const DEFAULT_ETCD_PREFIX = 'leasefence/';

/** The largest clock reading accepted, in ms either side of the epoch: the range of a JS `Date`. */
const MAX_CLOCK_MS = 8.64e15;

/** The checked options: the client, the prefix and a clock that refuses readings that are not epoch ms. */
export function readEtcdStoreOptions(options: unknown): {
  client: EtcdClient;
  prefix: string;
  clock: () => StoreTime;
  subscribeTimeoutMs: number;
} {
  if (options === undefined) throw new InvalidArgumentError('createEtcdStore needs options with a client');
  const given = readOptions('createEtcdStore options', options, ['client', 'prefix', 'clock', 'subscribeTimeoutMs']);
  assertEtcdClient(given.client);
  const prefix = given.prefix ?? DEFAULT_ETCD_PREFIX;
  if (typeof prefix !== 'string' || prefix.length === 0 || prefix.length > 256) {
    throw new InvalidArgumentError(`prefix must be a string of 1 to 256 characters, got ${describe(prefix)}`);
  }
  const source = given.clock ?? systemClock;
  if (typeof source !== 'function')
    throw new InvalidArgumentError(`clock must be a function returning epoch milliseconds, got ${describe(source)}`);
  // NOTE: whole milliseconds, like every stored time.
  const clock = (): StoreTime => {
    const reading: unknown = (source as Clock)();
    if (typeof reading !== 'number' || !(Math.abs(reading) <= MAX_CLOCK_MS))
      throw new InvalidArgumentError(`the etcd store's clock returned ${describe(reading)}, not epoch milliseconds`);
    return Math.floor(reading);
  };
  return { client: given.client, prefix, clock, subscribeTimeoutMs: subscribeTimeoutOf(given.subscribeTimeoutMs) };
}
