/**
 * The fenced-write context: records the user's Redis commands before the script runs, hands them to the
 * script as KEYS and ARGV, and settles each command's promise with its reply afterwards.
 */
import { InvalidArgumentError, LeaseError, LeaseLostError } from '../../errors.js';
import { redactText } from '../../redact.js';
import type { FenceRefusal } from '../../fence/types.js';
import { refuseWrite, WriteRefusedSignal } from '../../write-refusal.js';
import { checkedRefusal, conditionParts, UNCONDITIONAL, type Condition, type RedisCondition } from './conditions.js';
import { isWellFormed } from './keys.js';
import { knownArity } from './known-commands.js';

import { RedisKey, type RedisArgument } from './redis-key.js';

export { RedisKey, type RedisArgument };

/**
 * What a Redis fenced write's (or token gate write's) callback receives. The callback records commands;
 * once it has finished (leasefence awaits an `async` callback), every recorded command is sent in ONE
 * script that runs them with `redis.call` only if the fence holds, atomically with the check. So replies
 * exist only after the callback: each `call` returns a promise of its command's reply, settled once the
 * script ran.
 *
 * - A synchronous callback may return a reply (it becomes the write's `value`) or attach handlers to it.
 * - An `async` callback must not use a reply before it finishes (`await`, `.then`, or returning it, which
 *   awaits it): that would wait for itself. leasefence refuses such a write with `InvalidArgumentError`
 *   and sends nothing. Keep the promise and read it after the write instead.
 *
 * ```ts
 * await leases.fencedWrite(lease, (tx) => {
 *   tx.call('HSET', `${hashTagOf(lease.key)}:result`, 'rows', '42');
 *   return tx.call('INCR', `${hashTagOf(lease.key)}:writes`);
 * });
 * await leases.fencedWrite(lease, async (tx) => {
 *   const rows = await exportBatch(); // any await before or between calls: nothing is sent until the end
 *   tx.call('RPUSH', `${hashTagOf(lease.key)}:rows`, ...rows);
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
  /**
   * Refuses the write unless `condition` holds, judged INSIDE the write's script, after the fence and before
   * any recorded command: a refused write applies nothing (no command, no checkpoint, no submission) and
   * is answered `{ ok: false, reason: 'write-refused', code, detail }`. The callback cannot read Redis while
   * it records (replies exist only after the script), so a check of other data ("the owner account is still
   * active") is declared here and made atomically with the write. Conditions are judged in the order given,
   * the first not met answers. `code`: 1-100 letters, digits, `_ . : -`; `detail`: at most 1,000 characters.
   * Lease stores only (a token gate write cannot be refused from inside: `InvalidArgumentError`).
   *
   * ```ts
   * await leases.fencedWrite(lease, (tx) => {
   *   tx.refuseUnless({ read: ['HGET', `${hashTagOf(lease.key)}:owner`, 'status'], equals: 'active' }, 'owner-inactive');
   *   tx.call('SET', `${hashTagOf(lease.key)}:decision`, 'approve');
   * });
   * ```
   */
  refuseUnless(condition: RedisCondition, code: string, detail?: string): void;
  /**
   * Refuses the write outright (it throws, ending the callback): nothing recorded is sent but the fence
   * check, and the write is answered `write-refused` with this code once the fence (and a submission's
   * replay lookup) let it through, as every store answers. A decision made on data the callback read itself
   * is not atomic with the write: prefer `refuseUnless`. Lease stores only.
   */
  refuse(code: string, detail?: string): never;
}

/**
 * A recorded Redis command failed inside the write's script. Before running any command the script checks
 * every one (known command, argument count, allowed in scripts, ACL): such a failure applies nothing
 * (`applied === 0`). A command that fails while it runs (WRONGTYPE, "not an integer", ...) cannot be
 * rolled back by Redis: the `applied` commands before it stay applied, the rest (and a checkpoint given
 * with the write) are not. Its code is `COMMAND_FAILED`.
 */
