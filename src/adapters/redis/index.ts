export { createRedisStore, type RedisStore, type RedisStoreOptions } from './redis-store.js';
export { createRedisTokenGate, type RedisTokenGate, type RedisTokenGateOptions } from './redis-gate.js';
export {
  fromIoredis,
  fromNodeRedis,
  fromNodeRedisCluster,
  RedisReplyError,
  type IoredisClient,
  type IoredisOptions,
  type NodeRedisClient,
  type NodeRedisClusterClient,
  type NodeRedisClusterNode,
  type RedisClient,
  type RedisConnection,
} from './connection.js';
export {
  MAX_COMMAND_ARGUMENTS,
  RedisCommandError,
  RedisKey,
  type RedisArgument,
  type RedisWriteContext,
} from './recorder.js';
export type { RedisCondition } from './conditions.js';
export { hashTagOf } from './keys.js';
export type { IoredisSubscriber, NodeRedisSubscriber, RedisSubscriber, RedisSubscriberOption } from './freed-channel.js';
export { RedisCrossSlotError } from './cross-slot.js';
