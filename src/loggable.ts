/**
 * Values a caller can log as they are: `JSON.stringify` of a claim result, an inspection, a refusal or an
 * error works (tokens become decimal strings; JSON has no bigint) and never contains a lease secret.
 *
 * The shell returns its results with `LOGGABLE` as prototype: a non-enumerable `toJSON` that costs
 * nothing until something serialises the value, and leaves the result's own properties as they were.
 */
import { REDACTED } from './redact.js';

/** How deep `toLoggable` copies; deeper values become `'[deep]'` (results are a few levels deep). */
const MAX_DEPTH = 16;

/**
 * A copy of `value` that `JSON.stringify` accepts and that carries no secret: bigints as decimal strings,
 * any property named `secret` replaced by `[redacted]`, values with their own `toJSON` (lease handles,
 * results, errors, dates) left for it.
 */
export function toLoggable(value: unknown, depth = 0): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value !== 'object' || value === null) return value;
  if (depth >= MAX_DEPTH) return '[deep]';
  // NOTE: a helper for logging never throws: a Proxy or getter that throws is logged as unreadable.
  try {
    if (Array.isArray(value)) return value.map((item) => toLoggable(item, depth + 1));
    if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return value;
    return loggableFields(value, depth);
  } catch {
    return UNREADABLE;
  }
}

/** What `toLoggable` writes for a value it cannot read. */
const UNREADABLE = '[unreadable]';

/** The own enumerable fields of `value`, each made loggable (see `toLoggable`). */
export function loggableFields(value: object, depth = 0): Record<string, unknown> {
  // NOTE: a null prototype, so a property named `__proto__` is copied like any other.
  const copy = Object.create(null) as Record<string, unknown>;
  for (const name of Object.keys(value)) {
    if (name === 'secret') {
      copy[name] = REDACTED;
      continue;
    }
    let field: unknown;
    try {
      field = (value as Record<string, unknown>)[name];
    } catch {
      field = UNREADABLE;
    }
    copy[name] = toLoggable(field, depth + 1);
  }
  return copy;
}

/** The prototype of the shell's results: plain objects that know how to become log-safe JSON. */
export const LOGGABLE: object = Object.freeze(
  Object.create(Object.prototype, {
    toJSON: {
      value: function toJSON(this: object): unknown {
        return loggableFields(this);
      },
    },
  }) as object,
);

/** `value`'s own properties on an object whose `JSON.stringify` is log-safe (see `LOGGABLE`). */
export function loggable<T extends object>(value: T): T {
  return Object.assign(Object.create(LOGGABLE) as object, value) as T;
}
