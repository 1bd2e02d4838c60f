/**
 * Shared setup of the security specs: a memory store on a manual clock, two holders, a helper that
 * captures what an async call throws, and every way a value can reach a log.
 */
import { inspect } from 'node:util';
import { createManualClock } from '../../src/clock.js';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases } from '../../src/leases.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';
import { spyOn } from '../leases/spy-store.js';

/** A memory store behind a spy (counting store calls), two holders on it, and its manual clock. */
export function securitySetup() {
  const clock = createManualClock(MEMORY_EPOCH);
  const memory = createMemoryStore({ clock });
  const spy = spyOn(memory);
  return {
    clock,
    memory,
    spy,
    a: createLeases(spy.store, { holder: 'a', ttlMs: 1_000 }),
    b: createLeases(spy.store, { holder: 'b', ttlMs: 1_000 }),
  };
}

/** What `act` threw (it must throw). */
export async function thrownBy(act: () => unknown): Promise<unknown> {
  try {
    await act();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw');
}

/** Every text a logger could write for `value`: JSON, util.inspect (deep, with hidden fields), String, a spread copy. */
export function everyLogText(value: unknown): string {
  const texts = [JSON.stringify(value), inspect(value, { depth: 10, showHidden: true }), inspect(value, { depth: 10 })];
  if (typeof value === 'object' && value !== null) texts.push(inspect({ ...value }, { depth: 10, showHidden: true }), String(value));
  if (value instanceof Error) texts.push(String(value.stack), inspect(value.cause, { depth: 10, showHidden: true }));
  return texts.join('\n');
}
