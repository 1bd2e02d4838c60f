/**
 * Issue 9 finding 9: keys, holders, runs, reasons and `by` are caller text. Every human-readable message
 * (`describeRefusal`, every error message) escapes control characters, so a newline cannot forge a log line
 * and an ANSI escape cannot rewrite a terminal.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createMemoryStore, createMemoryTokenGate } from '../../src/adapters/memory/index.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { describeRefusal } from '../../src/describe.js';
import { printable } from '../../src/printable.js';
import { createLeases } from '../../src/leases.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';
import { thrownBy } from './setup.js';

/** Characters that must never reach a message raw: C0, DEL, C1, line/paragraph separators, bidi controls. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is what this pattern is for
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const EVIL = 'x\n2026-01-01 INFO forged line\r\u001b[2J\u009b31m\u202eevil\u2028';

describe('printable', () => {
  it('leaves no control, separator or bidi character, and changes nothing else', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const shown = printable(text);
        expect(UNSAFE.test(shown)).toBe(false);
        if (!UNSAFE.test(text)) expect(shown).toBe(text);
      }),
    );
    expect(printable('a\nb\u001b[31m')).toBe('a\\nb\\u001b[31m');
  });
});

describe('messages escape caller text', () => {
  it('describeRefusal, LeaseLostError, LeaseBusyError, RecoveryRequiredError, GateRefusedError and InvalidArgumentError', async () => {
    const clock = createManualClock(MEMORY_EPOCH);
    const store = createMemoryStore({ clock });
    const evil = createLeases(store, { holder: `holder${EVIL}`, ttlMs: 1_000 });
    const other = createLeases(store, { holder: 'other', ttlMs: 1_000 });
    const key = `key${EVIL}`;
    const lease = await evil.claimOrThrow(key, { runId: `run${EVIL}` });
    const messages: string[] = [];
    messages.push(((await thrownBy(() => other.claimOrThrow(key))) as Error).message);
    await other.revoke(key, { reason: `reason${EVIL}`, by: `by${EVIL}`, requireRecovery: false });
    const refusal = await evil.fencedWrite(lease, () => 1);
    if (refusal.ok) throw new Error('expected a refusal');
    messages.push(describeRefusal(refusal), ((await thrownBy(() => evil.renewOrThrow(lease))) as Error).message);
    await evil.checkpoint(await evil.claimOrThrow(`${key}2`), 1);
    await other.revoke(`${key}2`, { reason: 'r', by: `by${EVIL}`, requireRecovery: true });
    messages.push(((await thrownBy(() => other.claimOrThrow(`${key}2`))) as Error).message);
    const gate = createMemoryTokenGate();
    await evil.gateWrite(gate, `file${EVIL}`, await evil.claimOrThrow(`${key}3`), () => 1);
    messages.push(
      (
        (await thrownBy(() =>
          other.gateWriteOrThrow(gate, `file${EVIL}`, other.restore({ ...lease.export(), storeId: store.id }), () => 1),
        )) as Error
      ).message,
    );
    messages.push(new InvalidArgumentError(`bad ${EVIL}`).message);
    for (const message of messages) {
      expect(message).toContain('\\n');
      expect(UNSAFE.test(message)).toBe(false);
    }
    expect(messages[1]).toContain('revoked at');
    expect(messages[1]).toContain('by by');
  });
});
