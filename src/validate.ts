/**
 * Input validation, run before any store access: bad input gets an `InvalidArgumentError` and never
 * reaches a store, so it can never corrupt a lease.
 */
import { InvalidArgumentError } from './errors.js';
import { MAX_PERMITS, permitKey } from './fence/permits.js';
import type { LeaseAttributes } from './fence/types.js';

/**
 * The longest key, gate resource, holder, run id, attribute name or value accepted, in UTF-8 bytes: every
 * store keeps it exactly and indexes it (a Postgres btree entry holds at most ~2,700 bytes).
 */
export const MAX_NAME_BYTES = 1024;

/** The largest fencing token accepted from a caller (a restored handle, `expectedToken`): 2^63 - 1, a Postgres `bigint`. */
export const MAX_TOKEN: bigint = 2n ** 63n - 1n;

/** A lease secret: 32 to 128 lowercase hex digits (`newSecret` makes 32). */
export const SECRET_PATTERN: RegExp = /^[0-9a-f]{32,128}$/;

/** How deep a checkpoint may nest (JSON of deeper values is refused before it can overflow the stack). */
export const MAX_CHECKPOINT_DEPTH = 64;

/** The longest TTL accepted: one year. Leases that must outlive that take `ttlMs: null` (no expiry). */
export const MAX_TTL_MS: number = 365 * 24 * 60 * 60 * 1000;

/** The default checkpoint size limit in UTF-8 bytes of its JSON text. */
export const DEFAULT_MAX_CHECKPOINT_BYTES: number = 64 * 1024;

/** A short, safe description of a caller's value for an error message (never calls the value's own code). */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol') return 'a symbol';
  if (typeof value === 'object' && value !== null) return Array.isArray(value) ? 'an array' : 'an object';
  return String(value);
}

/** The UTF-8 length of `text` (a lone surrogate counts 3, as its replacement would). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index += 1) {
    const unit = text.charCodeAt(index);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && index + 1 < text.length && (text.charCodeAt(index + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      index += 1;
    } else bytes += 3;
  }
  return bytes;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Text every store can keep exactly: no NUL (Postgres text refuses it) and no lone UTF-16 surrogate (stores
 * keep UTF-8, where it becomes U+FFFD, so two different keys could land on one record).
 */
export function assertStorableText(what: string, value: string): void {
  // NOTE: one pass over the UTF-16 units: text without NUL or any surrogate (nearly every key and holder)
  // needs no regex, which costs ~30 ns on the claim path; a surrogate sends the text to the regex.
  let surrogates = false;
  for (let index = 0; index < value.length; index += 1) {
    const unit = value.charCodeAt(index);
    if (unit === 0) throw new InvalidArgumentError(`${what} must not contain NUL characters`);
    if ((unit & 0xf800) === 0xd800) surrogates = true;
  }
  if (surrogates && LONE_SURROGATE.test(value))
    throw new InvalidArgumentError(`${what} contains a lone UTF-16 surrogate, which a store cannot keep exactly`);
}

/** A non-empty string of at most `MAX_NAME_BYTES` UTF-8 bytes that every store can keep exactly. */
export function assertName(what: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidArgumentError(`${what} must be a non-empty string, got ${describe(value)}`);
  }
  // NOTE: a UTF-16 unit is at most 3 UTF-8 bytes, so short names (nearly all) skip the count.
  if (value.length > MAX_NAME_BYTES / 3 && utf8Length(value) > MAX_NAME_BYTES) {
    throw new InvalidArgumentError(`${what} must be at most ${MAX_NAME_BYTES} bytes of UTF-8, got ${utf8Length(value)}`);
  }
  assertStorableText(what, value);
}

/** A fencing token: a bigint from 1 to `MAX_TOKEN`. */
export function assertToken(what: string, token: unknown): asserts token is bigint {
  if (typeof token !== 'bigint' || token <= 0n || token > MAX_TOKEN) {
    throw new InvalidArgumentError(`${what} must be a bigint from 1 to 2^63-1, got ${describe(token)}`);
  }
}

