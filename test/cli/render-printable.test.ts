/**
 * The CLI's views escape caller text: for any key, holder, run id, attribute, reason, `by`, resource and
 * checkpoint (controls, CSI, line separators, bidi overrides, lone surrogates), the tables, the inspection,
 * the gate line and the JSON print no unsafe character and no line of the caller's; the JSON parses back to
 * exactly the values given; table columns line up on the printed text.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatGate, formatInspection, formatLeaseTable, toJson } from '../../src/cli/render.js';
import { formatTable } from '../../src/cli/table.js';
import type { LeaseInspection } from '../../src/leases-types.js';
import type { ListedLease } from '../../src/operator.js';
import { UNSAFE_ON_A_TERMINAL as UNSAFE } from './cli-harness.js';

const hostileUnit = fc.oneof(
  fc.constantFrom(
    '\u001b',
    '[2J',
    '\n',
    '\r',
    '\t',
    '\u0000',
    '\u0007',
    '\u007f',
    '\u009b',
    '\u0085',
    '\u2028',
    '\u2029',
    '\u202e',
    '\u2066',
    '\u2069',
    'FORGED',
  ),
  fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit)),
  fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
);
const text = fc.array(hostileUnit, { minLength: 1, maxLength: 12 }).map((units) => units.join(''));
const NOW = 1_800_000_000_000;

const grant = fc.record({
  token: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }),
  holder: text,
  runId: fc.option(text),
  acquiredAt: fc.constant(NOW - 5_000),
  expiresAt: fc.option(fc.constant(NOW + 5_000)),
  attributes: fc.dictionary(text, text, { maxKeys: 2 }),
  live: fc.boolean(),
});
const plainEnding = fc.record({
  kind: fc.constantFrom('released' as const, 'expired' as const, 'revoked' as const),
  token: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }),
  holder: text,
  runId: fc.option(text),
  at: fc.constant(NOW - 1_000),
  reason: fc.option(text),
  by: fc.option(text),
});
const stateChangedEnding = fc.record({
  kind: fc.constant('state-changed' as const),
  token: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }),
  holder: text,
  runId: fc.option(text),
  at: fc.constant(NOW - 1_000),
  reason: fc.constant(null),
  by: fc.option(text),
  change: fc.record({ name: text, from: fc.option(text), to: fc.option(text) }),
});
const ending = fc.oneof(plainEnding, stateChangedEnding);
const listed: fc.Arbitrary<ListedLease> = fc.record({
  key: text,
  state: fc.constantFrom('live' as const, 'expired' as const, 'released' as const, 'revoked' as const),
  token: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
  grant: fc.option(grant),
  ending: fc.option(ending),
  checkpoint: fc.option(
    fc.record({ token: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }), writtenAt: fc.constant(NOW - 2_000), bytes: fc.nat() }),
  ),
  recoveryRequired: fc.boolean(),
  keyState: fc.dictionary(text, text, { maxKeys: 3 }),
  heldUntil: fc.option(fc.constant(NOW + 60_000)),
  now: fc.constant(NOW),
});
const inspection: fc.Arbitrary<LeaseInspection> = fc.record({
  key: text,
  exists: fc.constant(true),
  token: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
  grant: fc.option(grant),
  ending: fc.option(ending),
  checkpoint: fc.option(
    fc.record({
      value: fc.jsonValue().chain((value) => fc.oneof(fc.constant(value), fc.dictionary(text, text, { maxKeys: 3 }))),
      token: fc.bigInt({ min: 1n, max: 10n }),
      writtenAt: fc.constant(NOW - 2_000),
    }),
  ),
  recoveryRequired: fc.boolean(),
  state: fc.dictionary(text, text, { maxKeys: 3 }),
  heldUntil: fc.option(fc.constant(NOW + 60_000)),
  waiters: fc.array(fc.record({ waiterId: text, holder: text, arrivedAt: fc.constant(NOW - 1_000), expiresAt: fc.constant(NOW + 9_000) }), {
    maxLength: 2,
  }),
  now: fc.constant(NOW),
});

/** `value` as `toJson` promises it: bigints as decimal strings, everything else as `JSON.stringify` keeps it. */
const asJson = (value: unknown): unknown =>
  JSON.parse(JSON.stringify(value, (_, field: unknown) => (typeof field === 'bigint' ? field.toString() : field)));

/** Lines that start anywhere but in the view's own text are forged: count them. */
const lineCount = (printed: string): number => printed.split('\n').length;

describe('CLI views of hostile caller text', () => {
  it('the lease table: one escaped line per lease, columns aligned on the printed text', () => {
    fc.assert(
      fc.property(fc.array(listed, { maxLength: 4 }), (leases) => {
        const table = formatLeaseTable(leases);
        expect(table).not.toMatch(UNSAFE);
        expect(lineCount(table)).toBe(leases.length + 1);
        // Aligned: each of the first six columns ends at the same code-point offset (two spaces, then the next cell).
        const lines = table.split('\n').map((line) => [...line]);
        const header = lines[0] ?? [];
        const starts = ['STATE', 'TOKEN', 'HOLDER', 'EXPIRES', 'CHECKPOINT', 'LAST'].map((column) => header.join('').indexOf(column));
        for (const line of lines) for (const at of starts) expect(line.slice(at - 2, at).join('')).toBe('  ');
      }),
    );
  });

  it('the inspection: escaped fields, the checkpoint as JSON of its value', () => {
    fc.assert(
      fc.property(inspection, (lease) => {
        const view = formatInspection(lease);
        expect(view).not.toMatch(UNSAFE);
        const [table = '', json] = view.split('\n\n');
        const optional =
          (lease.grant !== null && Object.keys(lease.grant.attributes).length > 0 ? 1 : 0) +
          (Object.keys(lease.state).length > 0 ? 1 : 0) +
          (lease.heldUntil !== null ? 1 : 0) +
          (lease.waiters.length > 0 ? 1 : 0);
        expect(lineCount(table)).toBe(10 + optional);
        if (lease.checkpoint !== null) expect(JSON.parse(json ?? '')).toEqual(asJson(lease.checkpoint.value));
      }),
    );
  });

  it('the gate line: one escaped line', () => {
    fc.assert(
      fc.property(
        text,
        fc.option(fc.record({ key: text, token: fc.bigInt({ min: 1n, max: 10n }) })),
        fc.constantFrom('holds' as const, 'forgot' as const),
        (resource, found, verb) => {
          const line = formatGate({ resource, found }, verb);
          expect(line).not.toMatch(UNSAFE);
          expect(lineCount(line)).toBe(1);
        },
      ),
    );
  });

  it('--json: exact JSON of the values (no double escaping), nothing unsafe, one line when asked', () => {
    fc.assert(
      fc.property(fc.array(listed, { maxLength: 3 }), fc.constantFrom(0, 2), (leases, indent) => {
        const json = toJson(leases, indent);
        expect(json).not.toMatch(UNSAFE);
        expect(JSON.parse(json)).toEqual(asJson(leases));
        if (indent === 0) expect(lineCount(json)).toBe(1);
      }),
    );
  });

  it('escapes the cells before measuring them', () => {
    expect(
      formatTable(
        ['KEY', 'STATE'],
        [
          ['a\u001bb\n', 'live'],
          ['abcdefghijkl', 'released'],
        ],
      ),
    ).toBe(['KEY           STATE', 'a\\u001bb\\n    live', 'abcdefghijkl  released'].join('\n'));
  });
});
