/**
 * The suites' own assertions, so they need no `expect` from the runner: `node:test` + `node:assert` has no
 * partial match like vitest's and jest's `toMatchObject`. Each failure throws node's `AssertionError`, which
 * vitest, jest and `node:test` all report (with a diff of `actual` and `expected`), and its message names
 * the first path where the two differ.
 */
import { AssertionError } from 'node:assert';
import { inspect, isDeepStrictEqual } from 'node:util';

const show = (value: unknown): string => inspect(value, { depth: 4, breakLength: Infinity });

function fail(message: string, actual: unknown, expected: unknown, operator: string): never {
  throw new AssertionError({ message, actual, expected, operator });
}

/** Where `actual` first differs from `expected`, read as a subset (`null` when it matches). */
function firstMismatch(actual: unknown, expected: unknown, path: string): string | null {
  const here = path === '' ? 'the value' : path;
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return `${here}: expected ${show(expected)}, found ${show(actual)}`;
    for (let i = 0; i < expected.length; i += 1) {
      const mismatch = firstMismatch(actual[i], expected[i], `${path}[${i}]`);
      if (mismatch !== null) return mismatch;
    }
    return null;
  }
  if (typeof expected === 'object' && expected !== null) {
    if (typeof actual !== 'object' || actual === null) return `${here}: expected an object like ${show(expected)}, found ${show(actual)}`;
    for (const [name, value] of Object.entries(expected)) {
      const mismatch = firstMismatch((actual as Record<string, unknown>)[name], value, `${path}.${name}`);
      if (mismatch !== null) return mismatch;
    }
    return null;
  }
  return Object.is(actual, expected) ? null : `${here}: expected ${show(expected)}, found ${show(actual)}`;
}

/**
 * `actual` has every property of `expected`, recursively, with the same values (arrays element by
 * element, of the same length); other properties of `actual` are ignored (vitest's `toMatchObject`).
 */
export function expectMatch(actual: unknown, expected: unknown, what = 'outcome'): void {
  const mismatch = firstMismatch(actual, expected, '');
  if (mismatch !== null) fail(`${what} does not match: ${mismatch}`, actual, expected, 'matches');
}

/** `actual` and `expected` are deeply and strictly equal. */
export function expectEqual(actual: unknown, expected: unknown, what = 'value'): void {
  if (!isDeepStrictEqual(actual, expected))
    fail(`${what}: expected ${show(expected)}, found ${show(actual)}`, actual, expected, 'deepStrictEqual');
}

/** `actual` is `expected` (`Object.is`). */
export function expectSame(actual: unknown, expected: unknown, what = 'value'): void {
  if (!Object.is(actual, expected)) fail(`${what}: expected ${show(expected)}, found ${show(actual)}`, actual, expected, 'is');
}

/** `condition` holds; `what` is the condition as it reads in the spec. */
export function expectTrue(condition: boolean, what: string): void {
  if (!condition) fail(`expected ${what}`, condition, true, '==');
}

/** `actual` is within half a thousandth of `expected` (stores with sub-millisecond clocks return fractional ms). */
export function expectClose(actual: number | null | undefined, expected: number, what = 'time'): void {
  if (typeof actual !== 'number' || !(Math.abs(actual - expected) < 0.0005))
    fail(`${what}: expected ${expected} (to 3 decimals), found ${show(actual)}`, actual, expected, 'closeTo');
}

/** `text` does not contain `part` (a secret, for instance). */
export function expectExcludes(text: string, part: string, what = 'text'): void {
  if (text.includes(part)) fail(`${what} contains ${show(part)}`, text, part, 'excludes');
}

/** `value` has no property `name`, own or inherited. */
export function expectNoProperty(value: object | null | undefined, name: string, what = 'value'): void {
  if (value !== null && value !== undefined && name in value) fail(`${what} has a property ${name}`, value, name, 'lacks');
}

/** `promise` rejects with an error whose message contains `part`. */
export async function expectRejects(promise: Promise<unknown>, part: string, what = 'operation'): Promise<void> {
  let settled: { readonly error: unknown } | null = null;
  try {
    await promise;
  } catch (error) {
    settled = { error };
  }
  if (settled === null) fail(`${what} resolved, expected a rejection with ${show(part)}`, undefined, part, 'rejects');
  const message = settled.error instanceof Error ? settled.error.message : String(settled.error);
  if (!message.includes(part)) fail(`${what} rejected with ${show(message)}, expected ${show(part)}`, message, part, 'rejects');
}
