/**
 * The Redis token gate: one script per write checks and raises the resource's highest token and runs the
 * recorded commands, atomically.
 */
import { GateRefusedError, InvalidArgumentError } from '../../errors.js';
import type { GateOutcome, GateRecord, GateResetOptions, GateResetOutcome } from '../../fence/operations.js';
import type { Fence, FenceRefusal } from '../../fence/types.js';
import { checkFence } from '../../fence/verdict.js';
import { gateResetOutcome, readGateResetOptions } from '../../gate.js';
import { newSecret } from '../../secret.js';
import { assertName, readRequiredOptions } from '../../validate.js';
import { toConnection, type RedisClient } from './connection.js';
import { DEFAULT_PREFIX, keyNames } from './keys.js';
import { replayWindowOf } from './replay-window.js';
import { assertStorable, fenceArgs, parseLeaseReply } from './record.js';
import { CommandRecorder, type RedisWriteContext } from './recorder.js';
import { defineScript, runScript, type Script } from './runner.js';
import { REPLY } from './scripts.js';
import { FENCED_GATE_WRITE_SCRIPT, GATE_INSPECT_SCRIPT, GATE_RESET_SCRIPT, GATE_WRITE_SCRIPT } from './write-scripts.js';

/** Options of `createRedisTokenGate`. */
export interface RedisTokenGateOptions {
  /** Your ioredis or node-redis (v5) client, or a `RedisConnection`. */
  readonly client: RedisClient;
  /**
   * Namespace of the gate's keys (no braces: the resource name provides the hash tag).
   * @default 'leasefence:'
   */
  readonly prefix?: string;
  /**
   * The `prefix` of the Redis lease store whose leases write through this gate, on the same server: each
   * write checks the writer's full fence (token, secret, holder, run, attributes, live grant at `TIME`)
   * against its lease record in the same script as the gate check and the write, and a forged handle is
   * refused with the fence's refusal. In Redis Cluster the lease record and the gate must share a slot:
   * name the resource with the lease key's hash tag (`${hashTagOf(leaseKey)}:report`), or a write fails
   * with `RedisCrossSlotError` (nothing applied). `null`: tokens only, for leases kept in another store;
   * a handle restored with a forged token higher than any real one then passes, and locks every real
   * holder out of the resource until an operator `reset`s it.
   * @default the gate's `prefix`
   */
  readonly leasePrefix?: string | null;
  /**
   * How long a gate write's first reply is kept (the last 8 per lease key, or per resource with tokens
   * only) for re-deliveries of the same request; see `RedisStoreOptions.replayWindowMs`. An integer from
   * 1 to 86,400,000 (one day).
   * @default 300_000
   */
  readonly replayWindowMs?: number;
}

/**
 * The Redis token gate: the `TokenGate` contract with the full fence, `inspect` and `reset`. NOTE: declared
 * on its own until the contract's `GateOutcome` includes `FenceRefusal` on this branch's base.
 */
export interface RedisTokenGate {
  /**
   * Gate-checks and runs `write` (see `RedisWriteContext`). With a `leasePrefix` (the default), `lease`
   * must be the full fence (`lease.fence()`); a fence that does not hold is refused with the core's
   * `FenceRefusal` and nothing is applied.
   */
  write<T>(
    resource: string,
    lease: Fence | { readonly key: string; readonly token: bigint },
    write: (context: RedisWriteContext) => T | Promise<T>,
  ): Promise<GateOutcome<T> | FenceRefusal>;
  /** What the gate remembers of `resource`. For operators. */
  inspect(resource: string): Promise<GateRecord>;
  /**
   * Forgets `resource` and answers what it forgot, so the next write of any key's current grant binds it
   * again: to re-key a resource or clear a forged token. Use it when the resource's old writers are stopped.
   * With `expectedToken` (and `expectedKey`), only if the gate still records them, judged in the same script
   * as the delete; otherwise `superseded` with what it records, unchanged.
   */
  reset(resource: string, options?: GateResetOptions): Promise<GateResetOutcome>;
}

const GATE_WRITE = defineScript('token gate write', GATE_WRITE_SCRIPT);
const FENCED_GATE_WRITE = defineScript('fenced token gate write', FENCED_GATE_WRITE_SCRIPT);
const GATE_INSPECT = defineScript('token gate inspect', GATE_INSPECT_SCRIPT);
const GATE_RESET = defineScript('token gate reset', GATE_RESET_SCRIPT);

const isFence = (lease: Fence | { readonly key: string; readonly token: bigint }): lease is Fence =>
  typeof (lease as Partial<Fence>).secret === 'string' && typeof (lease as Partial<Fence>).holder === 'string';

/** What a gate records from a `key, token` reply pair (false or nil parts when nothing is recorded). */
function foundOf(key: unknown, token: unknown): GateRecord['found'] {
  return typeof key === 'string' && typeof token === 'string' ? { key, token: BigInt(token) } : null;
}

/** A script's array reply of `length` parts, or a thrown bug report. */
function replyParts(reply: unknown, length: number, operation: string): unknown[] {
  if (!Array.isArray(reply) || reply.length !== length)
    throw new Error(`leasefence redis: unexpected token gate ${operation} reply ${JSON.stringify(reply)}`);
  return reply as unknown[];
}

/**
 * Creates a token gate in Redis: per resource, a hash records the lease key and the highest token that
 * wrote it. A write runs your recorded Redis commands in the same script that checks the writer's fence
 * (see `leasePrefix`) and checks and raises the token, so a forged or older grant is refused atomically
 * and nothing of its write is applied. Keep the keys you write in the resource's slot
 * (`hashTagOf(resource)`) for Redis Cluster.
 *
 * ```ts
 * const gate = createRedisTokenGate({ client: redis });
 * await leases.gateWriteOrThrow(gate, 'report:daily', lease, (tx) => tx.call('SET', '{report:daily}:body', csv));
 * ```
 */
