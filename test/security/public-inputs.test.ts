/**
 * The fuzzer's audit of the inputs `fuzz-property.ts` does not reach: the factories (`createLeases`,
 * `createOperator`, `createMemoryStore`, `createMemoryTokenGate`), the operator's own methods, and a real
 * handle whose public view was given throwing getters. Each hostile input gets INVALID_ARGUMENT before any
 * store call, never the raw TypeError or the getter's own error.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryStore, createMemoryTokenGate } from '../../src/adapters/memory/index.js';
import { isLeaseError, isLeaseLostError, isStoreFailure } from '../../src/errors.js';
import { toLoggable } from '../../src/loggable.js';
import type { Lease } from '../../src/lease.js';
import { createLeases } from '../../src/leases.js';
import { createOperator } from '../../src/operator.js';
import type { Store } from '../../src/store.js';
import { spyOn } from '../leases/spy-store.js';
import { thrownBy } from './setup.js';

const throwingGetter = (name: string, fields: object = {}): object =>
  Object.defineProperty({ ...fields }, name, {
    enumerable: true,
    get: () => {
      throw new Error(`getter ${name}`);
    },
  });
const throwingProxy = (): object =>
  new Proxy(
    {},
    {
      get: () => {
        throw new Error('proxy get');
      },
      ownKeys: () => {
        throw new Error('proxy ownKeys');
      },
    },
  );

/** A memory store behind a spy that also counts `list`. */
function spiedStore() {
  const spy = spyOn(createMemoryStore());
  const store: Store = Object.assign(Object.create(spy.store) as Store, {
    list: (query: Parameters<NonNullable<Store['list']>>[0]) => {
      spy.calls.push('list');
      return spy.store.list!(query);
    },
  });
  return { store, calls: spy.calls };
}

/** Asserts `act` throws (or rejects with) INVALID_ARGUMENT and `calls` stayed empty. */
async function refused(calls: readonly string[], act: () => unknown): Promise<void> {
  const error = await thrownBy(act);
  if (!isLeaseError(error, 'INVALID_ARGUMENT')) throw new Error(`expected INVALID_ARGUMENT, got ${String(error)}`, { cause: error });
  expect(calls).toEqual([]);
}

describe('factories refuse what is not their input with INVALID_ARGUMENT', () => {
  it('createLeases and createOperator need a Store: null, {}, a store missing an operation, a throwing Proxy', async () => {
    const memory = createMemoryStore();
    const { claim: _claim, ...noClaim } = memory;
    for (const store of [null, undefined, 5, {}, { id: '' }, noClaim, throwingProxy()]) {
      await refused([], () => createLeases(store as never, { holder: 'h' }));
      await refused([], () => createOperator(store as never));
    }
  });

  it('createOperator: null, throwing or Proxy options; a gate without inspect and reset', async () => {
    const { store, calls } = spiedStore();
    for (const options of [
      null,
      5,
      throwingGetter('by'),
      throwingProxy(),
      { by: '' },
      { gate: {} },
      { gate: 5 },
      { gate: throwingGetter('inspect') },
    ]) {
      await refused(calls, () => createOperator(store, options as never));
    }
  });

  it('createMemoryStore and createMemoryTokenGate: null options, a clock or tokenFloor that is no function or reads wrong', async () => {
    for (const options of [null, 5, throwingProxy(), { clock: 'x' }, { tokenFloor: 5 }])
      await refused([], () => createMemoryStore(options as never));
    for (const options of [null, throwingProxy(), { store: 5 }, { store: {} }])
      await refused([], () => createMemoryTokenGate(options as never));
    // NOTE: a NaN now would grant a lease that never expires; a number floor would mix with bigint tokens.
    const nanClock = createMemoryStore({ clock: () => Number.NaN });
    await refused([], () => createLeases(nanClock, { holder: 'h' }).claim('job:1'));
    const numberFloor = createMemoryStore({ tokenFloor: (() => 5) as never });
    await refused([], () => createLeases(numberFloor, { holder: 'h' }).claim('job:1'));
    expect(numberFloor.record('job:1')).toBeNull();
  });
});

