/**
 * The Postgres store's record-level operations of issue 24, at the Store level, on every client: key state
 * (`setKeyState`, a claim's `expect`), holds (`release` with `holdMs`), `remove` and its token floor,
 * submissions (both fenced-write forms) and a write's own refusal. Every outcome is compared with the pure
 * transition's on a model record kept beside the store (the store's `now` from each outcome), so the SQL is
 * held to the core step by step.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../../src/adapters/postgres/index.js';
import { tokenFloorAt } from '../../src/adapters/postgres/token-floor.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import type {
  ClaimCommand,
  FencedWriteOutcome,
  ReleaseCommand,
  RemoveCommand,
  SetKeyStateCommand,
  StoreClaimOutcome,
  SubmissionCommand,
} from '../../src/fence/operations.js';
import * as transitions from '../../src/fence/transitions.js';
import type { Fence, LeaseRecord } from '../../src/fence/types.js';
import { checkFence } from '../../src/fence/verdict.js';
import { freshTable, openPostgresClient, sharedPostgresUrl, type OpenedClient, type PostgresClientKind } from './postgres-harness.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const digestOf = (payload: string): string => createHash('sha256').update(payload).digest('hex');

/** A submission command for `runId` with `payload`. */
export function submissionOf(runId: string, payload: string, bindToGrant = false): SubmissionCommand {
  return { runId, digest: digestOf(payload), receiptJson: JSON.stringify({ receipt: payload }), bindToGrant };
}

/**
 * A store with a pure model beside it: each operation runs on the store, and its outcome must equal the pure
 * transition's on the model record at the store's `now`; the model then takes the transition's record.
 */
export class Modelled {
  readonly #records = new Map<string, LeaseRecord | null>();
  #removedFloor = 0n;
  constructor(readonly store: PostgresStore) {}

  record(key: string): LeaseRecord | null {
    return this.#records.get(key) ?? null;
  }

  async claim(command: ClaimCommand): Promise<StoreClaimOutcome> {
    const outcome = await this.store.claim(command);
    const before = this.record(command.key);
    const previous = before?.token ?? 0n;
    const clock = tokenFloorAt(outcome.now);
    const floor = previous === 0n && this.#removedFloor + 1n > clock ? this.#removedFloor + 1n : clock;
    const expected = transitions.claim(before, command, outcome.now, floor);
    expect(outcome).toEqual(expected.outcome);
    this.#records.set(command.key, expected.record);
    return outcome;
  }

  async renew(fence: Fence, ttlMs: number | null) {
    const outcome = await this.store.renew({ fence, ttlMs });
    const expected = transitions.renew(this.record(fence.key), { fence, ttlMs }, outcome.now);
    expect(outcome).toEqual(expected.outcome);
    this.#records.set(fence.key, expected.record);
    return outcome;
  }

  async release(command: ReleaseCommand) {
    const outcome = await this.store.release(command);
    const expected = transitions.release(this.record(command.fence.key), command, outcome.now);
    expect(outcome).toEqual(expected.outcome);
    this.#records.set(command.fence.key, expected.record);
    return outcome;
  }

  async setKeyState(command: SetKeyStateCommand) {
    const outcome = await this.store.setKeyState(command);
    const expected = transitions.setKeyState(this.record(command.key), command, outcome.now);
    expect(outcome).toEqual(expected.outcome);
    this.#records.set(command.key, expected.record);
    return outcome;
  }

  async remove(command: RemoveCommand) {
    const outcome = await this.store.remove(command);
    const before = this.record(command.key);
    const expected = transitions.remove(before, command, outcome.now);
    expect(outcome).toEqual(expected.outcome);
    if (expected.changed && before !== null && before.token > this.#removedFloor) this.#removedFloor = before.token;
    this.#records.set(command.key, expected.record);
    return outcome;
  }

  async inspect(key: string) {
    const inspection = await this.store.inspect(key);
    expect(inspection).toEqual(transitions.inspect(this.record(key), key, inspection.now));
    return inspection;
  }

  /** What a fenced write with `submission` must answer at `now`, and the model's record after it. */
  #expectedWrite(fence: Fence, submission: SubmissionCommand | undefined, now: number, outcome: { ok: boolean; reason?: string }) {
    const record = this.record(fence.key);
    const refused =
      submission === undefined
        ? checkFence(record, fence, now)
        : (transitions.checkSubmission(record, fence, submission, now) ?? { ok: true });
    if (!refused.ok) {
      expect(outcome).toEqual(refused);
      return;
    }
    if (outcome.reason === 'write-refused') return;
    expect(outcome).toMatchObject({ ok: true, token: fence.token, now });
    if (submission !== undefined && record !== null) {
      const recorded = transitions.recordSubmission(record, fence, submission, now);
      expect(outcome).toMatchObject({ submission: recorded.submission });
      this.#records.set(fence.key, recorded.record);
    }
  }

