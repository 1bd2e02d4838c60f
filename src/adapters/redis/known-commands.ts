/**
 * The argument counts of common Redis commands (Redis 7.0's `COMMAND INFO` arity: n means exactly n
 * arguments with the name, -n at least n; none of them is `noscript`). A fenced write's recorder marks a
 * command whose count this table accepts, and its script then skips `COMMAND INFO` for it (~13 µs of
 * server time per command), keeping only the server's own check that it knows the name (a renamed
 * command is unknown) and lets the user run it (ACL). A name not listed is checked by the script in full.
 * `test/adapters/redis-command-checks.test.ts` compares this table with the server's.
 */
const ARITY: ReadonlyMap<string, number> = new Map([
  ['set', -3],
  ['get', 2],
  ['del', -2],
  ['unlink', -2],
  ['exists', -2],
  ['incr', 2],
  ['incrby', 3],
  ['incrbyfloat', 3],
  ['decr', 2],
  ['decrby', 3],
  ['append', 3],
  ['getset', 3],
  ['getdel', 2],
  ['setex', 4],
  ['psetex', 4],
  ['setnx', 3],
  ['mset', -3],
  ['expire', -3],
  ['pexpire', -3],
  ['expireat', -3],
  ['pexpireat', -3],
  ['persist', 2],
  ['hset', -4],
  ['hget', 3],
  ['hdel', -3],
  ['hincrby', 4],
  ['hincrbyfloat', 4],
  ['hmset', -4],
  ['hsetnx', 4],
  ['hexists', 3],
  ['lpush', -3],
  ['rpush', -3],
  ['lpop', -2],
  ['rpop', -2],
  ['lrem', 4],
  ['ltrim', 4],
  ['lset', 4],
  ['sadd', -3],
  ['srem', -3],
  ['zadd', -4],
  ['zrem', -3],
  ['zincrby', 4],
  ['xadd', -5],
  ['xtrim', -4],
  ['publish', 3],
  ['spublish', 3],
  ['copy', -3],
  ['rename', 3],
]);

/** The commands of `ARITY` (lower case), for the test that compares them with the server. */
export const KNOWN_COMMANDS: readonly string[] = [...ARITY.keys()];

/** Whether `name` is a known command and `argc` (arguments with the name) an argument count it accepts. */
export function knownArity(name: string, argc: number): boolean {
  const arity = ARITY.get(name.toLowerCase());
  return arity !== undefined && (arity >= 0 ? argc === arity : argc >= -arity);
}