const NO_OPTIONS: Partial<Record<string, unknown>> = Object.freeze({});

/**
 * A snapshot of the named fields of a caller's options object (`undefined`: no options), read once, so a
 * getter or Proxy cannot show validation one value and the store another, and a throwing one gets
 * `InvalidArgumentError` instead of escaping raw.
 */
export function readOptions<K extends string>(what: string, options: unknown, names: readonly K[]): Partial<Record<K, unknown>> {
  if (options === undefined) return NO_OPTIONS;
  // NOTE: a plain object (the names are leasefence's own): a null-prototype one costs ~300 ns on the hot path.
  const snapshot: Partial<Record<K, unknown>> = {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidArgumentError(`${what} must be an object, got ${describe(options)}`);
  }
  try {
    for (const name of names) snapshot[name] = (options as Record<string, unknown>)[name];
  } catch (error) {
    throw new InvalidArgumentError(`${what} could not be read (${errorName(error)} from a getter or Proxy)`);
  }
  return snapshot;
}

/** `readOptions` for a factory whose options are required: `undefined` is refused like any non-object. */
export function readRequiredOptions<K extends string>(what: string, options: unknown, names: readonly K[]): Partial<Record<K, unknown>> {
  if (options === undefined) throw new InvalidArgumentError(`${what} must be an object, got undefined`);
  return readOptions(what, options, names);
}

/**
 * A plain copy of every own enumerable field of a caller's options object (`undefined`: none), read once;
 * for options passed on to code that reads them itself (`withLease`). A throwing getter or Proxy gets
 * `InvalidArgumentError`.
 */
export function copyOptions(what: string, options: unknown): Record<string, unknown> {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidArgumentError(`${what} must be an object, got ${describe(options)}`);
  }
  try {
    return { ...options };
  } catch (error) {
    throw new InvalidArgumentError(`${what} could not be read (${errorName(error)} from a getter or Proxy)`);
  }
}

function errorName(error: unknown): string {
  try {
    return error instanceof Error ? error.name : typeof error;
  } catch {
    return 'an error';
  }
}

/** A lease key. */
export function assertKey(key: unknown): asserts key is string {
  assertName('key', key);
}

/** The most keys one `addItems` or `removeItems` takes, on every store. */
export const MAX_ITEMS_PER_CALL = 1000;

/**
 * Claim-next's set name and 1 to `MAX_ITEMS_PER_CALL` distinct keys, copied (a caller's array cannot change after
 * the check): the shell's check and every store's, so each refuses the same input with the same message.
 */
export function checkedItemKeys(set: unknown, keys: unknown): readonly string[] {
  assertName('set', set);
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > MAX_ITEMS_PER_CALL)
    throw new InvalidArgumentError(`keys must be an array of 1 to ${MAX_ITEMS_PER_CALL} keys, got ${describe(keys)}`);
  const copy = Array.from(keys as unknown[]);
  for (const key of copy) assertKey(key);
  if (new Set(copy).size !== copy.length) throw new InvalidArgumentError('keys must not repeat a key');
  return copy as string[];
}

/** `addItems`'s `notBeforeMs`: an integer from 0 to `MAX_TTL_MS` (0 when absent); the shell's check and every store's. */
export function checkedNotBefore(notBeforeMs: unknown): number {
  const delay = notBeforeMs ?? 0;
  if (typeof delay !== 'number' || !Number.isInteger(delay) || delay < 0 || delay > MAX_TTL_MS)
    throw new InvalidArgumentError(`notBeforeMs must be an integer number of milliseconds from 0 to ${MAX_TTL_MS}, got ${describe(delay)}`);
  return delay;
}

/**
 * A semaphore's name and an acquire's limit (the shell's check and every store's): a name without braces (its
 * `{name}` is the permit keys' hash tag) short enough for its permit keys to be keys, and an integer limit from 1
 * to `MAX_PERMITS`.
 */
