/**
 * The conditions of a Redis fenced write (`RedisWriteContext.refuseUnless` and `refuse`): checked and encoded
 * here, judged by the fenced write's script (`CONDITIONS` in `write-scripts.ts`) after the fence and before
 * any recorded command.
 */
import { InvalidArgumentError } from '../../errors.js';
import { refuseWrite, WriteRefusedSignal } from '../../write-refusal.js';
import { isWellFormed } from './keys.js';
import type { RedisArgument, RedisKey } from './redis-key.js';

/**
 * A condition of a fenced write (`tx.refuseUnless`), judged inside the write's script once the fence holds
 * and before any recorded command runs: a read command's reply compared with the reply the write needs.
 * Give exactly one of `equals` and `notEquals`: a string compares with a bulk reply (GET, HGET, ZSCORE,
 * LINDEX), a number with an integer reply (EXISTS, HEXISTS, SISMEMBER, LLEN, SCARD, ...), `null` with a nil
 * reply (the key or field is absent).
 */
export interface RedisCondition {
  /** The read command, its key (declared like `call`'s: in Cluster, in the lease's slot) and its arguments. */
  readonly read: readonly [command: string, key: string | RedisKey, ...args: RedisArgument[]];
  /** The write goes on only if the reply equals this. */
  readonly equals?: string | number | null;
  /** The write goes on only if the reply differs from this. */
  readonly notEquals?: string | number | null;
}

/**
 * The read commands a condition may run (they never write, so a refused write applied nothing): their
 * replies are a bulk string, an integer or nil.
 */
const READ_COMMANDS: ReadonlySet<string> = new Set([
  'get',
  'getrange',
  'strlen',
  'exists',
  'hget',
  'hexists',
  'hlen',
  'hstrlen',
  'sismember',
  'scard',
  'zscore',
  'zrank',
  'zrevrank',
  'zcard',
  'llen',
  'lindex',
  'xlen',
]);

/** A recorded condition: its ARGV (see `CONDITIONS` in `write-scripts.ts`) and its refusal. */
export interface Condition {
  readonly args: readonly string[];
  readonly code: string;
  readonly detail: string | null;
}

/** Checks a refusal's code and detail as `refuseWrite` does (an `InvalidArgumentError` when bad). */
export function checkedRefusal(code: unknown, detail: unknown): WriteRefusedSignal {
  try {
    return refuseWrite(code, detail);
  } catch (error) {
    if (error instanceof WriteRefusedSignal) return error;
    throw error;
  }
}

/** A condition's expected reply as a script argument: '' for nil, 's' .. text, 'i' .. integer. */
function expectedArg(expected: unknown): string {
  if (expected === null) return '';
  if (typeof expected === 'string' && isWellFormed(expected)) return `s${expected}`;
  if (typeof expected === 'number' && Number.isSafeInteger(expected)) return `i${expected}`;
  throw new InvalidArgumentError(
    `a condition compares a reply with a well-formed string, a safe integer or null, got ${typeof expected === 'string' ? 'a string with a lone surrogate' : String(expected)}`,
  );
}

/** The arguments of `refuse`'s condition: no read (0 arguments), never met. */
export const UNCONDITIONAL: readonly string[] = ['0', '!', ''];

/** A condition's parts, checked (before any I/O): its read command, key, arguments, mode and expected reply. */
export function conditionParts(condition: RedisCondition): {
  readonly command: string;
  readonly key: string | RedisKey;
  readonly args: readonly RedisArgument[];
  readonly mode: '=' | '!';
  readonly expected: string;
} {
  const given = (typeof condition === 'object' && condition !== null ? condition : {}) as Partial<RedisCondition>;
  const { read } = given;
  const hasEquals = given.equals !== undefined;
  if (!Array.isArray(read) || read.length < 2 || hasEquals === (given.notEquals !== undefined))
    throw new InvalidArgumentError(
      'tx.refuseUnless(condition): condition is { read: [command, key, ...args], equals } or { read, notEquals }',
    );
  const [command, key, ...args] = read as [unknown, string | RedisKey, ...RedisArgument[]];
  if (typeof command !== 'string' || !READ_COMMANDS.has(command.toLowerCase()))
    throw new InvalidArgumentError(
      `tx.refuseUnless: ${String(command)} is not a read command a condition may run (${[...READ_COMMANDS].join(', ')})`,
    );
  return { command, key, args, mode: hasEquals ? '=' : '!', expected: expectedArg(hasEquals ? given.equals : given.notEquals) };
}
