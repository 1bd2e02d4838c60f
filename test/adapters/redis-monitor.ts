/**
 * Counts the commands one client connection sends, as the server sees them (`MONITOR`, filtered by the
 * connection's address): the truth for "one round trip per operation".
 */
import { connect, type Socket } from 'node:net';
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
  let seen: string[] | null = null;
  let scripted: string[] | null = null;
  const markers = new Map<string, () => void>();
  const monitor = await openMonitor(url, (args, source) => {
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
      monitor.destroy();
    },
  };
}

/**
 * A raw `MONITOR` connection: one line per command the server runs, `+<time> [<db> <source>] "<name>" "<arg>"...`
 * (source `lua` for commands run by scripts).
 */
// NOTE: not ioredis's `monitor()`: on a loaded machine its duplicate connection sometimes got a monitor line
// while it still expected the reply to its ready check, and threw "Command queue state error" in beforeAll.
async function openMonitor(url: string, onCommand: (args: string[], source: string) => void): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  let buffered = '';
  let started: (() => void) | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    started = resolve;
    socket.once('error', reject);
  });
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    for (let end = buffered.indexOf('\r\n'); end >= 0; end = buffered.indexOf('\r\n')) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      if (line === '+OK') started?.();
      else if (line.startsWith('-')) socket.destroy(new Error(`MONITOR refused: ${line}`));
      else {
        const parsed = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$/.exec(line);
        if (parsed !== null) onCommand(quotedArguments(parsed[2] ?? ''), parsed[1] ?? '');
      }
    }
  });
  socket.write('MONITOR\r\n');
  await ready;
  socket.on('error', () => undefined); // NOTE: closed by `close()`; a late reset is not a test failure.
  return socket;
}

/** The arguments of a MONITOR line: double-quoted, with `\"`, `\\` and `\xNN` escapes. */
function quotedArguments(text: string): string[] {
  const args: string[] = [];
  for (const match of text.matchAll(/"((?:[^"\\]|\\.)*)"/g)) {
    args.push(
      (match[1] ?? '').replace(/\\x([0-9a-f]{2})|\\(.)/g, (_all, hex: string | undefined, char: string | undefined) =>
        hex !== undefined
          ? String.fromCharCode(parseInt(hex, 16))
          : char === 'n'
            ? '\n'
            : char === 'r'
              ? '\r'
              : char === 't'
                ? '\t'
                : (char ?? ''),
      ),
    );
  }
  return args;
}