  async fencedWrite<T>(
    fence: Fence,
    write: Parameters<PostgresStore['fencedWrite']>[1],
    submission?: SubmissionCommand,
  ): Promise<FencedWriteOutcome<T>> {
    const outcome = (await this.store.fencedWrite(fence, write, submission === undefined ? {} : { submission })) as FencedWriteOutcome<T>;
    this.#expectedWrite(fence, submission, outcome.now, outcome);
    return outcome;
  }

  async fencedStatement(fence: Fence, text: string, params: unknown[], submission?: SubmissionCommand) {
    const json = { ...fence, token: fence.token.toString(), storeId: this.store.id, expiresAt: null, attributes: {} };
    const lease = createLeases(this.store, { holder: fence.holder }).restore(json);
    const outcome = await this.store.fencedStatement(lease, text, params, submission === undefined ? {} : { submission });
    this.#expectedWrite(fence, submission, outcome.now, outcome);
    return outcome;
  }
}

/** A claim command for `key` by `holder` (a fresh secret). */
export function claimOf(key: string, holder: string, extra: Partial<ClaimCommand> = {}): ClaimCommand {
  return {
    key,
    holder,
    runId: `${holder}-run`,
    secret: randomBytes(16).toString('hex'),
    ttlMs: 60_000,
    attributes: {},
    recovering: false,
    ...extra,
  };
}

/** The fence of a granted claim. */
export function fenceOf(command: ClaimCommand, outcome: StoreClaimOutcome): Fence {
  if (!outcome.ok) throw new Error(`expected a grant, got ${outcome.reason}`);
  return { key: command.key, token: outcome.token, secret: command.secret, holder: command.holder, runId: command.runId };
}

/** How the record specs reach Postgres: a client to open, and the store's `prepare` option. */
export interface RecordSpecsTarget {
  readonly label: string;
  open(): Promise<OpenedClient>;
  readonly prepare?: boolean;
  /** The one-statement form (`fencedStatement`) is skipped where the client has no real server (PGlite runs it as the others do, but slowly). */
  readonly statementForm: boolean;
}

/** The record specs' target for a client kind of the harness. */
export function clientTarget(kind: PostgresClientKind): RecordSpecsTarget {
  return {
    label: kind,
    open: async () => openPostgresClient(kind, kind === 'pglite' ? '' : await sharedPostgresUrl()),
    statementForm: kind !== 'pglite',
  };
}

