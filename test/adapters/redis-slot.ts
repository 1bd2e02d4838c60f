/** Redis Cluster's key slot, for the hash-tag specs (the adapter's own, checked against `CLUSTER KEYSLOT` in test/topology). */
export { clusterSlot } from '../../src/adapters/redis/cross-slot.js';