export function assertSemaphore(semaphore: unknown, limit: unknown): asserts semaphore is string {
  assertName('semaphore', semaphore);
  if (/[{}]/.test(semaphore)) throw new InvalidArgumentError(`a semaphore name has no braces, got ${describe(semaphore)}`);
  assertKey(permitKey(semaphore, MAX_PERMITS));
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_PERMITS)
    throw new InvalidArgumentError(`limit must be an integer from 1 to ${MAX_PERMITS}, got ${describe(limit)}`);
}

/** A TTL: a positive integer number of milliseconds up to `MAX_TTL_MS`, or `null` for no expiry. */
export function assertTtl(ttlMs: unknown): asserts ttlMs is number | null {
  if (ttlMs === null) return;
  if (typeof ttlMs !== 'number' || !Number.isInteger(ttlMs) || ttlMs <= 0 || ttlMs > MAX_TTL_MS) {
    throw new InvalidArgumentError(
      `ttlMs must be a positive integer number of milliseconds up to ${MAX_TTL_MS}, or null for no expiry; got ${describe(ttlMs)}`,
    );
  }
}

/** An optional run id: a name or null. */
export function assertRunId(runId: unknown): asserts runId is string | null {
  if (runId !== null) assertName('runId', runId);
}

/** The most attributes one grant may bind. */
export const MAX_ATTRIBUTES = 64;

/** Attributes bound to no grant: frozen, with a null prototype (so `toString` is no attribute). */
export const NO_ATTRIBUTES: LeaseAttributes = Object.freeze(Object.create(null) as LeaseAttributes);

/**
 * Attributes: a plain object of at most `MAX_ATTRIBUTES` string values with valid names. Returns a frozen
 * copy with a null prototype, so every name (`__proto__`, `constructor`) is kept as an attribute.
 */