describe('the operator refuses hostile queries and options before any store call', () => {
  it('list and listAll: null, a number, throwing getters, Proxies; states of a bigint, a throwing toJSON, a throwing array', async () => {
    const { store, calls } = spiedStore();
    const operator = createOperator(store);
    const states = [
      [1n],
      [
        {
          toJSON: () => {
            throw new Error('toJSON');
          },
        },
      ],
      new Proxy(['live'], {
        get: () => {
          throw new Error('trap');
        },
      }),
    ]; // prettier-ignore
    const queries = [
      null,
      5,
      throwingGetter('prefix'),
      throwingGetter('states'),
      throwingProxy(),
      {
        limit: {
          toString: () => {
            throw new Error('toString');
          },
        },
      },
      ...states.map((value) => ({ states: value })),
    ]; // prettier-ignore
    for (const query of queries) {
      await refused(calls, () => operator.list(query as never));
      await refused(calls, async () => {
        for await (const listed of operator.listAll(query as never)) void listed;
      });
    }
  });

  it('revoke: throwing getters and Proxies as options', async () => {
    const { store, calls } = spiedStore();
    const operator = createOperator(store);
    for (const options of [
      throwingProxy(),
      throwingGetter('reason'),
      throwingGetter('by', { reason: 'stuck' }),
      throwingGetter('expectedToken', { reason: 'stuck' }),
    ]) {
      await refused(calls, () => operator.revoke('job:1', options as never));
    }
  });

  it('remove and setKeyState: throwing getters and Proxies as options and values; bad holds, tokens and values', async () => {
    const { store, calls } = spiedStore();
    const operator = createOperator(store);
    for (const options of [
      null,
      5,
      throwingProxy(),
      throwingGetter('force'),
      throwingGetter('expectedToken'),
      { force: 1 },
      { expectedToken: 1 },
    ]) {
      await refused(calls, () => operator.remove('job:1', options as never));
    }
    for (const values of [
      null,
      5,
      [],
      throwingProxy(),
      throwingGetter('tier'),
      { tier: 4 },
      { tier: '' },
      { '': 'x' },
      { tier: 'a\u0000' },
      new Map(),
    ]) {
      await refused(calls, () => operator.setKeyState('job:1', values as never));
    }
    for (const options of [
      throwingProxy(),
      throwingGetter('holdMs'),
      throwingGetter('by'),
      { holdMs: -1 },
      { holdMs: Number.NaN },
      { by: '' },
    ]) {
      await refused(calls, () => operator.setKeyState('job:1', { tier: '3' }, options as never));
    }
  });
});

describe('a handle with throwing getters on its public view is a tampered handle', () => {
  it('a real handle with a throwing key, storeId or ttlMs getter; another copy’s handle whose fence or storeId throws', async () => {
    const { store, calls } = spiedStore();
    const leases = createLeases(store, { holder: 'h' });
    const lease = await leases.claimOrThrow('job:1');
    calls.length = 0;
    for (const name of ['key', 'token', 'storeId', 'ttlMs']) {
      const tampered = Object.defineProperty(leases.restore(lease.export()), name, {
        get: () => {
          throw new Error(`getter ${name}`);
        },
      }); // prettier-ignore
      await refused(calls, () => leases.renew(tampered));
    }
    // NOTE: a handle of another copy of the package is recognised by its brand and read through `fence()`.
    const brand = Symbol.for('leasefence.Lease');
    const otherCopy = (fields: object): Lease =>
      Object.assign(Object.create(null) as object, { [brand]: true, storeId: store.id }, fields) as unknown as Lease;
    const goodFence = lease.fence();
    await refused(calls, () => leases.renew(otherCopy({ fence: () => throwingGetter('secret', { key: 'job:1' }) })));
    await refused(calls, () =>
      leases.release(
        otherCopy({
          fence: () => goodFence,
          storeId: {
            toString: () => {
              throw new Error('toString');
            },
          },
        }),
      ),
    ); // prettier-ignore
    expect((await leases.inspect('job:1')).grant).toMatchObject({ token: lease.token });
  });
});

describe('the error guards never throw', () => {
  it('isLeaseError, isLeaseLostError and isStoreFailure answer false for a revoked Proxy or one that throws on every read', () => {
    const { proxy: revoked, revoke } = Proxy.revocable({}, {});
    revoke();
    for (const thrown of [revoked, throwingProxy()]) {
      expect(isLeaseError(thrown)).toBe(false);
      expect(isLeaseError(thrown, 'LEASE_LOST')).toBe(false);
      expect(isLeaseLostError(thrown)).toBe(false);
      expect(isStoreFailure(thrown)).toBe(false);
    }
  });
});

describe('toLoggable never throws', () => {
  it('a throwing getter or Proxy is logged as unreadable, the rest as usual, secrets redacted', () => {
    const { proxy: revoked, revoke } = Proxy.revocable({}, {});
    revoke();
    const value = { token: 7n, secret: 'f'.repeat(32), broken: throwingGetter('field'), proxy: throwingProxy(), revoked, items: [revoked] };
    Object.defineProperty(value, 'getter', {
      enumerable: true,
      get: () => {
        throw new Error('getter');
      },
    }); // prettier-ignore
    expect(JSON.parse(JSON.stringify(toLoggable(value)))).toEqual({
      token: '7',
      secret: '[redacted]',
      broken: { field: '[unreadable]' },
      proxy: '[unreadable]',
      revoked: '[unreadable]',
      items: ['[unreadable]'],
      getter: '[unreadable]',
    });
    expect(toLoggable(throwingProxy())).toBe('[unreadable]');
  });
});
