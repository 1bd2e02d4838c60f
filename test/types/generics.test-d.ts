/**
 * Type-level specifications of the public generics, checked by the compiler, never run (see
 * test/types/types.test.ts): `ClaimResultOf` and the options that pick it, result narrowing on `ok`,
 * `WriteContextOf` and the Store generics that carry each store's write context into `fencedWrite`.
 * A `@ts-expect-error` line is a specification too: the compiler must refuse it.
 */
import { describe, expectTypeOf, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import type { createPostgresStore, PostgresWriteContext } from '../../src/adapters/postgres/index.js';
import type { createRedisStore, RedisWriteContext } from '../../src/adapters/redis/index.js';
import type { createSqliteStore, SqliteWriteContext } from '../../src/adapters/sqlite/index.js';
import {
  type ClaimOptions,
  type ClaimResultOf,
  createLeases,
  type Lease,
  type Leases,
  type Store,
  type WaitOptions,
  type WriteContextOf,
} from '../../src/index.js';

/** A store author's write context, to follow through the generics. */
interface LedgerContext {
  readonly append: (line: string) => void;
}
declare const ledgerStore: Store<LedgerContext>;
declare const leases: Leases;
declare const lease: Lease;

describe('ClaimResultOf', () => {
  it("a claim without `wait` answers the store's refusal as it is; with `wait`, the refusal says how long it waited", () => {
    type Plain = ClaimResultOf<ClaimOptions>;
    type Waited = ClaimResultOf<{ readonly wait: WaitOptions }>;
    expectTypeOf<Extract<Plain, { ok: false }>>().not.toHaveProperty('waitedMs');
    expectTypeOf<Extract<Waited, { ok: false }>['waitedMs']>().toEqualTypeOf<number>();
    expectTypeOf<Extract<Waited, { ok: false }>['waitEnded']>().toEqualTypeOf<'timeout' | 'aborted'>();
    expectTypeOf<Extract<Plain, { ok: true }>>().toEqualTypeOf<Extract<Waited, { ok: true }>>();
  });

  it('claim picks the result from the options it is given', async () => {
    expectTypeOf(await leases.claim('job')).toEqualTypeOf<ClaimResultOf<ClaimOptions>>();
    expectTypeOf(await leases.claim('job', { ttlMs: 1_000 })).toEqualTypeOf<ClaimResultOf<ClaimOptions>>();
    expectTypeOf(await leases.claim('job', { wait: { timeoutMs: 1_000 } })).toEqualTypeOf<ClaimResultOf<{ readonly wait: WaitOptions }>>();
  });

  it('claim refuses an option it does not know, and options of the wrong type', () => {
    // @ts-expect-error: `ttl` is not a claim option (NoExtraOptions), a likely typo of `ttlMs`
    void leases.claim('job', { ttl: 1_000 });
    // @ts-expect-error: ttlMs is a number of ms or null
    void leases.claim('job', { ttlMs: '1s' });
  });
});

describe('narrowing on ok', () => {
  it('a granted claim has the lease; a refused one has the reason and no lease', async () => {
    const claimed = await leases.claim('job');
    if (claimed.ok) {
      expectTypeOf(claimed.lease).toEqualTypeOf<Lease>();
    } else {
      expectTypeOf(claimed.reason).toEqualTypeOf<
        'held' | 'recovery-required' | 'held-back' | 'state-mismatch' | 'queued' | 'run-already-acquired'
      >();
      expectTypeOf(claimed).not.toHaveProperty('lease');
      if (claimed.reason === 'held') expectTypeOf(claimed.holder).toEqualTypeOf<string>();
    }
  });

  it("a fenced write's value exists only when the fence held, typed as the callback returned it", async () => {
    const written = await leases.fencedWrite(lease, async () => 42);
    if (written.ok) expectTypeOf(written.value).toEqualTypeOf<number>();
    else expectTypeOf(written).not.toHaveProperty('value');
    expectTypeOf(await leases.fencedWriteOrThrow(lease, () => 'done')).toEqualTypeOf<string>();
  });

  it("withLease's outcome carries fn's value only when completed", async () => {
    const outcome = await leases.withLease('job', async () => ({ rows: 3 }));
    if (outcome.ok) expectTypeOf(outcome.value).toEqualTypeOf<{ rows: number }>();
    else expectTypeOf(outcome).not.toHaveProperty('value');
  });
});

describe('WriteContextOf and the Store generics', () => {
  it("WriteContextOf reads a store's write context, and is never for a non-store", () => {
    expectTypeOf<WriteContextOf<Store<LedgerContext>>>().toEqualTypeOf<LedgerContext>();
    expectTypeOf<WriteContextOf<Store>>().toEqualTypeOf<unknown>();
    expectTypeOf<WriteContextOf<string>>().toBeNever();
  });

  it("createLeases keeps the store's type, so fencedWrite hands the callback that store's context", async () => {
    const ledger = createLeases(ledgerStore, { holder: 'worker' });
    expectTypeOf(ledger.store).toEqualTypeOf<Store<LedgerContext>>();
    await ledger.fencedWrite(lease, (context) => {
      expectTypeOf(context).toEqualTypeOf<LedgerContext>();
      context.append('line');
    });
    // @ts-expect-error: the context has no `query`: it is the ledger store's, not a SQL client
    await ledger.fencedWrite(lease, (context) => context.query('SELECT 1'));
  });

  it('each adapter carries its own write context', () => {
    type ContextOf<F extends (...args: never[]) => Store> = WriteContextOf<ReturnType<F>>;
    expectTypeOf<ContextOf<typeof createPostgresStore>>().toEqualTypeOf<PostgresWriteContext>();
    expectTypeOf<ContextOf<typeof createRedisStore>>().toEqualTypeOf<RedisWriteContext>();
    expectTypeOf<ContextOf<typeof createSqliteStore>>().toEqualTypeOf<SqliteWriteContext>();
    expectTypeOf(createLeases(createMemoryStore(), { holder: 'worker' }).fencedWrite)
      .parameter(1)
      .parameter(0)
      .toEqualTypeOf<WriteContextOf<ReturnType<typeof createMemoryStore>>>();
  });

  it('a store with a write context is a Store, so code written for any store accepts it', () => {
    expectTypeOf(ledgerStore).toExtend<Store>();
    expectTypeOf(createLeases(ledgerStore, { holder: 'worker' })).toExtend<Leases>();
  });
});
