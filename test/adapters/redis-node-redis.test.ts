import { describeStoreSuites } from '../conformance/index.js';
import { makeRedisHarness } from './redis-harness.js';
import { describeRedisAdapterSpecs } from './redis-specs.js';

describeStoreSuites('redis (node-redis)', makeRedisHarness('node-redis'), { modelRuns: 200, raceRuns: 200, workers: 4 });
describeRedisAdapterSpecs('node-redis');
