/**
 * A pooled connection that dies in the instant the pool hands it over must not crash the process.
 *
 * pg-pool hands a new connection over from inside the socket's data handler (at ReadyForQuery), after
 * removing its own `error` listener; when the same TCP chunk also carries an ErrorResponse (57P01, a server
 * shutting down), pg emits `error` on the connection before any promise continuation runs. A checkout that
 * attaches its listener after `await pool.connect()` leaves that `error` with no listener: an uncaught
 * exception that ended a waiter process in test/waiting-stores/cross-process.test.ts during its server
 * restart. The pool below hands connections over in exactly that order (one macrotask: hand over, then
 * `error`), in both of pg-pool's forms, and records how many listeners the `error` found.
 */
import { EventEmitter } from 'node:events';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isLeaseError } from '../../src/errors.js';
import { createSession } from '../../src/adapters/postgres/session.js';

/** A connection whose `error` is only recorded (never thrown), with the listener count it met. */
class DyingConnection extends EventEmitter {
  listenersAtError = -1;
  released: unknown = 'not released';
  query(): Promise<never> {
    return Promise.reject(Object.assign(new Error('Connection terminated unexpectedly'), { code: undefined }));
  }
  release(error?: unknown): void {
    this.released = error;
  }
  die(): void {
    this.listenersAtError = this.listenerCount('error');
    if (this.listenersAtError > 0) this.emit('error', new Error('terminating connection due to administrator command'));
  }
}

/** A pool with pg-pool's hand-over order: in one macrotask, the callback (or the promise's resolve), then the connection's `error`. */
function dyingPool(callbackForm: boolean) {
  const handed: DyingConnection[] = [];
  const pool = {
    query: () => Promise.reject(new Error('not used')),
    connect(callback?: (error: unknown, connection?: DyingConnection) => void): Promise<DyingConnection> | undefined {
      const connection = new DyingConnection();
      handed.push(connection);
      if (callback !== undefined && callbackForm) {
        setImmediate(() => {
          callback(undefined, connection);
          connection.die();
        });
        return undefined;
      }
      return new Promise((resolve) =>
        setImmediate(() => {
          resolve(connection);
          connection.die();
        }),
      );
    },
  };
  return { pool, handed };
}

describe('a pooled connection that dies as it is handed over', () => {
  it('pg-pool form (callback): the error finds leasefence listening, the statement fails typed, the connection is destroyed', async () => {
    const { pool, handed } = dyingPool(true);
    const session = createSession(pool as never, { prepare: false });
    const failure = await session.statement('SELECT 1', [], 'inspect').catch((error: unknown) => error);
    expect(handed[0]?.listenersAtError).toBeGreaterThan(0);
    expect(isLeaseError(failure)).toBe(true);
    expect(handed[0]?.released).toBe(true);
  });

  it('an async pass-through wrapper around the callback form (instrumentation): still listening at the hand-over', async () => {
    const { pool, handed } = dyingPool(true);
    const original = pool.connect;
    const wrapped = { ...pool, connect: async (...args: unknown[]) => (original as (...params: unknown[]) => unknown).apply(pool, args) };
    const session = createSession(wrapped as never, { prepare: false });
    const failure = await session.statement('SELECT 1', [], 'inspect').catch((error: unknown) => error);
    expect(handed[0]?.listenersAtError).toBeGreaterThan(0);
    expect(isLeaseError(failure)).toBe(true);
    expect(handed[0]?.released).toBe(true);
  });

  it('a pool whose connect takes no callback still works (its promise is used)', async () => {
    const { pool, handed } = dyingPool(false);
    const session = createSession(pool as never, { prepare: false });
    const failure = await session.statement('SELECT 1', [], 'inspect').catch((error: unknown) => error);
    expect(isLeaseError(failure)).toBe(true);
    expect(handed).toHaveLength(1);
    expect(handed[0]?.released).toBe(true);
  });

  it('a real pg Pool: statements and transactions check out, run and release as before', async () => {
    const url = process.env['LEASEFENCE_PG_URL'];
    if (url === undefined) throw new Error('LEASEFENCE_PG_URL is set by the vitest global setup');
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    pool.on('error', () => undefined);
    try {
      const session = createSession(pool);
      expect(await session.statement('SELECT 41 + 1 AS n', [], 'inspect')).toEqual([{ n: 42 }]);
      expect(await session.transaction(async (tx) => (await tx.query('SELECT 7 AS n')).rows, 'fencedWrite')).toEqual([{ n: 7 }]);
      expect(pool.idleCount + pool.waitingCount).toBeGreaterThan(0);
      expect(pool.totalCount - pool.idleCount).toBe(0);
    } finally {
      await pool.end();
    }
  });
});
