/**
 * The arguments of a recorded Redis command (its own file so that the recorder and its conditions share them
 * without importing each other).
 */

/** A key argument declared with `tx.key(name)`: passed to the script in KEYS, never as a plain value. */
export class RedisKey {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
}

/** An argument of a recorded command. Numbers are sent as their decimal text. */
export type RedisArgument = string | number | bigint | RedisKey;
