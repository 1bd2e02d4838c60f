/**
 * Sends a script in one round trip: EVALSHA, and EVAL only when the server answers NOSCRIPT (its script
 * cache was flushed or it restarted). EVAL also caches the script, so the next call is one EVALSHA again.
 */
import { createHash } from 'node:crypto';
import { isLeaseError, OutcomeUnknownError, StoreUnavailableError } from '../../errors.js';
import { loggableCause, redactText } from '../../redact.js';
import { RedisReplyError, type RedisConnection } from './connection.js';
import { isCrossSlotReply, RedisCrossSlotError } from './cross-slot.js';

/** A Lua script and its SHA1 digest (its name in the server's script cache). */
export interface Script {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

/** Names a script and computes its digest once. */
export function defineScript(name: string, source: string): Script {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/**
 * Error codes with which the server refuses to run a command at all (so nothing was applied): loading
 * its data, busy with another script, a replica, out of memory, a cluster or persistence problem.
 */
const NOT_APPLIED_CODES = new Set(['LOADING', 'BUSY', 'MASTERDOWN', 'READONLY', 'OOM', 'CLUSTERDOWN', 'TRYAGAIN', 'NOREPLICAS', 'MISCONF']);

/**
 * Maps a failed send to leasefence's errors: not sent / refused by the server, or outcome unknown. The
 * client's error is never attached as it is (ioredis' carries the command's arguments, the secret among
 * them): only its `loggableCause` copy, and messages are redacted.
 */
function classify(script: Script, keys: readonly string[], error: unknown): unknown {
  // NOTE: before the LeaseError check: a reply error is a LeaseError (COMMAND_FAILED) that some replies refine.
  if (error instanceof RedisReplyError) {
    if (isCrossSlotReply(error.replyCode, error.message))
      return new RedisCrossSlotError(script.name, keys, { cause: loggableCause(error) });
    if (NOT_APPLIED_CODES.has(error.replyCode))
      return new StoreUnavailableError(`redis refused the ${script.name} script: ${redactText(error.message)}`, {
        cause: loggableCause(error),
      });
    return error;
  }
  if (isLeaseError(error)) return error;
  const reason = redactText(error instanceof Error ? error.message : String(error));
  return new OutcomeUnknownError(
    `the ${script.name} script was sent to redis but its reply was lost (${reason}): it may or may not have been applied`,
    {
      cause: loggableCause(error),
    },
  );
}

/** Runs `script` with `keys` as KEYS and `args` as ARGV; one EVALSHA, plus one EVAL after a NOSCRIPT. */
export async function runScript(
  connection: RedisConnection,
  script: Script,
  keys: readonly string[],
  args: readonly string[],
): Promise<unknown> {
  const command = ['EVALSHA', script.sha, String(keys.length)];
  for (const key of keys) command.push(key);
  for (const arg of args) command.push(arg);
  try {
    return await connection.send(command);
  } catch (error) {
    // NOTE: NOSCRIPT means the script did not run at all, so sending its source is safe.
    if (!(error instanceof RedisReplyError && error.replyCode === 'NOSCRIPT')) throw classify(script, keys, error);
  }
  const evalCommand = command.slice();
  evalCommand[0] = 'EVAL';
  evalCommand[1] = script.source;
  try {
    return await connection.send(evalCommand);
  } catch (error) {
    throw classify(script, keys, error);
  }
}
