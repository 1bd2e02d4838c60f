/**
 * Issue 9 finding 7: every field of a handle and every input is validated before any I/O; hostile objects
 * (Proxies, throwing getters, hostile toJSON, sparse arrays, deep nesting) get a typed INVALID_ARGUMENT,
 * never a raw TypeError or RangeError, and no store call.
 */
import { describe, expect, it } from 'vitest';
import { type InvalidArgumentError, isLeaseError } from '../../src/errors.js';
import { Lease } from '../../src/lease.js';
import { MAX_NAME_BYTES } from '../../src/validate.js';
import { securitySetup, thrownBy } from './setup.js';

const KEY = 'job:1';

async function setup() {
  const env = securitySetup();
  const lease = await env.a.claimOrThrow(KEY, { attributes: { model: 'v1' } });
  env.spy.calls.length = 0;
  return { ...env, lease };
}

/** Asserts `act` throws INVALID_ARGUMENT and the store was not called. */
async function refusedBeforeIo(env: Awaited<ReturnType<typeof setup>>, act: () => unknown): Promise<InvalidArgumentError> {
  const error = await thrownBy(act);
  if (!isLeaseError(error, 'INVALID_ARGUMENT')) throw new Error(`expected INVALID_ARGUMENT, got ${String(error)}`, { cause: error });
  expect(env.spy.calls).toEqual([]);
  return error as InvalidArgumentError;
}

const hostile = {
  throwingGetter: () =>
    Object.defineProperty({}, 'ttlMs', {
      enumerable: true,
      get: () => {
        throw new TypeError('boom');
      },
    }),
  throwingProxy: () =>
    new Proxy(
      {},
      {
        get: () => {
          throw new TypeError('boom');
        },
        ownKeys: () => {
          throw new TypeError('boom');
        },
        getPrototypeOf: () => {
          throw new TypeError('boom');
        },
      },
    ),
};

describe('a forged or tampered handle is refused before any I/O', () => {
  it('an object made from Lease.prototype, a Proxy of a lease, a handle with a tampered token, secret or key', async () => {
    const env = await setup();
    const { a, lease } = env;
    const forged = Object.create(Lease.prototype) as Lease;
    await refusedBeforeIo(env, () => a.renew(forged));
    await refusedBeforeIo(env, () =>
      a.fencedWrite(
        new Proxy(lease, {
          get: () => {
            throw new Error('trap');
          },
        }),
        () => 1,
      ),
    );
    await refusedBeforeIo(env, () => a.release(new Proxy(lease, {}))); // a Proxy cannot read the private secret
    for (const token of [0n, -1n, 2n ** 63n, 1, '7', Number.NaN]) {
      const tampered = a.restore(lease.export());
      Object.defineProperty(tampered, 'token', { value: token });
      await refusedBeforeIo(env, () => a.fencedWrite(tampered, () => 1));
    }
    const keyless = a.restore(lease.export());
    Object.defineProperty(keyless, 'key', { value: '' });
    await refusedBeforeIo(env, () => a.checkpoint(keyless, 1));
    const secretless = Object.create(Lease.prototype, {
      fence: { value: () => ({ ...lease.fence(), secret: 'not-hex' }) },
      storeId: { value: lease.storeId },
    }) as Lease;
    await refusedBeforeIo(env, () => a.release(secretless));
  });

  it('a frozen handle renews (the store answers ok) instead of throwing a TypeError after the renewal applied', async () => {
    const env = await setup();
    const frozen = Object.freeze(env.a.restore(env.lease.export()));
    expect(await env.a.renew(frozen as Lease)).toMatchObject({ ok: true, token: env.lease.token });
  });

  it('restore() refuses tokens past 2^63 - 1, hostile JSON objects and a missing secret', async () => {
    const env = await setup();
    const { a, lease } = env;
    await refusedBeforeIo(env, () => a.restore({ ...lease.export(), token: (2n ** 63n).toString() }));
    await refusedBeforeIo(env, () => a.restore(hostile.throwingProxy() as never));
    await refusedBeforeIo(env, () =>
      a.restore(
        Object.defineProperty({ ...lease.export() }, 'secret', {
          get: () => {
            throw new Error('x');
          },
        }) as never,
      ),
    );
  });
});