export function toAttributes(attributes: unknown): LeaseAttributes {
  if (attributes === undefined) return NO_ATTRIBUTES;
  let entries: [string, unknown][];
  try {
    if (!isPlainObject(attributes))
      throw new InvalidArgumentError(`attributes must be a plain object of strings, got ${describe(attributes)}`);
    entries = Object.entries(attributes);
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw error;
    throw new InvalidArgumentError(`attributes could not be read (${errorName(error)} from a getter or Proxy)`);
  }
  if (entries.length > MAX_ATTRIBUTES) throw new InvalidArgumentError(`at most ${MAX_ATTRIBUTES} attributes, got ${entries.length}`);
  const copy = Object.create(null) as Record<string, string>;
  for (const [name, value] of entries) {
    assertName('attribute name', name);
    if (typeof value !== 'string') throw new InvalidArgumentError(`attribute ${describe(name)} must be a string, got ${describe(value)}`);
    assertName(`attribute ${describe(name)}`, value);
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
 * functions, symbols, bigint, non-finite numbers, class instances (Date, Map, ...), a `toJSON` of any kind,
 * cycles, sparse arrays and arrays with extra properties, nesting deeper than `MAX_CHECKPOINT_DEPTH`. Then
 * checks the size of the text in UTF-8 bytes. The value is read once, into a copy that is then serialised,
 * so getters, Proxies and `toJSON` methods cannot make the text differ from what was checked; if reading
 * throws, the caller gets `InvalidArgumentError`.
 */
export function serializeCheckpoint(value: unknown, maxBytes: number, what = 'checkpoint'): string {
  let copy: unknown;
  try {
    copy = jsonCopy(value, '$', { what, maxBytes, bytes: 0, deepest: 0, ancestors: new Set(), copied: new Map() }, 0);
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw error;
    throw new InvalidArgumentError(`${what} could not be read (${errorName(error)} from a getter or Proxy)`);
  }
  const json = JSON.stringify(copy);
  const bytes = utf8Length(json);
  if (bytes > maxBytes) throw new InvalidArgumentError(`${what} is ${bytes} bytes of JSON, over the limit of ${maxBytes}`);
  return json;
}

/** The state of one checkpoint copy. */
interface CopyWalk {
  /** What is copied, for messages (`checkpoint`, `submission payload`, ...). */
  readonly what: string;
  readonly maxBytes: number;
  /**
   * A lower bound on the UTF-8 bytes of the copy's JSON so far (a string counts its UTF-16 units), so a
   * value whose JSON is over the limit is refused as soon as the copy passes it, never expanded in full.
   */
  bytes: number;
  /** The depth of the deepest object copied so far. */
  deepest: number;
  readonly ancestors: Set<object>;
  /**
   * Every object copied so far. NOTE: an object the value reuses (a DAG: 23 small arrays each holding the
   * previous twice expand to 2^23 leaves) gets the copy made the first time and is charged its bytes again,
   * so the walk costs the value's distinct objects, not its expansion.
   */
  readonly copied: Map<object, CopiedObject>;
}

interface CopiedObject {
  readonly copy: unknown;
  /** Its part of `CopyWalk.bytes`. */
  readonly bytes: number;
  /** How many levels of objects it nests, itself included. */
  readonly levels: number;
}

/** Adds `bytes` to the walk's count, refusing the checkpoint once the count is over the limit. */
function charge(walk: CopyWalk, bytes: number, path: string): void {
  walk.bytes += bytes;
  if (walk.bytes > walk.maxBytes)
    throw new InvalidArgumentError(`${walk.what} is over the limit of ${walk.maxBytes} bytes of JSON (passed at ${path})`);
}

/** A copy of `value` made only of JSON values (null-prototype objects, dense arrays), or a refusal. */
function jsonCopy(value: unknown, path: string, walk: CopyWalk, depth: number): unknown {
  switch (typeof value) {
    case 'string':
      charge(walk, value.length + 2, path);
      return value;
    case 'boolean':
      charge(walk, 4, path);
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new InvalidArgumentError(`${walk.what} is not JSON: ${path} is ${value}`);
      charge(walk, 1, path);
      return value;
    case 'object':
      break;
    default:
      throw new InvalidArgumentError(`${walk.what} is not JSON: ${path} is ${describe(value)} (${typeof value})`);
  }
  if (value === null) {
    charge(walk, 4, path);
    return null;
  }
  const copied = walk.copied.get(value);
  if (copied !== undefined) {
    if (depth + copied.levels > MAX_CHECKPOINT_DEPTH)
      throw new InvalidArgumentError(`${walk.what} nests deeper than ${MAX_CHECKPOINT_DEPTH} levels below ${path}`);
    walk.deepest = Math.max(walk.deepest, depth + copied.levels - 1);
    charge(walk, copied.bytes, path);
    return copied.copy;
  }
  if (depth >= MAX_CHECKPOINT_DEPTH)
    throw new InvalidArgumentError(`${walk.what} nests deeper than ${MAX_CHECKPOINT_DEPTH} levels at ${path}`);
  if (walk.ancestors.has(value)) throw new InvalidArgumentError(`${walk.what} is not JSON: ${path} is a cycle`);
  walk.ancestors.add(value);
  const bytesBefore = walk.bytes;
  const deepestOutside = walk.deepest;
  walk.deepest = depth;
  const copy = Array.isArray(value) ? copyArray(value, path, walk, depth) : copyObject(value, path, walk, depth);
  walk.copied.set(value, { copy, bytes: walk.bytes - bytesBefore, levels: walk.deepest - depth + 1 });
  walk.deepest = Math.max(walk.deepest, deepestOutside);
  walk.ancestors.delete(value);
  return copy;
}

function copyArray(value: unknown[], path: string, walk: CopyWalk, depth: number): unknown[] {
  if (Object.getPrototypeOf(value) !== Array.prototype)
    throw new InvalidArgumentError(`${walk.what} is not JSON: ${path} is an array subclass`);
  const { length } = value;
  if (Object.keys(value).length !== length)
    throw new InvalidArgumentError(`${walk.what} is not JSON: ${path} is a sparse array or has extra properties`);
  assertNoToJson(value, path, walk);
  charge(walk, 2 + Math.max(0, length - 1), path);
  const items: unknown[] = [];
  for (let index = 0; index < length; index += 1) items.push(jsonCopy(value[index], `${path}[${index}]`, walk, depth + 1));
  return items;
}

function copyObject(value: object, path: string, walk: CopyWalk, depth: number): Record<string, unknown> {
  if (!isPlainObject(value)) throw new InvalidArgumentError(`${walk.what} is not JSON: ${path} is not a plain object`);
  assertNoToJson(value, path, walk);
  const names = Object.keys(value);
  charge(walk, 2 + Math.max(0, names.length - 1), path);
  const fields = Object.create(null) as Record<string, unknown>;
  for (const name of names) {
    charge(walk, name.length + 3, path);
    fields[name] = jsonCopy(value[name], `${path}.${name}`, walk, depth + 1);
  }
  return fields;
}

/**
 * Refuses an object with its own `toJSON`, enumerable or not: `JSON.stringify` would write what it returns,
 * the copy its fields. (An enumerable one is also refused as a function field.)
 */
function assertNoToJson(value: object, path: string, walk: CopyWalk): void {
  if (Object.hasOwn(value, 'toJSON')) throw new InvalidArgumentError(`${walk.what} is not JSON: ${path} has its own toJSON`);
}

/** The largest `maxCheckpointBytes` accepted: 64 MiB (a checkpoint travels in every claim's reply). */
export const MAX_CHECKPOINT_BYTES_LIMIT: number = 64 * 1024 * 1024;

/** A checkpoint size limit: a positive integer up to `MAX_CHECKPOINT_BYTES_LIMIT`. */
export function assertMaxBytes(maxBytes: unknown): asserts maxBytes is number {
  if (typeof maxBytes !== 'number' || !Number.isInteger(maxBytes) || maxBytes <= 0 || maxBytes > MAX_CHECKPOINT_BYTES_LIMIT) {
    throw new InvalidArgumentError(
      `maxCheckpointBytes must be a positive integer up to ${MAX_CHECKPOINT_BYTES_LIMIT}, got ${describe(maxBytes)}`,
    );
  }
}

/** A non-empty free-text field (revoke reasons), at most 4096 characters. */
export function assertText(what: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 4096) {
    throw new InvalidArgumentError(`${what} must be a non-empty string of at most 4096 characters, got ${describe(value)}`);
  }
  assertStorableText(what, value);
}

/** A hold: a positive integer number of ms up to `MAX_TTL_MS` (a year). */
export function assertHoldMs(holdMs: unknown): asserts holdMs is number {
  if (typeof holdMs !== 'number' || !Number.isInteger(holdMs) || holdMs <= 0 || holdMs > MAX_TTL_MS) {
    throw new InvalidArgumentError(`holdMs must be a positive integer number of milliseconds up to ${MAX_TTL_MS}, got ${describe(holdMs)}`);
  }
}

/**
 * Key-state values (`setKeyState`) or requirements (`claim`'s `expect`): a plain object of at most
 * `MAX_ATTRIBUTES` names, each value a non-empty storable string or `null` (remove / must be absent). Returns a
 * frozen null-prototype copy, read once.
 */
export function toKeyStateValues(what: string, values: unknown): Readonly<Record<string, string | null>> {
  let entries: [string, unknown][];
  try {
    if (!isPlainObject(values))
      throw new InvalidArgumentError(`${what} must be a plain object of strings or null, got ${describe(values)}`);
    entries = Object.entries(values);
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw error;
    throw new InvalidArgumentError(`${what} could not be read (${errorName(error)} from a getter or Proxy)`);
  }
  if (entries.length > MAX_ATTRIBUTES) throw new InvalidArgumentError(`${what}: at most ${MAX_ATTRIBUTES} names, got ${entries.length}`);
  const copy = Object.create(null) as Record<string, string | null>;
  for (const [name, value] of entries) {
    assertName(`${what} name`, name);
    if (value !== null) assertName(`${what} ${describe(name)}`, value);
    copy[name] = value;
  }
  return Object.freeze(copy);
}
