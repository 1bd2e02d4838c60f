/**
 * Between Redis and the pure core: fences and claims as script arguments, and a script reply (the record's
 * pre-image, the server's now and token floor) as a `LeaseRecord` the pure transitions can judge.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { CheckpointRecord, Ending, EndingKind, Fence, GrantState, LeaseAttributes, LeaseRecord, StoreTime } from '../../fence/types.js';
import { isWellFormed } from './keys.js';
import { RECORD_FIELDS, STATUS_OFFSET } from './scripts.js';

/** A lease script's reply, decoded. */
export interface LeaseReply {
  /** Whether the script changed the record. */
  readonly applied: boolean;
  /** The server's clock (`TIME`) when the script ran, in epoch ms. */
  readonly now: StoreTime;
  /** The token floor: `TIME` in epoch microseconds. */
  readonly floor: bigint;
  /** The record as it was before the script (its secret replaced, see `toRecord`). */
  readonly record: LeaseRecord | null;
  /** Whatever the script appended after the record fields. */
  readonly rest: readonly unknown[];
}

/** Stands for a stored secret that differs from the presented one (no valid secret contains NUL). */
const OTHER_SECRET = '\u0000other';

/** An optional string as a script argument: `''` for null, else `'='` + value. */
export const optionalArg = (value: string | null): string => (value === null ? '' : `=${value}`);

/** A TTL as a script argument: `''` for no expiry. */
export const ttlArg = (ttlMs: number | null): string => (ttlMs === null ? '' : String(ttlMs));

/** Attributes as stored: JSON text, `''` when there are none. */
export const attributesArg = (attributes: LeaseAttributes): string => (Object.keys(attributes).length === 0 ? '' : JSON.stringify(attributes));

/** Refuses text Redis would not store exactly (a lone surrogate becomes U+FFFD), before any I/O. */
export function assertStorable(what: string, ...texts: ReadonlyArray<string | null | undefined>): void {
  for (const text of texts) {
    if (typeof text === 'string' && !isWellFormed(text)) throw new InvalidArgumentError(`${what} contains a lone UTF-16 surrogate, which Redis cannot store exactly`);
  }
}

/** A fence as script arguments: token, secret, holder, run, attribute count, name/value pairs. */
export function fenceArgs(fence: Fence): string[] {
  const attributes = Object.entries(fence.attributes ?? {});
  assertStorable('fence', fence.key, fence.secret, fence.holder, fence.runId, ...attributes.flat());
  return [fence.token.toString(), fence.secret, fence.holder, optionalArg(fence.runId), String(attributes.length), ...attributes.flat()];
}

type Fields = Readonly<Partial<Record<(typeof RECORD_FIELDS)[number], string>>>;

const text = (value: unknown): string | undefined => (value === null || value === undefined || value === false ? undefined : String(value));

function grantOf(fields: Fields, presentedSecret: string): GrantState | null {
  const { holder, token } = fields;
  if (holder === undefined || token === undefined) return null;
  return {
    token: BigInt(token),
    holder,
    runId: fields.run ?? null,
    secret: fields.secret === '1' ? presentedSecret : OTHER_SECRET,
    acquiredAt: Number(fields.acquired),
    expiresAt: fields.expires === undefined ? null : Number(fields.expires),
    attributes: Object.freeze(fields.attrs === undefined ? {} : (JSON.parse(fields.attrs) as Record<string, string>)),
  };
}

function endingOf(fields: Fields): Ending | null {
  if (fields.ending === undefined) return null;
  return {
    kind: fields.ending as EndingKind,
    token: BigInt(fields.ending_token ?? '0'),
    holder: fields.ending_holder ?? '',
    runId: fields.ending_run ?? null,
    at: Number(fields.ending_at),
    reason: fields.ending_reason ?? null,
    by: fields.ending_by ?? null,
  };
}

function checkpointOf(fields: Fields): CheckpointRecord | null {
  if (fields.checkpoint === undefined) return null;
  return { json: fields.checkpoint, token: BigInt(fields.checkpoint_token ?? '0'), writtenAt: Number(fields.checkpoint_at) };
}

/**
 * Rebuilds the record from its hash fields. The grant's `secret` is the presented secret when the script
 * reported a match, else a value no fence can present: the core only ever compares secrets.
 */
export function toRecord(key: string, fields: Fields, presentedSecret: string): LeaseRecord | null {
  if (fields.token === undefined) return null;
  return {
    key,
    token: BigInt(fields.token),
    grant: grantOf(fields, presentedSecret),
    ending: endingOf(fields),
    checkpoint: checkpointOf(fields),
    recoveryRequired: fields.recovery === '1',
  };
}

/** Decodes a lease script's reply: the record fields, then applied, now, floor, then the script's extras. */
export function parseLeaseReply(reply: unknown, key: string, presentedSecret: string): LeaseReply {
  if (!Array.isArray(reply) || reply.length < STATUS_OFFSET + 3) {
    throw new Error(`leasefence redis: unexpected script reply ${JSON.stringify(reply)}`);
  }
  const fields: Record<string, string | undefined> = {};
  RECORD_FIELDS.forEach((name, index) => (fields[name] = text(reply[index])));
  return {
    applied: Number(reply[STATUS_OFFSET]) === 1,
    now: Number(reply[STATUS_OFFSET + 1]),
    floor: BigInt(String(reply[STATUS_OFFSET + 2])),
    record: toRecord(key, fields, presentedSecret),
    rest: reply.slice(STATUS_OFFSET + 3),
  };
}
