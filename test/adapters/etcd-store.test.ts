import { describeStoreSuites } from '../../src/testing/index.js';
import { vitestRunner } from '../conformance/vitest-runner.js';
import { makeEtcdHarness } from './etcd-harness.js';

describeStoreSuites(vitestRunner, 'etcd (etcd3)', makeEtcdHarness(), { modelRuns: 200, raceRuns: 200, workers: 4 });
