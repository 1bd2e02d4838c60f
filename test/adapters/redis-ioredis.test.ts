import { describeStoreSuites } from '../conformance/index.js';
import { makeRedisHarness } from './redis-harness.js';
import { describeRedisAdapterSpecs } from './redis-specs.js';

describeStoreSuites('redis (ioredis)', makeRedisHarness('ioredis'), { modelRuns: 200, raceRuns: 200, workers: 4 });
describeRedisAdapterSpecs('ioredis');
