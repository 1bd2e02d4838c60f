import { describeStoreSuites } from '../conformance/index.js';
import { createMemoryHarness } from './memory-harness.js';

describeStoreSuites('memory', async () => createMemoryHarness(), { modelRuns: 2_000, raceRuns: 5_000, workers: 3 });
