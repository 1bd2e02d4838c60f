export { createEtcdStore, MAX_ATTEMPTS, type EtcdStore } from './etcd-store.js';
export { DEFAULT_ETCD_PREFIX, type EtcdStoreOptions } from './options.js';
export type {
  EtcdClient,
  EtcdLeaseService,
  EtcdCompare,
  EtcdKeyValue,
  EtcdKv,
  EtcdRangeRequest,
  EtcdRangeResponse,
  EtcdRequestOp,
  EtcdResponseHeader,
  EtcdTxnRequest,
  EtcdTxnResponse,
} from './client.js';
export { MAX_WRITE_OPERATIONS, type EtcdBytes, type EtcdWriteContext } from './write-context.js';
export type { EtcdWatchBuilder, EtcdWatcher } from './freed-watch.js';
