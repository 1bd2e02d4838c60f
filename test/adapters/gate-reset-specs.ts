/**
 * A token gate's reset with an expectation, the same on every store and client (memory, SQLite, Postgres on
 * pg, postgres.js and PGlite, Redis on ioredis and node-redis): the reset forgets a resource only if the gate
 * still records the expected token (and key), judged in the same atomic step as the delete; otherwise it
 * answers `superseded` with what it found and changes nothing. The CLI's confirmed `gate reset` relies on it
 * (issue 29 item 7).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GateRecord, GateResetOptions, GateResetOutcome } from '../../src/fence/operations.js';

/** A gate ordering writers by token only (so a spec can write any key and token), on a fresh table or prefix. */
export interface ResettableGate {
  inspect(resource: string): Promise<GateRecord>;
  reset(resource: string, options?: GateResetOptions): Promise<GateResetOutcome>;
}

/** What one store gives the specs. */
export interface GateResetSubject {
  readonly gate: ResettableGate;
  /** Writes `resource` through the gate as `key`'s grant `token`: whether the gate let it write. */
  write(resource: string, key: string, token: bigint): Promise<boolean>;
  /** The statements or commands the gate's connection sent during `run` (absent: not countable, in-process I/O). */
  readonly sentDuring?: (run: () => Promise<unknown>) => Promise<readonly string[]>;
}

let resources = 0;
const fresh = (label: string): string => `reset-${label}:${++resources}`;

/** Registers the specs; `subject` is called inside each test (after the caller's `beforeAll`), and may reuse one gate. */
export function describeGateResetSpecs(
  subject: () => GateResetSubject | Promise<GateResetSubject>,
  options: { readonly raceRuns: number },
): void {
  describe('token gate reset with an expectation', () => {
    it('a reset whose expected token or key is not what the gate records changes nothing and says what it found', async () => {
      const { gate, write } = await subject();
      const resource = fresh('stale');
      expect(await write(resource, 'job', 5n)).toBe(true);
      // The operator saw token 5; a newer grant writes before the reset arrives.
      const seen = await gate.inspect(resource);
      expect(seen.found).toEqual({ key: 'job', token: 5n });
      expect(await write(resource, 'job', 6n)).toBe(true);
      expect(await gate.reset(resource, { expectedToken: 5n, expectedKey: 'job' })).toEqual({
        ok: false,
        reason: 'superseded',
        resource,
        expected: { key: 'job', token: 5n },
        found: { key: 'job', token: 6n },
      });
      expect(await gate.reset(resource, { expectedToken: 5n })).toEqual({
        ok: false,
        reason: 'superseded',
        resource,
        expected: { key: null, token: 5n },
        found: { key: 'job', token: 6n },
      });
      expect(await gate.reset(resource, { expectedToken: 6n, expectedKey: 'other' })).toMatchObject({
        ok: false,
        reason: 'superseded',
        expected: { key: 'other', token: 6n },
        found: { key: 'job', token: 6n },
      });
      expect(await gate.inspect(resource)).toEqual({ resource, found: { key: 'job', token: 6n } });
      // The record is kept as it was: an older token is still refused.
      expect(await write(resource, 'job', 5n)).toBe(false);
      expect(await gate.reset(resource, { expectedToken: 6n, expectedKey: 'job' })).toEqual({
        ok: true,
        resource,
        found: { key: 'job', token: 6n },
      });
      expect(await gate.inspect(resource)).toEqual({ resource, found: null });
    });

    it('an expectation on a resource the gate does not record is refused with found: null; without one, reset forgets whatever is there', async () => {
      const { gate, write } = await subject();
      const resource = fresh('empty');
      expect(await gate.reset(resource, { expectedToken: 1n })).toEqual({
        ok: false,
        reason: 'superseded',
        resource,
        expected: { key: null, token: 1n },
        found: null,
      });
      expect(await gate.inspect(resource)).toEqual({ resource, found: null });
      expect(await gate.reset(resource)).toEqual({ ok: true, resource, found: null });
      expect(await write(resource, 'job', 2n ** 62n + 1n)).toBe(true);
      // NOTE: past 2^53, the comparison is exact (a double would take 2^62 for 2^62 + 1).
      expect(await gate.reset(resource, { expectedToken: 2n ** 62n })).toMatchObject({ ok: false, found: { token: 2n ** 62n + 1n } });
      expect(await gate.reset(resource, { expectedToken: 2n ** 62n + 1n })).toEqual({
        ok: true,
        resource,
        found: { key: 'job', token: 2n ** 62n + 1n },
      });
      expect(await write(resource, 'job', 3n)).toBe(true);
      expect(await gate.reset(resource)).toEqual({ ok: true, resource, found: { key: 'job', token: 3n } });
    });

    it('a bad expectation is refused with INVALID_ARGUMENT before anything is sent, and the record is kept', async () => {
      const { gate, write, sentDuring } = await subject();
      const resource = fresh('bad');
      expect(await write(resource, 'job', 5n)).toBe(true);
      const bad: unknown[] = [
        { expectedToken: 5 },
        { expectedToken: '5' },
        { expectedToken: 0n },
        { expectedToken: -5n },
        { expectedToken: 2n ** 63n },
        { expectedKey: 'job' },
        { expectedToken: 5n, expectedKey: '' },
        { expectedToken: 5n, expectedKey: 5 },
        { expectedToken: 5n, expectedKey: 'bad\u0000key' },
        null,
        'expectedToken=5',
      ];
      for (const options of bad) {
        const attempt = async () =>
          expect(gate.reset(resource, options as GateResetOptions)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
        if (sentDuring === undefined) await attempt();
        else expect({ options, sent: await sentDuring(attempt) }).toEqual({ options, sent: [] });
      }
      expect(await gate.inspect(resource)).toEqual({ resource, found: { key: 'job', token: 5n } });
    });

    it('a newer write that races an operator between the read and the reset is never forgotten unseen: the reset forgets only what the operator read, or is refused with the newer write', async () => {
      const { gate, write } = await subject();
      await fc.assert(
        fc.asyncProperty(fc.scheduler(), async (s) => {
          const resource = fresh('race');
          expect(await write(resource, 'job', 5n)).toBe(true);
          const operator = (async () => {
            await s.schedule(Promise.resolve(), 'operator reads');
            const seen = (await s.schedule(gate.inspect(resource), 'read answer')).found as NonNullable<GateRecord['found']>;
            await s.schedule(Promise.resolve(), 'operator resets');
            const reset = await s.schedule(gate.reset(resource, { expectedToken: seen.token, expectedKey: seen.key }), 'reset answer');
            return { seen, reset };
          })();
          const writer = (async () => {
            await s.schedule(Promise.resolve(), 'writer writes token 6');
            return s.schedule(write(resource, 'job', 6n), 'write answer');
          })();
          const [{ seen, reset }, written] = await s.waitFor(Promise.all([operator, writer]));
          // Token 6 was written (5 or nothing was there); only an operator who read 6 may have forgotten it.
          expect(written).toBe(true);
          if (reset.ok) expect(reset.found).toEqual(seen);
          else
            expect(reset).toEqual({
              ok: false,
              reason: 'superseded',
              resource,
              expected: { key: 'job', token: 5n },
              found: { key: 'job', token: 6n },
            });
          const forgotSix = reset.ok && seen.token === 6n;
          expect(await gate.inspect(resource)).toEqual({ resource, found: forgotSix ? null : { key: 'job', token: 6n } });
        }),
        { numRuns: options.raceRuns },
      );
    });
  });
}