describe('keys, resources and names are limited in UTF-8 bytes', () => {
  it(`a key of ${MAX_NAME_BYTES} ASCII bytes is accepted; 1,024 CJK characters (3,072 bytes) are refused before any I/O`, async () => {
    const env = await setup();
    expect(await env.a.claim('k'.repeat(MAX_NAME_BYTES))).toMatchObject({ ok: true });
    env.spy.calls.length = 0;
    const error = await refusedBeforeIo(env, () => env.a.claim('鍵'.repeat(1024)));
    expect(error.message).toContain('bytes of UTF-8');
    await refusedBeforeIo(env, () => env.a.claim('鍵'.repeat(342)));
    await refusedBeforeIo(env, () =>
      env.a.gateWrite({ write: () => Promise.resolve({ ok: true, value: 1, token: 1n }) } as never, '😀'.repeat(257), env.lease, () => 1),
    );
  });
});

describe('attributes keep every name', () => {
  it('__proto__ and constructor are attributes like any other (not dropped, not inherited)', async () => {
    const env = await setup();
    const attributes = JSON.parse('{"__proto__":"p","constructor":"c"}') as Record<string, string>;
    const lease = await env.a.claimOrThrow('job:attrs', { attributes });
    expect(Object.keys(lease.attributes)).toEqual(['__proto__', 'constructor']);
    expect(await env.a.fencedWrite(lease, () => 1, { attributes })).toMatchObject({ ok: true });
    expect(
      await env.a.fencedWrite(lease, () => 1, { attributes: JSON.parse('{"__proto__":"other"}') as Record<string, string> }),
    ).toMatchObject({ ok: false, reason: 'attribute-mismatch' });
    const plain = await env.a.claimOrThrow('job:plain');
    expect(await env.a.fencedWrite(plain, () => 1, { attributes: { toString: 'x' } })).toMatchObject({
      ok: false,
      reason: 'attribute-mismatch',
      attribute: { name: 'toString', found: null },
    });
  });
});

describe('hostile options and checkpoints get INVALID_ARGUMENT, never a raw TypeError or RangeError', () => {
  it('throwing getters and Proxies as options; Object.create(null) options work', async () => {
    const env = await setup();
    const { a, lease } = env;
    await refusedBeforeIo(env, () => a.claim('job:2', hostile.throwingGetter() as never));
    await refusedBeforeIo(env, () => a.claim('job:2', hostile.throwingProxy() as never));
    await refusedBeforeIo(env, () => a.renew(lease, hostile.throwingGetter() as never));
    await refusedBeforeIo(env, () => a.release(lease, hostile.throwingProxy() as never));
    await refusedBeforeIo(env, () => a.revoke(KEY, hostile.throwingProxy() as never));
    await refusedBeforeIo(env, () => a.fencedWrite(lease, () => 1, hostile.throwingProxy() as never));
    await refusedBeforeIo(env, () => a.claim('job:2', { attributes: hostile.throwingProxy() as never }));
    await refusedBeforeIo(env, () => a.claim('job:2', 'ttl' as never));
    await refusedBeforeIo(env, () => a.revoke(KEY, { reason: 'x', expectedToken: 2n ** 64n }));
    const nullProto = Object.assign(Object.create(null) as object, { ttlMs: 500, runId: 'r9' });
    expect(await a.claim('job:3', nullProto)).toMatchObject({ ok: true, lease: { runId: 'r9' } });
  });

  it('sparse arrays, extra array properties, getters, Proxies, hostile toJSON and deep nesting in a checkpoint', async () => {
    const env = await setup();
    const { a, lease } = env;
    const extra = Object.assign([1, 2], { note: 'dropped by JSON' });
    let deep: unknown = 1;
    for (let level = 0; level < 100_000; level += 1) deep = [deep];
    const cases: unknown[] = [
      // biome-ignore lint/suspicious/noSparseArray: a hole is the input under test
      [1, , 3],
      extra,
      {
        get step() {
          throw new Error('getter');
        },
      },
      new Proxy(
        { step: 1 },
        {
          ownKeys: () => {
            throw new Error('trap');
          },
        },
      ),
      { toJSON: () => ({ step: 1n }) },
      deep,
    ];
    for (const value of cases) {
      await refusedBeforeIo(env, () => a.checkpoint(lease, value));
      await refusedBeforeIo(env, () => a.fencedWrite(lease, () => 1, { checkpoint: value }));
      await refusedBeforeIo(env, () => a.release(lease, { checkpoint: value }));
    }
  });

  it('a getter cannot show validation one value and the store another (read once)', async () => {
    const env = await setup();
    let reads = 0;
    const flipping = {
      get step() {
        reads += 1;
        return reads === 1 ? 1 : 10n;
      },
    };
    expect(await env.a.checkpoint(env.lease, flipping)).toMatchObject({ ok: true });
    expect(reads).toBe(1);
    expect((await env.a.inspect(KEY)).checkpoint).toMatchObject({ value: { step: 1 } });
  });
});
