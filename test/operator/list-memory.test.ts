import { createMemoryHarness } from '../adapters/memory-harness.js';
import { describeListSpecs } from './list-specs.js';

describeListSpecs('memory', async () => createMemoryHarness(), 300);
