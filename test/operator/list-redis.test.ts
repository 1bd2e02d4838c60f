import { makeRedisHarness } from '../adapters/redis-harness.js';
import { describeListSpecs, type ListTraits } from './list-specs.js';

const REDIS: ListTraits = { keyOrder: false, exactLimit: false };

describeListSpecs('redis (ioredis)', makeRedisHarness('ioredis'), 40, REDIS);
describeListSpecs('redis (node-redis)', makeRedisHarness('node-redis'), 20, REDIS);
