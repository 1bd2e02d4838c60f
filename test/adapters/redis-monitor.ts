/**
 * Counts the commands one client connection sends, as the server sees them (`MONITOR`, filtered by the
 * connection's address): the truth for "one round trip per operation".
 */
import { Redis } from 'ioredis';
import { toConnection } from '../../src/adapters/redis/connection.js';
import type { RedisClient } from '../../src/adapters/redis/index.js';

export interface CommandWatch {
  /** Runs `action` and returns the names (upper case) of the commands the watched client sent meanwhile. */
  commandsDuring(action: () => Promise<unknown>): Promise<string[]>;
  /**
   * Runs `action` and returns the names (upper case) of the commands scripts ran meanwhile (`redis.call`,
   * any client's: run it while no other client sends scripts).
   */
  scriptCommandsDuring(action: () => Promise<unknown>): Promise<string[]>;
  close(): Promise<void>;
}

/** Watches the single connection of `client` (an ioredis or node-redis client) on the server at `url`. */
export async function watchCommands(url: string, client: RedisClient): Promise<CommandWatch> {
  const connection = toConnection(client);
  const info = String(await connection.send(['CLIENT', 'INFO']));
  const address = /(?:^|\s)addr=(\S+)/.exec(info)?.[1];
  if (address === undefined) throw new Error(`no addr in CLIENT INFO: ${info}`);
  const admin = new Redis(url);
  const monitor = await admin.monitor();
  let seen: string[] | null = null;
  let scripted: string[] | null = null;
  const markers = new Map<string, () => void>();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua') scripted?.push((args[0] ?? '').toUpperCase());
    if (source !== address) return;
    const [name = '', first] = args;
    const waiting = name.toUpperCase() === 'ECHO' && first !== undefined ? markers.get(first) : undefined;
    if (waiting !== undefined) waiting();
    else seen?.push(name.toUpperCase());
  });
  let count = 0;
  // NOTE: a marker makes sure MONITOR is attached and drained up to this point.
  const fence = async (): Promise<void> => {
    const marker = `marker-${++count}`;
    const arrived = new Promise<void>((resolve) => markers.set(marker, resolve));
    await connection.send(['ECHO', marker]);
    await arrived;
  };
  return {
    async commandsDuring(action) {
      await fence();
      const during: string[] = [];
      seen = during;
      try {
        await action();
        await fence();
      } finally {
        seen = null;
      }
      return during;
    },
    async scriptCommandsDuring(action) {
      await fence();
      const during: string[] = [];
      scripted = during;
      try {
        await action();
        await fence();
      } finally {
        scripted = null;
      }
      return during;
    },
    async close() {
      monitor.disconnect();
      admin.disconnect();
    },
  };
}
