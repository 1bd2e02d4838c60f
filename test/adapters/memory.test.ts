import { createMemoryHarness, describeStoreSuites } from '../../src/testing/index.js';
import { vitestRunner } from '../conformance/vitest-runner.js';

describeStoreSuites(vitestRunner, 'memory', async () => createMemoryHarness(), { modelRuns: 2_000, raceRuns: 5_000, workers: 3 });
