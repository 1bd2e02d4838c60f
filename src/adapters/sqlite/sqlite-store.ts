/**
 * The SQLite lease store: every operation is one `BEGIN IMMEDIATE` transaction that reads the key's row,
 * lets the pure transition of the same name decide, and writes the row back (`remove` deletes it), so
 * SQLite's single writer lock makes it atomic across every connection and process sharing the file.
 * `inspect` is one SELECT. Submissions live in a table of their own, read only by a fenced write that
 * carries one (submissions.ts); the floor that keeps tokens increasing across a `remove` is a one-row table
 * (token-floor.ts). The key's queue of waiting claims is a column of the row that only a claim or a dequeue writes
 * (waiters.ts). Claim-next (items.ts) and semaphores (permits.ts: `acquirePermit` over a semaphore's permit
 * rows, read by a range on the primary key) are transactions of the same kind.
 */
import {
  checkFence,
  InvalidArgumentError,
  MAX_TOKEN,
  systemClock,
  transitions,
  type ClaimCommand,
  type DequeueCommand,
  type DequeueOutcome,
  type RemoveCommand,
  type RemoveOutcome,
  type Clock,
  type Fence,
  type FencedWriteOutcome,
  type LeaseRecord,
  type Store,
  type StoreClaimOutcome,
  type StoreFencedWriteOptions,
  type StoreTime,
  type Transition,
  refuseWrite,
  WriteRefusedSignal,
  writeRefused,
} from '../../store-entry.js';
import type {
  AddItemsCommand,
  AddItemsOutcome,
  ClaimNextCommand,
  ClaimNextOutcome,
  RemoveItemsCommand,
  RemoveItemsOutcome,
} from '../../fence/claim-next.js';
import type { AcquirePermitCommand, AcquirePermitOutcome } from '../../store-entry.js';
import type { SqliteClient } from './client.js';
import { CallbackFailure, classifyFailure, runCallback } from './failures.js';
import { createSqliteItems } from './items.js';
import { createSqliteList } from './list.js';
import { createSqlitePermits } from './permits.js';
import { runMigration } from './migration.js';
import { tableName, type TableName } from './identifier.js';
import {
  assertCheckpointRead,
  clearItemRecordSql,
  deleteRecordSql,
  recordOf,
  recordParams,
  selectClaimRecordSql,
  selectRecordSql,
  upsertRecordSql,
} from './rows.js';
import { busyTimeoutPragma, DEFAULT_BUSY_TIMEOUT_MS, DEFAULT_LEASE_TABLE, leaseSchemaStatements, WAL_PRAGMA } from './schema.js';
import { hashedClaim, hashedFence } from './secret-hash.js';
import { statementFor } from './statement-cache.js';
import { submissionStatements } from './submissions.js';
import { tokenFloorStatements } from './token-floor.js';
import { refuseAsyncCallback, refuseThenable, transactionStatements, type SqliteTransactionStatements } from './synchronous-callback.js';
import { immediate } from './transaction.js';
import { NO_WAITERS, updateWaitersSql, waitersChanged, waitersText } from './waiters.js';

/** What a SQLite fenced write's callback receives: statements inside the fenced transaction. */
export interface SqliteWriteContext extends SqliteTransactionStatements {
  readonly key: string;
  /** The token of the grant the write runs under. */
  readonly token: bigint;
  /** The store's now when the fence was checked (the write lock is held until COMMIT). */
  readonly now: StoreTime;
  /**
   * Refuses the write from inside the callback (after reading your own data in the transaction): everything
   * rolls back (your statements, the checkpoint, the submission) and the store answers `write-refused` with
   * this code and detail.
   */
  refuse(code: string, detail?: string): never;
}

/** The store clock in microseconds: the default token floor (see `SqliteStoreOptions.tokenFloor`). */
export const clockTokenFloor = (now: StoreTime): bigint => BigInt(now) * 1000n;