export class RedisCommandError extends LeaseError {
  override name = 'RedisCommandError' as const;
  /** Index of the failed command among those recorded (0-based). */
  readonly commandIndex: number;
  /** How many recorded commands were applied before it. */
  readonly applied: number;
  constructor(commandIndex: number, command: string, message: string, applied: number) {
    super(
      'COMMAND_FAILED',
      `redis command #${commandIndex} (${command}) failed inside the write's script after ${applied} applied command(s): ${redactText(message)}`,
    );
    this.commandIndex = commandIndex;
    this.applied = applied;
  }
}

/**
 * The most arguments (the command name included) one recorded command may have: the script spreads them
 * with Lua's `unpack`, which fails at 8,000 values.
 */
export const MAX_COMMAND_ARGUMENTS = 7_000;

/** A command's reply promise; notices being used (awaited, `.then`, adopted), see `RedisWriteContext`. */
class CommandReply extends Promise<unknown> {
  // NOTE: derived promises (from then/catch) are plain promises, so only the reply itself reports use.
  static override get [Symbol.species](): PromiseConstructor {
    return Promise;
  }

  onUse: (() => void) | null = null;

  // biome-ignore lint/suspicious/noThenProperty: a Promise subclass overrides then to record that the reply was used
  override then<A = unknown, B = never>(
    onFulfilled?: ((value: unknown) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    this.onUse?.();
    return super.then(onFulfilled, onRejected);
  }
}

/** The commands a callback recorded (see `CommandRecorder.run`), and its value. */
export interface Recording<T> {
  /** The callback's value: a synchronous callback's (a reply is awaited after the script), an async one's result. */
  readonly value: T | Promise<T>;
  /** The declared keys, after the script's own (the recorder's own list: it records nothing more once sealed). */
  readonly keys: string[];
  /** The commands' ARGV: count, then argc (negative when `knownArity` accepts it) + args per command. */
  readonly args: string[];
  /** The conditions' ARGV (count, then each one's arguments), `[]` when there are none. */
  readonly conditions: string[];
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';

const ignore = (): void => undefined;

interface Recorded {
  readonly name: string;
  readonly args: readonly string[];
  readonly resolve: (reply: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Records commands for one script run (its keys follow the KEYS the script itself uses). `conditions`: whether the script judges conditions (`refuseUnless`, `refuse`: the fenced write's does, the
 * token gate's do not), sent before the commands.
 */
export class CommandRecorder {
  readonly #judgesConditions: boolean;
  readonly #conditions: Condition[] = [];
  readonly #keys: string[] = [];
  readonly #declared = new Set<string>();
  readonly #commands: Recorded[] = [];
  readonly #replies = new Set<unknown>();
  #sealed = false;
  /** Set while an async callback runs; called when one of its replies is used (a refusal). */
  #refuse: (() => void) | null = null;
  #used = false;

  constructor(conditions = false) {
    this.#judgesConditions = conditions;
  }

  /** The context handed to the user's callback. */
  context(token: bigint): RedisWriteContext {
    return {
      token,
      key: (name) => this.#declare(name),
      call: (command, key, ...args) => this.#record(command, [typeof key === 'string' ? this.#declare(key) : key, ...args]),
      refuseUnless: (condition, code, detail) => this.#condition(condition, code, detail),
      refuse: (code, detail) => {
        this.#assertJudges();
        return refuseWrite(code, detail);
      },
    };
  }

  #assertJudges(): void {
    if (!this.#judgesConditions)
      throw new InvalidArgumentError('a token gate write cannot be refused from inside: use a fenced write of a lease store');
    if (this.#sealed)
      throw new InvalidArgumentError('tx.refuseUnless after the write was sent (or refused): declare conditions in the callback');
  }

  #condition(condition: RedisCondition, code: string, detail: string | undefined): void {
    this.#assertJudges();
    const refusal = checkedRefusal(code, detail);
    const { command, key, args, mode, expected } = conditionParts(condition);
    const encoded = [command, this.#encode(typeof key === 'string' ? this.#declare(key) : key)];
    for (const arg of args) encoded.push(this.#encode(arg));
    this.#conditions.push({ args: [String(encoded.length), ...encoded, mode, expected], code: refusal.code, detail: refusal.detail });
  }

  /** The code and detail of the condition the script names (1-based, `WRITTEN.refused`). */
  refusal(index: unknown): { readonly code: string; readonly detail: string | null } {
    const condition = this.#conditions[Number(index) - 1];
    if (condition === undefined)
      throw new Error(`leasefence redis: the fenced write script named an unknown condition ${String(index)}; this is a bug`);
    return condition;
  }

  #declare(name: string): RedisKey {
    if (typeof name !== 'string' || name.length === 0 || !isWellFormed(name))
      throw new InvalidArgumentError(`a redis key must be a non-empty, well-formed string, got ${JSON.stringify(name)}`);
    return new RedisKey(name);
  }

  #encode(arg: RedisArgument): string {
    if (arg instanceof RedisKey) {
      if (!this.#declared.has(arg.name)) {
        this.#declared.add(arg.name);
        this.#keys.push(arg.name);
      }
      // NOTE: sent by its name, which the script passes to Redis as it is (no tag to cut in Lua); declared in KEYS
      // above, so the script is routed to its slot and touches only declared keys.
      return arg.name;
    }
    if (typeof arg === 'string' && isWellFormed(arg)) return arg;
    if ((typeof arg === 'number' && Number.isFinite(arg)) || typeof arg === 'bigint') return String(arg);
    throw new InvalidArgumentError(
      `redis command arguments must be well-formed strings, finite numbers, bigints or tx.key(...), got ${String(arg)}`,
    );
  }

  #record(command: string, args: RedisArgument[]): Promise<unknown> {
    if (this.#sealed)
      throw new InvalidArgumentError('tx.call after the write was sent (or refused): record every command before the callback finishes');
    if (typeof command !== 'string' || !/^[A-Za-z][A-Za-z0-9_|.-]*$/.test(command))
      throw new InvalidArgumentError(`not a redis command name: ${String(command)}`);
    if (args.length + 1 > MAX_COMMAND_ARGUMENTS) {
      throw new InvalidArgumentError(
        `a recorded redis command may have at most ${MAX_COMMAND_ARGUMENTS} arguments (Lua's unpack limit), ${command} has ${args.length + 1}: split it`,
      );
    }
    const encoded = [command];
    for (const arg of args) encoded.push(this.#encode(arg));
    let resolve!: (reply: unknown) => void;
    let reject!: (error: unknown) => void;
    const reply = new CommandReply((done, fail) => {
      resolve = done;
      reject = fail;
    });
    // NOTE: a refused or failed write rejects every pending reply; a callback that never awaited them must not
    // see an unhandled rejection. Through the built-in then, which is not a use.
    void Promise.prototype.then.call(reply, undefined, ignore);
    reply.onUse = () => {
      this.#used = true;
      this.#refuse?.();
    };
    this.#replies.add(reply);
    this.#commands.push({ name: command, args: encoded, resolve, reject });
    return reply;
  }

  /**
   * Runs the user's callback and seals what it recorded. A synchronous callback (or one returning one of its
   * replies) is sealed at once, and its recording returned as is (no promise: see `recorded`). An `async`
   * callback is awaited first; if it uses one of its replies before it finishes, the write is refused
   * (`InvalidArgumentError`, see `RedisWriteContext`) and nothing is sent. A callback that throws or rejects
   * sends nothing either.
   */
  run<T>(write: (context: RedisWriteContext) => T | Promise<T>, token: bigint): Recording<T> | Promise<Recording<T>> {
    let result: T | Promise<T>;
    try {
      result = write(this.context(token));
    } catch (error) {
      if (error instanceof WriteRefusedSignal && this.#judgesConditions) return this.#refused(error);
      this.#stop(error);
      throw error;
    }
    if (!isThenable(result) || this.#replies.has(result)) return this.#seal(result);
    return this.#settled(result);
  }

  /** The async part of `run`: awaits the callback's promise, refusing a use of one of its replies before it settles. */
  async #settled<T>(result: PromiseLike<T>): Promise<Recording<T>> {
    const finished = Promise.resolve(result);
    finished.catch(ignore);
    const misuse = new InvalidArgumentError(
      'an async write callback used the reply of one of its tx.call commands (await, .then, or returned it) before it finished: replies exist only after ' +
        'every command was sent in one script, so nothing was sent. Return the reply from a synchronous callback, or keep the promise and read it after the write',
    );
    const refused = new Promise<never>((_, reject) => {
      this.#refuse = () => reject(misuse);
    });
    try {
      if (this.#used) this.#refuse?.();
      return this.#seal(await Promise.race([finished, refused]));
    } catch (error) {
      if (error instanceof WriteRefusedSignal && this.#judgesConditions && !this.#sealed) return this.#refused(error);
      this.#stop(error);
      throw error;
    } finally {
      this.#refuse = null;
    }
  }

  /** Stops recording and rejects every reply: nothing is sent. */
  #stop(error: unknown): void {
    this.#sealed = true;
    this.fail(error);
  }

  /**
   * The callback refused the write outright (`refuse`): its commands are dropped (their replies rejected with
   * the refusal) and an unconditional condition ends the conditions, so the script answers `write-refused`
   * once the fence holds, as every store does (and the conditions declared before it first).
   */
  #refused<T>(signal: WriteRefusedSignal): Recording<T> {
    for (const command of this.#commands) command.reject(signal);
    this.#commands.length = 0;
    this.#conditions.push({ args: UNCONDITIONAL, code: signal.code, detail: signal.detail });
    return this.#seal(undefined as T);
  }

  /**
   * Stops recording; returns `value`, the declared keys, the commands' ARGV (count, then argc + args
   * per command) and the conditions' (see `CONDITIONS` in `write-scripts.ts`).
   */
  #seal<T>(value: T | Promise<T>): Recording<T> {
    this.#sealed = true;
    const conditions: string[] = [];
    if (this.#conditions.length > 0) {
      conditions.push(String(this.#conditions.length));
      for (const condition of this.#conditions) for (const arg of condition.args) conditions.push(arg);
    }
    const args: string[] = [];
    args.push(String(this.#commands.length));
    for (const command of this.#commands) {
      // NOTE: a negative count marks a command whose name and count the table knows (see known-commands.ts).
      args.push(String(knownArity(command.name, command.args.length) ? -command.args.length : command.args.length));
      for (const arg of command.args) args.push(arg);
    }
    return { value, keys: this.#keys, args, conditions };
  }

  /**
   * Settles every reply from the script's `{ replies, failed (1-based, 0 = none), error, applied }`;
   * returns the failure, if any.
   */
  settle(replies: unknown, failed: unknown, message: unknown, applied: unknown): RedisCommandError | null {
    const list = Array.isArray(replies) ? replies : [];
    const failedAt = Number(failed) - 1;
    const error =
      failedAt >= 0 ? new RedisCommandError(failedAt, this.#commands[failedAt]?.name ?? '?', String(message), Number(applied)) : null;
    const appliedCount = Number(applied);
    this.#commands.forEach((command, index) => {
      if (error === null || index < appliedCount) command.resolve(list[index] ?? null);
      else command.reject(error);
    });
    return error;
  }

  /** Rejects every reply with the write's refusal from inside (a condition not met): nothing ran. */
  refused(code: string, detail: string | null): void {
    this.fail(new WriteRefusedSignal(code, detail));
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