export function describePostgresRecordSpecs(target: RecordSpecsTarget): void {
  describe(`postgres record operations (${target.label})`, () => {
    let opened: OpenedClient;
    let table: string;
    let model: Modelled;
    let keyCount = 0;
    const fresh = (label: string) => `${label}:${++keyCount}`;
    const ledger = () => `"${table}_ledger"`;
    const ledgerRows = async (key: string) =>
      ((await opened.client.query(`SELECT note FROM ${ledger()} WHERE key = $1 ORDER BY id`, [key])).rows as Array<{ note: string }>).map(
        (row) => row.note,
      );

    beforeAll(async () => {
      opened = await target.open();
      table = freshTable('lf_record');
      const store = createPostgresStore({
        client: opened.client,
        table,
        ...(target.prepare === undefined ? {} : { prepare: target.prepare }),
      });
      await store.migrate();
      await opened.client.query(`CREATE TABLE ${ledger()} (id serial PRIMARY KEY, key text NOT NULL, note text NOT NULL)`);
      model = new Modelled(store);
    });
    afterAll(async () => {
      await opened?.close();
    });

    it('key state: a claim expects it, an unchanged value keeps the grant, a changed one ends it (state-changed, named), as the core says', async () => {
      const key = fresh('state');
      const a = claimOf(key, 'a', { expect: { rev: '1' } });
      expect(await model.claim(a)).toMatchObject({
        ok: false,
        reason: 'state-mismatch',
        field: { name: 'rev', expected: '1', found: null },
      });
      expect(await model.setKeyState({ key, values: { rev: '1', tier: 'canary' }, by: 'scanner' })).toMatchObject({
        changed: ['rev', 'tier'],
        ended: null,
      });
      const fence = fenceOf(a, await model.claim(a));
      expect(await model.setKeyState({ key, values: { rev: '1' }, by: 'scanner' })).toMatchObject({ changed: [], ended: null });
      expect(await model.renew(fence, 60_000)).toMatchObject({ ok: true });
      const changed = await model.setKeyState({ key, values: { tier: 'full', rev: '2', gone: null }, by: 'scanner' });
      expect(changed).toMatchObject({
        changed: ['rev', 'tier'],
        state: { rev: '2', tier: 'full' },
        ended: { kind: 'state-changed', token: fence.token, by: 'scanner', change: { name: 'rev', from: '1', to: '2' } },
      });
      expect(await model.renew(fence, 60_000)).toMatchObject({
        ok: false,
        reason: 'state-changed',
        attribute: { name: 'rev', expected: '1', found: '2' },
      });
      await model.setKeyState({ key, values: { rev: '3' }, by: 'scanner' });
      expect(await model.fencedWrite(fence, () => 1)).toMatchObject({ reason: 'state-changed', attribute: { expected: '1', found: '3' } });
      expect(await model.claim(claimOf(key, 'b', { expect: { rev: '2' } }))).toMatchObject({ reason: 'state-mismatch' });
      // NOTE: names required absent travel as a text[] literal: quotes, backslashes and commas must survive it.
      await model.setKeyState({ key, values: { 'we"ird\\na,me': 'x' }, by: 'scanner' });
      expect(await model.claim(claimOf(key, 'b', { expect: { rev: '3', 'we"ird\\na,me': null } }))).toMatchObject({
        reason: 'state-mismatch',
        field: { name: 'we"ird\\na,me', expected: null, found: 'x' },
      });
      await model.setKeyState({ key, values: { 'we"ird\\na,me': null }, by: 'scanner' });
      const b = claimOf(key, 'b', { expect: { rev: '3', absent: null, 'we"ird\\na,me': null } });
      expect(await model.claim(b)).toMatchObject({ ok: true, previous: { kind: 'state-changed' } });
      expect(await model.inspect(key)).toMatchObject({ state: { rev: '3', tier: 'full' }, heldUntil: null });
    });

    it('the first changed name is the first in code-unit order, not the collation order (U+FF21 before U+1F600)', async () => {
      const key = fresh('order');
      const a = claimOf(key, 'a');
      fenceOf(a, await model.claim(a));
      const outcome = await model.setKeyState({ key, values: { '\u{1F600}': 'x', '\uFF21': 'y', b: 'z' }, by: 'w' });
      expect(outcome.ended?.change?.name).toBe('b');
      const c = claimOf(key, 'c');
      fenceOf(c, await model.claim(c));
      expect((await model.setKeyState({ key, values: { '\u{1F600}': 'x2', '\uFF21': 'y2' }, by: 'w' })).ended?.change?.name).toBe(
        '\u{1F600}',
      );
    });

    it('an expired grant ended by a key-state change is recorded expired; setKeyState on a missing key creates the record, an empty change writes nothing', async () => {
      const key = fresh('expired');
      expect(await model.setKeyState({ key, values: { gone: null }, by: 'w' })).toMatchObject({ changed: [], ended: null });
      expect((await model.inspect(key)).exists).toBe(false);
      const a = claimOf(key, 'a', { ttlMs: 1 });
      fenceOf(a, await model.claim(a));
      await sleep(5);
      expect(await model.setKeyState({ key, values: { rev: '1' }, by: 'w' })).toMatchObject({ ended: { kind: 'expired' } });
      const other = fresh('created');
      expect(await model.setKeyState({ key: other, values: {}, by: 'w', holdMs: 60_000 })).toMatchObject({ changed: [] });
      expect(await model.inspect(other)).toMatchObject({ exists: true, token: 0n, state: {} });
      expect(await model.claim(claimOf(other, 'a'))).toMatchObject({ ok: false, reason: 'held-back' });
      await model.setKeyState({ key: other, values: {}, by: 'w', holdMs: null });
      expect(await model.claim(claimOf(other, 'a'))).toMatchObject({ ok: true });
    });

    it('release with holdMs holds the key back until the store clock reaches it; inspect and list show it and the state', async () => {
      const key = fresh('hold');
      const a = claimOf(key, 'a');
      const fence = fenceOf(a, await model.claim(a));
      await model.setKeyState({ key, values: { tier: '1' }, by: 'w' });
      const b = claimOf(key, 'b');
      const held = fenceOf(b, await model.claim(b));
      await model.release({ fence: held, holdMs: 150 });
      const refused = await model.claim(claimOf(key, 'c'));
      expect(refused).toMatchObject({ ok: false, reason: 'held-back' });
      const inspected = await model.inspect(key);
      expect(inspected.heldUntil).toBeGreaterThan(inspected.now);
      const page = await model.store.list!({ prefix: key, limit: 10, cursor: null });
      expect(page.leases[0]).toMatchObject({ key, state: { tier: '1' }, heldUntil: inspected.heldUntil });
      expect(fence.token < held.token).toBe(true);
      await sleep(200);
      expect(await model.inspect(key)).toMatchObject({ heldUntil: null });
      expect(await model.claim(claimOf(key, 'c'))).toMatchObject({ ok: true });
    });

    it('remove: refused while held unless forced, superseded on another token; the old grant then says missing; tokens stay above', async () => {
      const key = fresh('remove');
      expect(await model.remove({ key, force: false, expectedToken: null })).toMatchObject({ ok: false, reason: 'missing' });
      const a = claimOf(key, 'a');
      const fence = fenceOf(a, await model.claim(a));
      await model.setKeyState({ key, values: { rev: '1' }, by: 'w' });
      const b = claimOf(key, 'b');
      const second = fenceOf(b, await model.claim(b));
      await model.fencedWrite(second, () => 1, submissionOf('r1', 'p1'));
      expect(await model.remove({ key, force: false, expectedToken: null })).toMatchObject({ ok: false, reason: 'held' });
      expect(await model.remove({ key, force: true, expectedToken: fence.token })).toMatchObject({ ok: false, reason: 'superseded' });
      expect(await model.remove({ key, force: true, expectedToken: second.token })).toMatchObject({ ok: true, token: second.token });
      expect(await model.renew(second, 1_000)).toMatchObject({ ok: false, reason: 'missing' });
      expect(await model.fencedWrite(second, () => 1)).toMatchObject({ ok: false, reason: 'missing' });
      expect(await model.inspect(key)).toMatchObject({ exists: false, state: {} });
      const c = claimOf(key, 'c');
      const again = fenceOf(c, await model.claim(c));
      expect(again.token > second.token).toBe(true);
      // NOTE: the submission went with the record: the same run id is recorded again under the new grant.
      expect(await model.fencedWrite(again, () => 1, submissionOf('r1', 'p1'))).toMatchObject({ ok: true });
    });

    it('a key removed and claimed again within the same millisecond, or whose tokens ran ahead of the clock, never reissues a token', async () => {
      const key = fresh('floor');
      // NOTE: a table of its own: the removed-token floor is the table's, and this test raises it by an hour.
      const floorTable = freshTable('lf_floor');
      const store = createPostgresStore({
        client: opened.client,
        table: floorTable,
        ...(target.prepare === undefined ? {} : { prepare: target.prepare }),
      });
      await store.migrate();
      const model = new Modelled(store);
      let highest = 0n;
      for (let round = 0; round < 40; round += 1) {
        const a = claimOf(key, 'a');
        const fence = fenceOf(a, await model.claim(a));
        expect(fence.token > highest).toBe(true);
        highest = fence.token;
        await model.remove({ key, force: true, expectedToken: null });
      }
      const a = claimOf(key, 'a');
      const fence = fenceOf(a, await model.claim(a));
      // NOTE: tokens an hour ahead of the clock (as after more grants than microseconds, or a restored store).
      const ahead = fence.token + 3_600_000_000_000n;
      await opened.client.query(`UPDATE "${floorTable}" SET token = $2, holder = NULL WHERE key = $1`, [key, ahead.toString()]);
      const removed = await model.store.remove({ key, force: true, expectedToken: null });
      expect(removed).toMatchObject({ ok: true, token: ahead });
      const c = claimOf(key, 'c');
      const outcome = await model.store.claim(c);
      expect(outcome.ok && outcome.token > ahead).toBe(true);
      // NOTE: also through setKeyState (a record of token 0) and the placeholder of a waiter's interest.
      await model.store.remove({ key, force: true, expectedToken: null });
      await model.store.setKeyState({ key, values: { rev: '1' }, by: 'w' });
      const d = await model.store.claim(claimOf(key, 'd'));
      expect(d.ok && outcome.ok && d.token > outcome.token).toBe(true);
    });

    it('submissions: recorded once with the write; a retry is replayed (also after the lease ended), another payload is a conflict', async () => {
      const key = fresh('submit');
      const a = claimOf(key, 'a');
      const fence = fenceOf(a, await model.claim(a));
      const write = async (tx: { query(text: string, params?: unknown[]): Promise<unknown> }) => {
        await tx.query(`INSERT INTO ${ledger()} (key, note) VALUES ($1, 'a')`, [key]);
        return 'wrote';
      };
      expect(await model.fencedWrite(fence, write, submissionOf('run-1', 'payload'))).toMatchObject({ ok: true, value: 'wrote' });
      expect(await model.fencedWrite(fence, write, submissionOf('run-1', 'payload'))).toMatchObject({
        ok: false,
        reason: 'replayed',
        submission: { runId: 'run-1', token: fence.token, receiptJson: '{"receipt":"payload"}' },
      });
      expect(await model.fencedWrite(fence, write, submissionOf('run-1', 'other'))).toMatchObject({ ok: false, reason: 'replay-conflict' });
      await model.release({ fence });
      expect(await model.fencedWrite(fence, write, submissionOf('run-1', 'payload'))).toMatchObject({ reason: 'replayed' });
      expect(await model.fencedWrite(fence, write, submissionOf('run-2', 'payload'))).toMatchObject({ reason: 'released' });
      const b = claimOf(key, 'b');
      const other = fenceOf(b, await model.claim(b));
      expect(await model.fencedWrite(other, write, submissionOf('run-1', 'payload', true))).toMatchObject({ reason: 'replay-conflict' });
      expect(await model.fencedWrite(fence, write, submissionOf('run-1', 'payload', true))).toMatchObject({ reason: 'replayed' });
      expect(await ledgerRows(key)).toEqual(['a']);
    });

    it.runIf(target.statementForm)(
      'submissions in the one-statement form: recorded in the statement, replayed before the fence',
      async () => {
        const key = fresh('statement');
        const a = claimOf(key, 'a');
        const fence = fenceOf(a, await model.claim(a));
        const text = `INSERT INTO ${ledger()} (key, note) SELECT fence.key, $1 FROM fence RETURNING id`;
        expect(await model.fencedStatement(fence, text, ['s1'], submissionOf('run-s', 'p'))).toMatchObject({ ok: true, rowCount: 1 });
        expect(await model.fencedStatement(fence, text, ['s2'], submissionOf('run-s', 'p'))).toMatchObject({ reason: 'replayed' });
        expect(await model.fencedStatement(fence, text, ['s3'], submissionOf('run-s', 'q'))).toMatchObject({ reason: 'replay-conflict' });
        await model.release({ fence });
        expect(await model.fencedStatement(fence, text, ['s4'], submissionOf('run-s', 'p'))).toMatchObject({ reason: 'replayed' });
        expect(await model.fencedStatement(fence, text, ['s5'], submissionOf('run-t', 'p'))).toMatchObject({ reason: 'released' });
        expect(await ledgerRows(key)).toEqual(['s1']);
      },
    );

    it('a key keeps its newest 32 submissions: the oldest is forgotten (its run id records again), the rest replay', async () => {
      const key = fresh('retention');
      const a = claimOf(key, 'a');
      const fence = fenceOf(a, await model.claim(a));
      for (let i = 0; i < 34; i += 1) await model.fencedWrite(fence, () => i, submissionOf(`run-${i}`, 'p'));
      expect(await model.fencedWrite(fence, () => 0, submissionOf('run-2', 'p'))).toMatchObject({ reason: 'replayed' });
      expect(await model.fencedWrite(fence, () => 0, submissionOf('run-0', 'p'))).toMatchObject({ ok: true });
      expect(await model.fencedWrite(fence, () => 0, submissionOf('run-1', 'p'))).toMatchObject({ ok: true });
      // NOTE: run-0 and run-1 recorded again pushed run-2 and run-3 out of the window.
      expect(await model.fencedWrite(fence, () => 0, submissionOf('run-3', 'p'))).toMatchObject({ ok: true });
      expect(await model.fencedWrite(fence, () => 0, submissionOf('run-6', 'p'))).toMatchObject({ reason: 'replayed' });
      const { rows } = await opened.client.query(`SELECT count(*)::int AS n FROM "${table}_submissions" WHERE key = $1`, [key]);
      expect((rows[0] as { n: number }).n).toBe(32);
    });

    it('a write that refuses itself (context.refuse) rolls back its statements, the checkpoint and the submission: write-refused', async () => {
      const key = fresh('refuse');
      const a = claimOf(key, 'a');
      const fence = fenceOf(a, await model.claim(a));
      const outcome = await model.store.fencedWrite(
        fence,
        async (tx) => {
          await tx.query(`INSERT INTO ${ledger()} (key, note) VALUES ($1, 'refused')`, [key]);
          tx.refuse('owner-inactive', 'account 7 is inactive');
        },
        { checkpointJson: '{"step":1}', submission: submissionOf('run-r', 'p') },
      );
      expect(outcome).toEqual({
        ok: false,
        reason: 'write-refused',
        key,
        code: 'owner-inactive',
        detail: 'account 7 is inactive',
        token: fence.token,
        now: outcome.now,
      });
      expect(await ledgerRows(key)).toEqual([]);
      expect(await model.inspect(key)).toMatchObject({ checkpoint: null });
      expect(await model.fencedWrite(fence, () => 'later', submissionOf('run-r', 'p'))).toMatchObject({ ok: true, value: 'later' });
      await expect(model.store.fencedWrite(fence, (tx) => tx.refuse('bad code!'))).rejects.toThrow(InvalidArgumentError);
    });

    it('bad input to the new operations is refused before any I/O', async () => {
      const key = fresh('bad');
      const store = model.store;
      expect(() => store.setKeyState({ key, values: { 'a\u0000': '1' }, by: 'w' })).toThrow(InvalidArgumentError);
      expect(() => store.setKeyState({ key, values: { a: 1 as unknown as string }, by: 'w' })).toThrow(InvalidArgumentError);
      expect(() => store.setKeyState({ key, values: {}, by: 'w', holdMs: -1 })).toThrow(InvalidArgumentError);
      expect(() => store.setKeyState({ key, values: {}, by: 'w', holdMs: 1.5 })).toThrow(InvalidArgumentError);
      expect(() => store.setKeyState({ key, values: {}, by: 'w', holdMs: Number.MAX_SAFE_INTEGER })).toThrow(InvalidArgumentError);
      expect(() => store.remove({ key: '\uD800', force: false, expectedToken: null })).toThrow(InvalidArgumentError);
      expect(() => store.claim(claimOf(key, 'a', { expect: { rev: '\uD800' } }))).toThrow(InvalidArgumentError);
      const fence = { key, token: 1n, secret: 's', holder: 'a', runId: null };
      expect(() => store.fencedWrite(fence, () => 1, { submission: { ...submissionOf('r', 'p'), digest: 'nope' } })).toThrow(
        InvalidArgumentError,
      );
      expect(() => store.fencedWrite(fence, () => 1, { submission: { ...submissionOf('', 'p') } })).toThrow(InvalidArgumentError);
      expect(await store.inspect(key)).toMatchObject({ exists: false });
    });
  });
}