export interface SqliteStoreOptions {
  /** Your connection: a `better-sqlite3` `Database` or a `node:sqlite` `DatabaseSync` (Node 22+). */
  readonly client: SqliteClient;
  /**
   * The lease table. Validated as an identifier and always quoted.
   * @default 'leasefence_leases'
   */
  readonly table?: string;
  /**
   * The store's clock, in epoch milliseconds, read inside each transaction once the write lock is held.
   * SQLite has no server clock: this is the host's wall clock, shared by every process on the machine.
   * Inject a manual clock in tests.
   * @default Date.now
   */
  readonly clock?: Clock;
  /**
   * The floor of a new token, from the store's now: a claim mints `max(previous + 1, floor)`. The default,
   * the clock in microseconds, keeps tokens increasing even if the database file is restored from a backup
   * (as long as the clock has moved on since). A clock stepped backwards never re-issues a token either:
   * `previous + 1` still wins. Tests that compare tokens with a reference model pass `() => 0n`. Whatever the
   * floor, a key with no token of its own (never claimed, or removed) mints above every removed record's token
   * (the `<table>_floor` table), so `remove` never lets a token be issued twice.
   * @default clockTokenFloor (now in microseconds)
   */
  readonly tokenFloor?: (now: StoreTime) => bigint;
  /**
   * How long an operation waits for another connection's write lock (`PRAGMA busy_timeout`, set on the
   * connection when the store is created) before giving up with `StoreUnavailableError`. The wait blocks
   * the event loop (the driver is synchronous). `null` leaves the connection's own setting (better-sqlite3:
   * its `timeout` option, 5 s by default; node:sqlite: its `timeout` option, 0 by default).
   * @default 5000
   */
  readonly busyTimeoutMs?: number | null;
}

/** The SQLite lease store. */
export interface SqliteStore extends Store<SqliteWriteContext> {
  /** The lease table as configured. */
  readonly table: string;
  /** The connection the store runs on. */
  readonly client: SqliteClient;
  /** Claim-next (items.ts): offered by every SQLite store. */
  addItems(command: AddItemsCommand): Promise<AddItemsOutcome>;
  removeItems(command: RemoveItemsCommand): Promise<RemoveItemsOutcome>;
  claimNext(command: ClaimNextCommand): Promise<ClaimNextOutcome>;
  /** Semaphores (permits.ts): offered by every SQLite store. */
  acquirePermit(command: AcquirePermitCommand): Promise<AcquirePermitOutcome>;
  /**
   * Switches the file to WAL mode and creates the lease table (and its `_submissions` and `_floor` tables, and
   * the claim-next indexes) if missing; safe to run from several processes.
   */
  migrate(): Promise<void>;
}

/** What a token gate sharing the store's connection needs to judge a fence in its own transaction. */
export interface SqliteFenceJudge {
  readonly client: SqliteClient;
  /** The store's now (call it inside the transaction). */
  now(): StoreTime;
  /** The key's record (call it inside the transaction); secrets are hashes, see `hashedFence`. */
  read(key: string): LeaseRecord | null;
}

const judges = new WeakMap<SqliteStore, SqliteFenceJudge>();

/** The fence judge of a store made by `createSqliteStore` (`undefined` for any other object). */
export function fenceJudgeOf(store: SqliteStore): SqliteFenceJudge | undefined {
  return judges.get(store);
}

/** Validates a busy timeout: a non-negative integer number of ms up to 2^31 - 1, or null. */
function assertBusyTimeout(ms: unknown): asserts ms is number | null {
  if (ms === null) return;
  if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 0 || ms > 2 ** 31 - 1) {
    throw new InvalidArgumentError(`busyTimeoutMs must be a non-negative integer number of milliseconds, or null; got ${shown(ms)}`);
  }
}

/** A reading of the caller's clock or floor for a message: numbers and bigints as they are, anything else by type. */
const shown = (value: unknown): string =>
  typeof value === 'number' || typeof value === 'bigint' ? `${value}${typeof value === 'bigint' ? 'n' : ''}` : typeof value;

/** The largest clock reading accepted, in ms either side of the epoch: the range of a JS `Date`. */
const MAX_CLOCK_MS = 8.64e15;

/** Validates the connection: something with `prepare` and `exec`. */
export function assertClient(client: unknown): asserts client is SqliteClient {
  let usable: boolean;
  try {
    const candidate = client as Partial<SqliteClient> | null | undefined;
    usable = typeof candidate?.prepare === 'function' && typeof candidate.exec === 'function';
  } catch {
    // NOTE: a Proxy or getter that throws is no connection either.
    usable = false;
  }
  if (!usable)
    throw new InvalidArgumentError(
      'client must be a better-sqlite3 Database or a node:sqlite DatabaseSync (an object with prepare and exec)',
    );
}

