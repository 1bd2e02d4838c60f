/**
 * Input validation, run before any store access: bad input gets an `InvalidArgumentError` and never
 * reaches a store, so it can never corrupt a lease.
 */
import { InvalidArgumentError } from './errors.js';
import type { LeaseAttributes } from './fence/types.js';

/** The longest key, holder, run id, attribute name or value accepted, in UTF-16 code units. */
export const MAX_NAME_LENGTH = 1024;

/** The longest TTL accepted: one year. Leases that must outlive that take `ttlMs: null` (no expiry). */
export const MAX_TTL_MS: number = 365 * 24 * 60 * 60 * 1000;

/** The default checkpoint size limit in UTF-8 bytes of its JSON text. */
export const DEFAULT_MAX_CHECKPOINT_BYTES: number = 64 * 1024;

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  return String(value);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Text every store can keep exactly: no NUL (Postgres text refuses it) and no lone UTF-16 surrogate (stores
 * keep UTF-8, where it becomes U+FFFD, so two different keys could land on one record).
 */
export function assertStorableText(what: string, value: string): void {
  if (value.includes('\u0000')) throw new InvalidArgumentError(`${what} must not contain NUL characters`);
  if (LONE_SURROGATE.test(value)) throw new InvalidArgumentError(`${what} contains a lone UTF-16 surrogate, which a store cannot keep exactly`);
}

/** A non-empty string of at most `MAX_NAME_LENGTH` code units that every store can keep exactly. */
export function assertName(what: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidArgumentError(`${what} must be a non-empty string, got ${describe(value)}`);
  }
  if (value.length > MAX_NAME_LENGTH) throw new InvalidArgumentError(`${what} must be at most ${MAX_NAME_LENGTH} characters, got ${value.length}`);
  assertStorableText(what, value);
}

/** A lease key. */
export function assertKey(key: unknown): asserts key is string {
  assertName('key', key);
}

/** A TTL: a positive integer number of milliseconds up to `MAX_TTL_MS`, or `null` for no expiry. */
export function assertTtl(ttlMs: unknown): asserts ttlMs is number | null {
  if (ttlMs === null) return;
  if (typeof ttlMs !== 'number' || !Number.isInteger(ttlMs) || ttlMs <= 0 || ttlMs > MAX_TTL_MS) {
    throw new InvalidArgumentError(`ttlMs must be a positive integer number of milliseconds up to ${MAX_TTL_MS}, or null for no expiry; got ${describe(ttlMs)}`);
  }
}

/** An optional run id: a name or null. */
export function assertRunId(runId: unknown): asserts runId is string | null {
  if (runId !== null) assertName('runId', runId);
}

/** Attributes: a plain object of string values with valid names. Returns a frozen copy. */
export function toAttributes(attributes: unknown): LeaseAttributes {
  if (attributes === undefined) return Object.freeze({});
  if (!isPlainObject(attributes)) throw new InvalidArgumentError(`attributes must be a plain object of strings, got ${describe(attributes)}`);
  const copy: Record<string, string> = {};
  for (const [name, value] of Object.entries(attributes)) {
    assertName('attribute name', name);
    if (typeof value !== 'string') throw new InvalidArgumentError(`attribute ${name} must be a string, got ${describe(value)}`);
    assertName(`attribute ${name}`, value);
    copy[name] = value;
  }
  return Object.freeze(copy);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Serialises a checkpoint to JSON text, refusing anything JSON would silently change or drop: undefined,
 * functions, symbols, bigint, non-finite numbers, class instances (Date, Map, ...), cycles. Then checks
 * the size of the text in UTF-8 bytes.
 */
export function serializeCheckpoint(value: unknown, maxBytes: number): string {
  assertJson(value, '$', new Set());
  const json = JSON.stringify(value);
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > maxBytes) throw new InvalidArgumentError(`checkpoint is ${bytes} bytes of JSON, over the limit of ${maxBytes}`);
  return json;
}

function assertJson(value: unknown, path: string, ancestors: Set<object>): void {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new InvalidArgumentError(`checkpoint is not JSON: ${path} is ${value}`);
      return;
    case 'object':
      break;
    default:
      throw new InvalidArgumentError(`checkpoint is not JSON: ${path} is ${describe(value)} (${typeof value})`);
  }
  if (value === null) return;
  if (ancestors.has(value)) throw new InvalidArgumentError(`checkpoint is not JSON: ${path} is a cycle`);
  if (!Array.isArray(value) && !isPlainObject(value)) {
    throw new InvalidArgumentError(`checkpoint is not JSON: ${path} is a ${value.constructor?.name ?? 'non-plain'} object`);
  }
  ancestors.add(value);
  if (Array.isArray(value)) value.forEach((item, index) => assertJson(item, `${path}[${index}]`, ancestors));
  else for (const [name, item] of Object.entries(value)) assertJson(item, `${path}.${name}`, ancestors);
  ancestors.delete(value);
}

/** A checkpoint size limit: a positive integer. */
export function assertMaxBytes(maxBytes: unknown): asserts maxBytes is number {
  if (typeof maxBytes !== 'number' || !Number.isInteger(maxBytes) || maxBytes <= 0) {
    throw new InvalidArgumentError(`maxCheckpointBytes must be a positive integer, got ${describe(maxBytes)}`);
  }
}

/** A non-empty free-text field (revoke reasons), at most 4096 characters. */
export function assertText(what: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 4096) {
    throw new InvalidArgumentError(`${what} must be a non-empty string of at most 4096 characters, got ${describe(value)}`);
  }
  assertStorableText(what, value);
}
