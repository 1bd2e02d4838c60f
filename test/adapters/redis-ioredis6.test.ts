import { describeStoreSuites } from '../conformance/index.js';
import { makeRedisHarness } from './redis-harness.js';
import { describeRedisAdapterSpecs } from './redis-specs.js';

describeStoreSuites('redis (ioredis 6)', makeRedisHarness('ioredis6'), { modelRuns: 200, raceRuns: 200, workers: 4 });
describeRedisAdapterSpecs('ioredis6');