/**
 * Creates a lease store in a SQLite database file: the durable choice for several processes on one
 * machine with no server (cron jobs and workers on one VM). Bring your own connection; run `migrate()`
 * once (or run `sqliteLeaseSchemaSql()` in your migrations, with `PRAGMA journal_mode = WAL`).
 *
 * ```ts
 * import Database from 'better-sqlite3';
 * import { createLeases } from 'leasefence';
 * import { createSqliteStore } from 'leasefence/sqlite';
 *
 * const store = createSqliteStore({ client: new Database('leases.db') });
 * await store.migrate();
 * const leases = createLeases(store, { holder: 'worker-1' });
 * ```
 */
export function createSqliteStore(options: SqliteStoreOptions): SqliteStore {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('createSqliteStore needs options with a client');
  let given: { readonly [K in keyof SqliteStoreOptions]-?: unknown };
  try {
    const { client, table, clock, tokenFloor, busyTimeoutMs } = options;
    given = { client, table, clock, tokenFloor, busyTimeoutMs };
  } catch {
    // NOTE: read once, here: a getter or Proxy that throws gets the typed refusal, not its own error.
    throw new InvalidArgumentError('createSqliteStore options could not be read (a getter or Proxy threw)');
  }
  const { client } = given;
  assertClient(client);
  const table: TableName = tableName((given.table as string | undefined) ?? DEFAULT_LEASE_TABLE);
  const clock = given.clock ?? systemClock;
  if (typeof clock !== 'function') throw new InvalidArgumentError('clock must be a function returning epoch milliseconds');
  const floorOf = given.tokenFloor ?? clockTokenFloor;
  if (typeof floorOf !== 'function') throw new InvalidArgumentError('tokenFloor must be a function of the store now returning a bigint');
  const tokenFloor = (at: StoreTime): bigint => {
    const floor: unknown = floorOf(at);
    // NOTE: a number would be minted as a number token, and a floor past MAX_TOKEN cannot be bound.
    if (typeof floor !== 'bigint' || floor > MAX_TOKEN)
      throw new InvalidArgumentError(`tokenFloor returned ${shown(floor)}, not a bigint up to 2^63-1`);
    return floor;
  };
  const busyTimeoutMs = given.busyTimeoutMs === undefined ? DEFAULT_BUSY_TIMEOUT_MS : given.busyTimeoutMs;
  assertBusyTimeout(busyTimeoutMs);
  if (busyTimeoutMs !== null) client.exec(busyTimeoutPragma(busyTimeoutMs));

  // NOTE: prepared on first use, not here: the table may not exist before `migrate()`.
  const selectRecord = selectRecordSql(table);
  const selectClaimRecord = selectClaimRecordSql(table);
  const upsertRecord = upsertRecordSql(table);
  const deleteRecord = deleteRecordSql(table);
  const clearItemRecord = clearItemRecordSql(table);
  const updateWaiters = updateWaitersSql(table);
  const submissions = submissionStatements(client, table);
  const floors = tokenFloorStatements(client, table);
  // NOTE: whole milliseconds, like every stored time: the INTEGER columns of a STRICT table refuse fractions.
  const now = (): StoreTime => {
    const reading: unknown = clock();
    if (typeof reading !== 'number' || !(Math.abs(reading) <= MAX_CLOCK_MS))
      throw new InvalidArgumentError(`the SQLite store's clock returned ${shown(reading)}, not epoch milliseconds`);
    return Math.floor(reading);
  };
  /**
   * The floor of a claim's token. NOTE: only a key with no token of its own (no record, or a record `setKeyState`
   * made) can be below the tokens of a removed record: only its first claim reads the floor table.
   */
  const floorFor = (found: LeaseRecord | null, at: StoreTime): bigint => {
    const floor = tokenFloor(at);
    if (found !== null && found.token !== 0n) return floor;
    const removed = floors.removed();
    return removed >= floor ? removed + 1n : floor;
  };
  const read = (key: string): LeaseRecord | null => recordOf(statementFor(client, selectRecord).get(key));
  const write = (record: LeaseRecord): void => void statementFor(client, upsertRecord).run(...recordParams(record));
  /** Writes the key's queue when the transition changed it (the record's upsert leaves it as it is). */
  const writeWaiters = (before: LeaseRecord | null, after: LeaseRecord): void => {
    if (waitersChanged(before?.waiters ?? NO_WAITERS, after.waiters))
      statementFor(client, updateWaiters).run(waitersText(after.waiters), after.key);
  };

  /**
   * A claim: judged on the record read without the checkpoint when a live grant of another secret holds it
   * (`selectClaimRecordSql`). Such a claim is refused `held`: a plain one writes nothing, a waiting one writes its
   * queue alone (a refusal changes nothing else of the record). A grant writes the record (and the queue, when it
   * changed: the claimant left it, or entries expired); a grant decided on a record read without its checkpoint
   * would drop it, so it is refused loudly instead (unreachable while the SQL condition is `isLive`).
   */
  const claim = (command: ClaimCommand): StoreClaimOutcome =>
    immediate(client, 'claim', () => {
      const at = now();
      const hashed = hashedClaim(command);
      const row = statementFor(client, selectClaimRecord).get(at, hashed.secret, command.key);
      const found = recordOf(row);
      const { record, changed, outcome } = transitions.claim(found, hashed, at, floorFor(found, at));
      if (changed && record !== null) {
        // NOTE: a refusal that writes has a row (its queue had a waiter first, or a grant or hold refused it).
        if (outcome.ok || found === null) {
          assertCheckpointRead(row, changed);
          write(record);
        }
        writeWaiters(found, record);
      }
      return { outcome, commit: changed };
    });

  /** Dequeue: the queue alone changes. SQLite tells no waiters (it has no `watchFreed`): they poll. */
  const dequeue = (command: DequeueCommand): DequeueOutcome =>
    immediate(client, 'dequeue', () => {
      const found = read(command.key);
      const { record, changed, outcome } = transitions.dequeue(found, command, now());
      if (changed && record !== null) writeWaiters(found, record);
      return { outcome, commit: changed };
    });

  const apply = <O>(key: string, operation: string, step: (record: LeaseRecord | null, now: StoreTime) => Transition<O>): O =>
    immediate(client, operation, () => {
      const { record, changed, outcome } = step(read(key), now());
      if (changed && record !== null) write(record);
      return { outcome, commit: changed };
    });

  const fencedWrite = <T>(
    fence: Fence,
    callback: (context: SqliteWriteContext) => T,
    { checkpointJson, submission }: StoreFencedWriteOptions,
  ): FencedWriteOutcome<T> => {
    const stored = hashedFence(fence);
    return immediate<FencedWriteOutcome<T>>(client, 'fenced write', () => {
      const at = now();
      let record = read(fence.key);
      if (submission === undefined) {
        const verdict = checkFence(record, stored, at);
        if (!verdict.ok) return { outcome: verdict, commit: false };
      } else {
        // NOTE: the replay lookup reads the one submission of this run id (the transition looks it up by run id
        // among the record's submissions; the row's record carries none).
        const recorded = record === null ? null : submissions.find(fence.key, submission.runId);
        const looked = record === null || recorded === null ? record : { ...record, submissions: [recorded] };
        const refused = transitions.checkSubmission(looked, stored, submission, at);
        if (refused !== null) return { outcome: refused, commit: false };
      }
      const { statements, close } = transactionStatements(client, 'fenced write');
      let value: T;
      try {
        // NOTE: a literal, not `{ ...statements, ... }`: with eight properties the spread costs ~0.7 µs a write.
        const { client: connection, run, get, all } = statements;
        const context: SqliteWriteContext = {
          client: connection,
          run,
          get,
          all,
          key: fence.key,
          token: fence.token,
          now: at,
          refuse: refuseWrite,
        };
        value = runCallback(() => callback(context));
      } catch (error) {
        if (!(error instanceof CallbackFailure && error.error instanceof WriteRefusedSignal)) throw error;
        // NOTE: rolled back: the callback's statements are undone with the rest.
        return { outcome: writeRefused(fence, error.error, at), commit: false };
      } finally {
        close();
      }
      refuseThenable(value, 'fenced write');
      let checkpoint = null;
      if (checkpointJson !== undefined) {
        // NOTE: the same checkpoint transition at the same now, in the same transaction: the record is as read.
        const saved = transitions.checkpoint(record, { fence: stored, json: checkpointJson }, at);
        if (!saved.outcome.ok || saved.record === null) return { outcome: saved.outcome as FencedWriteOutcome<T>, commit: false };
        write(saved.record);
        record = saved.record;
        checkpoint = saved.outcome.checkpoint;
      }
      if (submission === undefined) return { outcome: { ok: true, value, token: fence.token, checkpoint, now: at }, commit: true };
      // NOTE: the fence held, so the record exists; its submissions are not needed to make the new one.
      const recorded = transitions.recordSubmission(record as LeaseRecord, stored, submission, at).submission;
      submissions.record(fence.key, recorded);
      return { outcome: { ok: true, value, token: fence.token, checkpoint, submission: recorded, now: at }, commit: true };
    });
  };

  /**
   * Remove: deletes the record (the row, or for an item all but the item) and the key's submissions, and raises
   * the floor to the removed token.
   */
  const remove = (command: RemoveCommand): RemoveOutcome =>
    immediate(client, 'remove', () => {
      const { changed, outcome } = transitions.remove(read(command.key), command, now());
      if (changed && outcome.ok) {
        // NOTE: one of the two applies: the row goes, or (an item) keeps only its item.
        statementFor(client, deleteRecord).run(command.key);
        statementFor(client, clearItemRecord).run(command.key);
        submissions.removeAll(command.key);
        floors.raise(outcome.token);
      }
      return { outcome, commit: changed };
    });

  const items = createSqliteItems({ client, table, now, floorFor, write });
  // NOTE: a permit's token is above every removed record's, whatever its own: a removed permit's token was the
  // semaphore's, and the next grant of any permit must rise above it.
  const mintFloor = (at: StoreTime): bigint => {
    const floor = tokenFloor(at);
    const removed = floors.removed();
    return removed >= floor ? removed + 1n : floor;
  };
  const acquirePermit = createSqlitePermits({ client, table, now, mintFloor, write });

  const store: SqliteStore = {
    id: `sqlite:${table.name}`,
    table: table.name,
    dequeue: async (command) => dequeue(command),
    client,
    async migrate() {
      // NOTE: journal_mode cannot change inside a transaction; CREATE TABLE IF NOT EXISTS is atomic on its own.
      await runMigration(client, [WAL_PRAGMA, ...leaseSchemaStatements(table)], 'migrate');
    },
    claim: async (command) => claim(command),
    renew: async (command) =>
      apply(command.fence.key, 'renew', (record, at) => transitions.renew(record, { ...command, fence: hashedFence(command.fence) }, at)),
    checkpoint: async (command) =>
      apply(command.fence.key, 'checkpoint', (record, at) =>
        transitions.checkpoint(record, { ...command, fence: hashedFence(command.fence) }, at),
      ),
    release: async (command) =>
      apply(command.fence.key, 'release', (record, at) =>
        transitions.release(record, { ...command, fence: hashedFence(command.fence) }, at),
      ),
    revoke: async (command) => apply(command.key, 'revoke', (record, at) => transitions.revoke(record, command, at)),
    setKeyState: async (command) => apply(command.key, 'set key state', (record, at) => transitions.setKeyState(record, command, at)),
    remove: async (command) => remove(command),
    recover: async (command) =>
      apply(command.fence.key, 'recover', (record, at) =>
        transitions.recover(record, { ...command, fence: hashedFence(command.fence) }, at),
      ),
    async inspect(key) {
      try {
        return transitions.inspect(read(key), key, now());
      } catch (error) {
        throw classifyFailure(error, 'before-commit', 'inspect');
      }
    },
    async fencedWrite<T>(
      fence: Fence,
      callback: (context: SqliteWriteContext) => T | Promise<T>,
      writeOptions: StoreFencedWriteOptions = {},
    ) {
      refuseAsyncCallback(callback, 'fenced write');
      return fencedWrite(fence, callback as (context: SqliteWriteContext) => T, writeOptions);
    },
    list: createSqliteList(client, table, now),
    addItems: async (command) => items.addItems(command),
    removeItems: async (command) => items.removeItems(command),
    claimNext: async (command) => items.claimNext(command),
    acquirePermit: async (command) => acquirePermit(command),
  };
  judges.set(store, { client, now, read });
  return store;
}
