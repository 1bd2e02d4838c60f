/**
 * The fenced-write context: records the user's Redis commands before the script runs, hands them to the
 * script as KEYS and tagged ARGV, and settles each command's promise with its reply afterwards.
 */
import { InvalidArgumentError, LeaseLostError } from '../../errors.js';
import type { FenceRefusal } from '../../fence/types.js';
import { isWellFormed } from './keys.js';

/** A key argument declared with `tx.key(name)`: passed to the script in KEYS, never as a plain value. */
export class RedisKey {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
}

/** An argument of a recorded command. Numbers are sent as their decimal text. */
export type RedisArgument = string | number | bigint | RedisKey;

/**
 * What a Redis fenced write's callback receives. The callback runs BEFORE the script: it records
 * commands, synchronously; the script runs them with `redis.call` only if the fence holds, atomically with
 * the check. Each `call` returns a promise of that command's reply, settled after the script ran.
 *
 * ```ts
 * await leases.fencedWrite(lease, (tx) => {
 *   tx.call('HSET', `${hashTagOf(lease.key)}:result`, 'rows', '42');
 *   return tx.call('INCR', `${hashTagOf(lease.key)}:writes`);
 * });
 * ```
 */
export interface RedisWriteContext {
  /**
   * Records `command` on `key` (declared as a KEY of the script) with more arguments; arguments made with
   * `tx.key(name)` are declared keys too (for commands on several keys). In Redis Cluster, every declared
   * key must share the lease's slot (see `hashTagOf`).
   */
  call(command: string, key: string | RedisKey, ...args: RedisArgument[]): Promise<unknown>;
  /** Declares a key argument. */
  key(name: string): RedisKey;
  /** The token of the grant (lease store) or the token the write carries (token gate). */
  readonly token: bigint;
}

/** A Redis command failed inside the fenced-write script. Redis has no rollback: earlier commands stay applied. */
export class RedisCommandError extends Error {
  override name = 'RedisCommandError' as const;
  /** Index of the failed command among those recorded (0-based). */
  readonly commandIndex: number;
  /** How many recorded commands were applied before it. */
  readonly applied: number;
  constructor(commandIndex: number, command: string, message: string) {
    super(`redis command #${commandIndex} (${command}) failed inside the fenced write after ${commandIndex} applied command(s): ${message}`);
    this.commandIndex = commandIndex;
    this.applied = commandIndex;
  }
}

interface Recorded {
  readonly name: string;
  readonly args: readonly string[];
  readonly resolve: (reply: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/** Records commands for one script run. `fixedKeys` is how many KEYS the script itself uses first. */
export class CommandRecorder {
  readonly #fixedKeys: number;
  readonly #keys: string[] = [];
  readonly #keyIndex = new Map<string, number>();
  readonly #commands: Recorded[] = [];
  #sealed = false;

  constructor(fixedKeys: number) {
    this.#fixedKeys = fixedKeys;
  }

  /** The context handed to the user's callback. */
  context(token: bigint): RedisWriteContext {
    return {
      token,
      key: (name) => this.#declare(name),
      call: (command, key, ...args) => this.#record(command, [typeof key === 'string' ? this.#declare(key) : key, ...args]),
    };
  }

  #declare(name: string): RedisKey {
    if (typeof name !== 'string' || name.length === 0 || !isWellFormed(name)) throw new InvalidArgumentError(`a redis key must be a non-empty, well-formed string, got ${JSON.stringify(name)}`);
    return new RedisKey(name);
  }

  #encode(arg: RedisArgument): string {
    if (arg instanceof RedisKey) {
      let index = this.#keyIndex.get(arg.name);
      if (index === undefined) {
        this.#keys.push(arg.name);
        index = this.#fixedKeys + this.#keys.length;
        this.#keyIndex.set(arg.name, index);
      }
      return `k${index}`;
    }
    if (typeof arg === 'string' && isWellFormed(arg)) return `v${arg}`;
    if ((typeof arg === 'number' && Number.isFinite(arg)) || typeof arg === 'bigint') return `v${arg}`;
    throw new InvalidArgumentError(`redis command arguments must be well-formed strings, finite numbers, bigints or tx.key(...), got ${String(arg)}`);
  }

  #record(command: string, args: RedisArgument[]): Promise<unknown> {
    if (this.#sealed) throw new InvalidArgumentError('tx.call after the fenced write was sent: record every command synchronously, before the callback returns or awaits');
    if (typeof command !== 'string' || !/^[A-Za-z][A-Za-z0-9_|.-]*$/.test(command)) throw new InvalidArgumentError(`not a redis command name: ${String(command)}`);
    const encoded = [`v${command}`, ...args.map((arg) => this.#encode(arg))];
    let resolve!: (reply: unknown) => void;
    let reject!: (error: unknown) => void;
    const promise = new Promise<unknown>((done, fail) => {
      resolve = done;
      reject = fail;
    });
    // NOTE: a refused or failed write rejects every pending reply; a callback that never awaited them must not
    // see an unhandled rejection.
    promise.catch(() => undefined);
    this.#commands.push({ name: command, args: encoded, resolve, reject });
    return promise;
  }

  /** Stops recording; returns the declared keys and the tagged ARGV (count, then argc + args per command). */
  seal(): { keys: string[]; args: string[]; count: number } {
    this.#sealed = true;
    const args = [String(this.#commands.length)];
    for (const command of this.#commands) args.push(String(command.args.length), ...command.args);
    return { keys: [...this.#keys], args, count: this.#commands.length };
  }

  /** Settles every reply from the script's `{ replies, failed (1-based, 0 = none), error }`; returns the failure, if any. */
  settle(replies: unknown, failed: unknown, message: unknown): RedisCommandError | null {
    const list = Array.isArray(replies) ? replies : [];
    const failedAt = Number(failed) - 1;
    const error = failedAt >= 0 ? new RedisCommandError(failedAt, this.#commands[failedAt]?.name ?? '?', String(message)) : null;
    this.#commands.forEach((command, index) => {
      if (error === null || index < failedAt) command.resolve(list[index] ?? null);
      else command.reject(error);
    });
    return error;
  }

  /** Rejects every reply: the fence did not hold, nothing ran. */
  refuse(refusal: FenceRefusal): void {
    const error = new LeaseLostError(refusal);
    for (const command of this.#commands) command.reject(error);
  }

  /** Rejects every reply with `error` (the script's outcome is unknown or it failed). */
  fail(error: unknown): void {
    for (const command of this.#commands) command.reject(error);
  }
}
