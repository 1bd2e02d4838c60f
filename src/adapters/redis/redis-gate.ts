/**
 * The Redis token gate: one script per write checks and raises the resource's highest token and runs the
 * recorded commands, atomically.
 */
import { GateRefusedError } from '../../errors.js';
import type { GateOutcome } from '../../fence/operations.js';
import type { TokenGate } from '../../gate.js';
import { newSecret } from '../../secret.js';
import { toConnection, type RedisClient } from './connection.js';
import { DEFAULT_PREFIX, keyNames } from './keys.js';
import { replayWindowOf } from './replay-window.js';
import { assertStorable } from './record.js';
import { CommandRecorder, type RedisWriteContext } from './recorder.js';
import { defineScript, runScript } from './runner.js';
import { GATE_WRITE_SCRIPT } from './write-scripts.js';

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
   * How long a gate write's first reply is kept (in the gate's own hash, the last 8 per resource) for
   * re-deliveries of the same request; see `RedisStoreOptions.replayWindowMs`. An integer from 1 to
   * 86,400,000 (one day).
   * @default 300_000
   */
  readonly replayWindowMs?: number;
}

const GATE_WRITE = defineScript('token gate write', GATE_WRITE_SCRIPT);

/**
 * Creates a token gate in Redis: per resource, a hash records the lease key and the highest token that
 * wrote it. A write runs your recorded Redis commands in the same script that checks and raises the
 * token, so an older token is refused atomically and nothing of its write is applied. Keep the keys you
 * write in the resource's slot (`hashTagOf(resource)`) for Redis Cluster.
 *
 * ```ts
 * const gate = createRedisTokenGate({ client: redis });
 * await leases.gateWriteOrThrow(gate, 'report:daily', lease, (tx) => tx.call('SET', '{report:daily}:body', csv));
 * ```
 */
export function createRedisTokenGate(options: RedisTokenGateOptions): TokenGate<RedisWriteContext> {
  const connection = toConnection(options.client);
  const names = keyNames(options.prefix ?? DEFAULT_PREFIX);
  const replayWindowMs = replayWindowOf(options.replayWindowMs);

  return {
    async write<T>(resource: string, lease: { readonly key: string; readonly token: bigint }, write: (context: RedisWriteContext) => T | Promise<T>): Promise<GateOutcome<T>> {
      assertStorable('resource', resource);
      assertStorable('lease key', lease.key);
      const recorder = new CommandRecorder(1);
      const { value, keys: declared, args: commands } = await recorder.run(write, lease.token);
      const keys = [names.record(resource, 'gate'), ...declared];
      const args = [lease.key, lease.token.toString(), newSecret(), String(replayWindowMs), ...commands];
      let reply: unknown;
      try {
        reply = await runScript(connection, GATE_WRITE, keys, args);
      } catch (error) {
        recorder.fail(error);
        throw error;
      }
      if (!Array.isArray(reply)) throw new Error(`leasefence redis: unexpected token gate reply ${JSON.stringify(reply)}`);
      const [status, foundKey, foundToken, replies, failed, message, applied] = reply as unknown[];
      const expected = { key: lease.key, token: lease.token };
      if (status === 'key-mismatch' || status === 'stale-token') {
        const refusal = { ok: false, reason: status, resource, expected, found: { key: String(foundKey), token: BigInt(String(foundToken)) } } as const;
        recorder.fail(new GateRefusedError(refusal));
        return refusal;
      }
      const failure = recorder.settle(replies, failed, message, applied);
      if (failure !== null) throw failure;
      return { ok: true, value: await value, token: lease.token };
    },
  };
}