export function createRedisTokenGate(given: RedisTokenGateOptions): RedisTokenGate {
  const options = readRequiredOptions('createRedisTokenGate options', given, [
    'client',
    'prefix',
    'leasePrefix',
    'replayWindowMs',
  ]) as RedisTokenGateOptions;
  const connection = toConnection(options.client);
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const names = keyNames(prefix);
  const leasePrefix = options.leasePrefix === undefined ? prefix : options.leasePrefix;
  const leaseNames = leasePrefix === null ? null : keyNames(leasePrefix);
  const replayWindowMs = replayWindowOf(options.replayWindowMs);

  /** Sends the script; on failure every reply is rejected with the (typed, log-safe) error. */
  const send = async (recorder: CommandRecorder, script: Script, keys: string[], args: string[]): Promise<unknown> => {
    try {
      return await runScript(connection, script, keys, args);
    } catch (error) {
      recorder.fail(error);
      throw error;
    }
  };

  /** The gate's verdict and the commands' replies (status, found key, found token, replies, failed, error, applied). */
  const settle = async <T>(
    recorder: CommandRecorder,
    resource: string,
    lease: { readonly key: string; readonly token: bigint },
    value: T | Promise<T>,
    parts: readonly unknown[],
  ): Promise<GateOutcome<T>> => {
    const [status, foundKey, foundToken, replies, failed, message, applied] = parts;
    if (status === 'key-mismatch' || status === 'stale-token') {
      const refusal = {
        ok: false,
        reason: status,
        resource,
        expected: { key: lease.key, token: lease.token },
        found: { key: String(foundKey), token: BigInt(String(foundToken)) },
      } as const;
      recorder.fail(new GateRefusedError(refusal));
      return refusal;
    }
    if (status !== 'ok') throw new Error(`leasefence redis: unexpected token gate reply status ${JSON.stringify(status)}`);
    const failure = recorder.settle(replies, failed, message, applied);
    if (failure !== null) throw failure;
    return { ok: true, value: await value, token: lease.token };
  };

  return {
    async write<T>(
      resource: string,
      lease: Fence | { readonly key: string; readonly token: bigint },
      write: (context: RedisWriteContext) => T | Promise<T>,
    ): Promise<GateOutcome<T> | FenceRefusal> {
      assertStorable('resource', resource);
      assertStorable('lease key', lease.key);
      if (leaseNames === null) {
        const recorder = new CommandRecorder();
        const { value, keys: declared, args: commands } = await recorder.run(write, lease.token);
        const reply = await send(
          recorder,
          GATE_WRITE,
          [names.record(resource, 'gate'), ...declared],
          [lease.key, lease.token.toString(), newSecret(), String(replayWindowMs), ...commands],
        );
        if (!Array.isArray(reply)) throw new Error(`leasefence redis: unexpected token gate reply ${JSON.stringify(reply)}`);
        return settle(recorder, resource, lease, value, reply as unknown[]);
      }
      if (!isFence(lease)) {
        throw new InvalidArgumentError(
          'this token gate checks the full fence: pass lease.fence() (key, token, secret, holder, run), or create it with { leasePrefix: null } for tokens only',
        );
      }
      const recorder = new CommandRecorder();
      const args = fenceArgs(lease, [newSecret(), String(replayWindowMs), lease.key]);
      const { value, keys: declared, args: commands } = await recorder.run(write, lease.token);
      for (const arg of commands) args.push(arg);
      const keys = [leaseNames.record(lease.key, 'lease'), names.record(resource, 'gate'), ...declared];
      const reply = parseLeaseReply(await send(recorder, FENCED_GATE_WRITE, keys, args), lease.key, lease.secret);
      const verdict = checkFence(reply.record, lease, reply.now);
      if (verdict.ok !== reply.applied) {
        throw new Error(
          `leasefence redis: the fenced token gate script ${reply.applied ? 'passed' : 'refused'} a fence the pure core ${verdict.ok ? 'accepts' : 'refuses'}; this is a bug`,
        );
      }
      if (!verdict.ok) {
        recorder.refuse(verdict);
        return verdict;
      }
      return settle(recorder, resource, lease, value, reply.raw.slice(REPLY.extras));
    },

    async inspect(resource) {
      assertStorable('resource', resource);
      const [key, token] = replyParts(await runScript(connection, GATE_INSPECT, [names.record(resource, 'gate')], []), 2, 'inspect');
      return { resource, found: foundOf(key, token) };
    },

    async reset(resource, options) {
      assertName('resource', resource);
      assertStorable('resource', resource);
      const expected = readGateResetOptions(options);
      const args = [expected?.token.toString() ?? '', expected?.key ?? ''];
      const [deleted, key, token] = replyParts(await runScript(connection, GATE_RESET, [names.record(resource, 'gate')], args), 3, 'reset');
      const outcome = gateResetOutcome(resource, expected, foundOf(key, token));
      // NOTE: the script decided; the judgement here must agree with it (as a fenced gate write's does).
      if (outcome.ok !== (deleted === 1))
        throw new Error(
          `leasefence redis: the token gate reset script ${deleted === 1 ? 'deleted' : 'kept'} a record the expectation ${outcome.ok ? 'matches' : 'refuses'}; this is a bug`,
        );
      return outcome;
    },
  };
}
