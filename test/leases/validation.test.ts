/**
 * Invariant 7: bad input is rejected with an InvalidArgumentError (code INVALID_ARGUMENT) before any store
 * access, and leaves every lease as it was.
 */
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createMemoryStore, createMemoryTokenGate } from '../../src/adapters/memory/index.js';
import { InvalidArgumentError, isLeaseError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import type { Lease } from '../../src/lease.js';
import { MAX_TTL_MS } from '../../src/validate.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';
import { mustClaim } from '../conformance/context.js';
import { spyOn } from './spy-store.js';

const KEY = 'job:1';

async function setup() {
  const clock = createManualClock(MEMORY_EPOCH);
  const memory = createMemoryStore({ clock });
  const spy = spyOn(memory);
  const leases = createLeases(spy.store, { holder: 'w1', ttlMs: 10_000 });
  const lease = await mustClaim(leases, KEY, { runId: 'r1', attributes: { model: 'v1' } });
  await leases.checkpoint(lease, { done: 1 });
  const foreign = await mustClaim(createLeases(createMemoryStore({ clock }), { holder: 'w1' }), KEY);
  spy.calls.length = 0;
  return { clock, memory, spy, leases, lease, foreign, gate: createMemoryTokenGate() };
}

type Env = Awaited<ReturnType<typeof setup>>;
type Case = readonly [name: string, act: (env: Env) => unknown];

const cycle: Record<string, unknown> = { name: 'loop' };
cycle['self'] = cycle;
class Progress {
  step = 1;
}

const badKeys: readonly unknown[] = ['', 42, null, undefined, {}, 'a\u0000b', 'k'.repeat(1025), 'job:\uD800', 'job:\uDC00x'];
const badTtls: readonly unknown[] = [0, -1, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5, MAX_TTL_MS + 1, '1000'];
const badCheckpoints: readonly [string, unknown][] = [
  ['undefined', undefined],
  ['a function', () => 1],
  ['a bigint', 10n],
  ['NaN', Number.NaN],
  ['Infinity', Number.POSITIVE_INFINITY],
  ['a Date', new Date(0)],
  ['a Map', new Map([['a', 1]])],
  ['a Set', new Set([1])],
  ['a class instance', new Progress()],
  ['a symbol', Symbol('s')],
  ['a cycle', cycle],
  ['undefined nested in an array', { items: [1, undefined] }],
  ['over the size limit', { blob: 'x'.repeat(70_000) }],
];
const badLeases: readonly [string, (env: Env) => unknown][] = [
  ['a lease from another store', (env) => env.foreign],
  ['a plain copy of a lease', (env) => ({ ...env.lease })],
  ['null', () => null],
  ['a string', () => 'lease'],
];

const cases: Case[] = [
  ...badKeys.map((key): Case => [`claim with key ${String(key).slice(0, 12)}`, (env) => env.leases.claim(key as string)]),
  ...badKeys.map((key): Case => [`inspect with key ${String(key).slice(0, 12)}`, (env) => env.leases.inspect(key as string)]),
  ...badKeys.map(
    (key): Case => [`revoke with key ${String(key).slice(0, 12)}`, (env) => env.leases.revoke(key as string, { reason: 'x' })],
  ),
  ...badTtls.map((ttl): Case => [`claim with ttlMs ${String(ttl)}`, (env) => env.leases.claim('job:2', { ttlMs: ttl as number })]),
  ...badTtls.map((ttl): Case => [`renew with ttlMs ${String(ttl)}`, (env) => env.leases.renew(env.lease, { ttlMs: ttl as number })]),
  ['claim with an empty runId', (env) => env.leases.claim('job:2', { runId: '' })],
  ['claim with a numeric runId', (env) => env.leases.claim('job:2', { runId: 5 as unknown as string })],
  ['claim with attributes in a Map', (env) => env.leases.claim('job:2', { attributes: new Map() as unknown as Record<string, string> })],
  ['claim with a numeric attribute', (env) => env.leases.claim('job:2', { attributes: { model: 5 } as unknown as Record<string, string> })],
  ['claim with an empty attribute name', (env) => env.leases.claim('job:2', { attributes: { '': 'v' } })],
  ['claim with an array of attributes', (env) => env.leases.claim('job:2', { attributes: ['v'] as unknown as Record<string, string> })],
  ...badCheckpoints.map(([name, value]): Case => [`checkpoint of ${name}`, (env) => env.leases.checkpoint(env.lease, value)]),
  ...badCheckpoints
    .filter(([name]) => name !== 'undefined')
    .map(
      ([name, value]): Case => [
        `release with a final checkpoint of ${name}`,
        (env) => env.leases.release(env.lease, { checkpoint: value }),
      ],
    ),
  [
    'checkpoint requiring a numeric attribute',
    (env) => env.leases.checkpoint(env.lease, { a: 1 }, { attributes: { model: 1 } as unknown as Record<string, string> }),
  ],
  ...badLeases.flatMap(([name, pick]): Case[] => [
    [`renew of ${name}`, (env) => env.leases.renew(pick(env) as Lease)],
    [`checkpoint of ${name}`, (env) => env.leases.checkpoint(pick(env) as Lease, { a: 1 })],
    [`fencedWrite of ${name}`, (env) => env.leases.fencedWrite(pick(env) as Lease, () => 1)],
    [`release of ${name}`, (env) => env.leases.release(pick(env) as Lease)],
    [`recover of ${name}`, (env) => env.leases.recover(pick(env) as Lease, 'resume')],
    [`gateWrite of ${name}`, (env) => env.leases.gateWrite(env.gate, 'report.csv', pick(env) as Lease, () => 1)],
  ]),
  ['fencedWrite without a callback', (env) => env.leases.fencedWrite(env.lease, 'write' as unknown as () => number)],
  ['fencedWriteOrThrow without a callback', (env) => env.leases.fencedWriteOrThrow(env.lease, undefined as unknown as () => number)],
  ['revoke without options', (env) => env.leases.revoke(KEY, undefined as unknown as { reason: string })],
  ['revoke without a reason', (env) => env.leases.revoke(KEY, {} as { reason: string })],
  ['revoke with an empty reason', (env) => env.leases.revoke(KEY, { reason: '' })],
  ['revoke with a 4097-character reason', (env) => env.leases.revoke(KEY, { reason: 'r'.repeat(4097) })],
  ['revoke with an empty by', (env) => env.leases.revoke(KEY, { reason: 'x', by: '' })],
  ['revoke with NUL in the reason', (env) => env.leases.revoke(KEY, { reason: 'stuck\u0000' })],
  ['revoke with a lone surrogate in the reason', (env) => env.leases.revoke(KEY, { reason: 'stuck \uD83D' })],
  ['claim with a lone surrogate in the runId', (env) => env.leases.claim('job:2', { runId: 'r\uDFFF' })],
  ['claim with a lone surrogate in an attribute value', (env) => env.leases.claim('job:2', { attributes: { model: 'v\uD800' } })],
  ['revoke with expectedToken 0n', (env) => env.leases.revoke(KEY, { reason: 'x', expectedToken: 0n })],
  ['revoke with a negative expectedToken', (env) => env.leases.revoke(KEY, { reason: 'x', expectedToken: -1n })],
  ['revoke with a numeric expectedToken', (env) => env.leases.revoke(KEY, { reason: 'x', expectedToken: 1 as unknown as bigint })],
  ['recover with an unknown action', (env) => env.leases.recover(env.lease, 'maybe' as 'resume')],
  ['gateWrite with an empty resource', (env) => env.leases.gateWrite(env.gate, '', env.lease, () => 1)],
];

const restoreCases: readonly [string, (env: Env) => unknown][] = [
  ['null', () => null],
  ['a string', () => '{"key":"job:1"}'],
  ['an empty object', () => ({})],
  ['JSON of another store', (env) => env.foreign.export()],
  ['a non-numeric token', (env) => ({ ...env.lease.export(), token: 'abc' })],
  ['token 0', (env) => ({ ...env.lease.export(), token: '0' })],
  ['a negative token', (env) => ({ ...env.lease.export(), token: '-1' })],
  ['a token with a leading zero', (env) => ({ ...env.lease.export(), token: '01' })],
  ['a numeric token', (env) => ({ ...env.lease.export(), token: 1 })],
  ['a short secret', (env) => ({ ...env.lease.export(), secret: 'abc' })],
  ['an upper-case secret', (env) => ({ ...env.lease.export(), secret: env.lease.export().secret.toUpperCase().replace(/[0-9]/g, 'A') })],
  ['an empty holder', (env) => ({ ...env.lease.export(), holder: '' })],
  ['an empty runId', (env) => ({ ...env.lease.export(), runId: '' })],
  ['an expiresAt that is not a number', (env) => ({ ...env.lease.export(), expiresAt: 'soon' })],
  ['a NaN expiresAt', (env) => ({ ...env.lease.export(), expiresAt: Number.NaN })],
  ['a key with NUL', (env) => ({ ...env.lease.export(), key: 'job\u00001' })],
  ['attributes in an array', (env) => ({ ...env.lease.export(), attributes: ['v1'] })],
];
for (const [name, json] of restoreCases) cases.push([`restore of ${name}`, async (env) => env.leases.restore(json(env) as never)]);

async function expectInvalidArgument(act: () => unknown): Promise<void> {
  let thrown: unknown = null;
  try {
    await act();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(InvalidArgumentError);
  expect(isLeaseError(thrown, 'INVALID_ARGUMENT')).toBe(true);
  expect((thrown as InvalidArgumentError).name).toBe('InvalidArgumentError');
}

describe('bad input is refused before any store access and leaves every lease as it was', () => {
  it.each(cases)('%s', async (_name, act) => {
    const env = await setup();
    const before = { held: env.memory.record(KEY), other: env.memory.record('job:2') };
    await expectInvalidArgument(() => act(env));
    expect(env.spy.calls).toEqual([]);
    expect(env.memory.record(KEY)).toBe(before.held);
    expect(env.memory.record('job:2')).toBe(before.other);
    expect(await env.leases.fencedWrite(env.lease, () => 'still held')).toMatchObject({ ok: true, value: 'still held' });
  });

  it.each<[string, (store: ReturnType<typeof createMemoryStore>) => Leases]>([
    ['an empty holder', (store) => createLeases(store, { holder: '' })],
    ['a missing holder', (store) => createLeases(store, {} as { holder: string })],
    ['a default ttlMs of 0', (store) => createLeases(store, { holder: 'w', ttlMs: 0 })],
    ['a default ttlMs of 1.5', (store) => createLeases(store, { holder: 'w', ttlMs: 1.5 })],
    ['a maxCheckpointBytes of 0', (store) => createLeases(store, { holder: 'w', maxCheckpointBytes: 0 })],
    ['a fractional maxCheckpointBytes', (store) => createLeases(store, { holder: 'w', maxCheckpointBytes: 1.5 })],
  ])('createLeases with %s is refused without touching the store', async (_name, make) => {
    const spy = spyOn(createMemoryStore());
    await expectInvalidArgument(() => make(spy.store));
    expect(spy.calls).toEqual([]);
  });

  it('a checkpoint limit set on createLeases is enforced in UTF-8 bytes', async () => {
    const spy = spyOn(createMemoryStore());
    const leases = createLeases(spy.store, { holder: 'w', maxCheckpointBytes: 10 });
    const lease = await mustClaim(leases, KEY);
    spy.calls.length = 0;
    await expectInvalidArgument(() => leases.checkpoint(lease, 'ééééé')); // 12 bytes of JSON
    expect(spy.calls).toEqual([]);
    expect(await leases.checkpoint(lease, 'éééé')).toMatchObject({ ok: true }); // 10 bytes
  });
});
