import { describeStoreSuites } from '../../src/testing/index.js';
import { vitestRunner } from '../conformance/vitest-runner.js';
import { makeRedisHarness } from './redis-harness.js';
import { describeRedisAdapterSpecs } from './redis-specs.js';

describeStoreSuites(vitestRunner, 'redis (node-redis 6)', makeRedisHarness('node-redis6'), { modelRuns: 200, raceRuns: 200, workers: 4 });
describeRedisAdapterSpecs('node-redis6');
