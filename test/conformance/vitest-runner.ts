/** The vitest functions the `leasefence/testing` suites register their tests with. */
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { TestRunner } from '../../src/testing/index.js';

/** vitest as a `leasefence/testing` runner. */
export const vitestRunner: TestRunner = { describe, it, beforeAll, afterAll };
