/**
 * What the throwaway servers that run as one child process share (redis-server, a Sentinel, PgBouncer):
 * the start / stop / kill / restart of a server on a free loopback port with its files in a temp dir. A
 * start retries on another port (up to 3 tries) when the server does not come up; `stop()`, the exit of
 * this process and, if it dies without running its exit hooks, a detached watchdog kill the server and
 * remove the dir.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, watchForOrphan } from './provision.js';

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `child` has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

export interface ServerProcessOptions {
  /** The server's name in messages (`redis-server`) and in its watchdog's (`leasefence-<name>-watchdog`). */
  readonly name: string;
  readonly binary: string;
  /** The temp dir the server keeps its files in: from here on removed by `stop()` or a failed start. */
  readonly dir: string;
  /** The arguments of a launch on `port`; called before each launch, so it may write the config file they name. */
  readonly args: (port: number) => string[];
  /** Whether the server on `port` is up; polled every 20 ms for 30 s after each launch. */
  readonly ready: (port: number) => Promise<boolean>;
  /** What `ready` checks, for the error when it never says yes: `answer PING`. */
  readonly readyMeans: string;
  /** How `stop()` and `restart()` end the server: SIGTERM (SIGKILL after 5 s), or SIGKILL when it has nothing to save. */
  readonly stopSignal: 'SIGTERM' | 'SIGKILL';
  /** The file in `dir` the server writes its pid to (the watchdog finds the server across restarts by it). */
  readonly pidFile: string;
}

/** A running server process. */
export interface ServerProcess {
  readonly port: number;
  /** The process id, or `null` while it is not running (read it late: `restart()` changes it). */
  readonly pid: number | null;
  /** Stops the server (`stopSignal`) and removes its dir. Idempotent. */
  stop(): Promise<void>;
  /** Kills the server at once (SIGKILL): a crash. `restart()` brings it back. */
  kill(): Promise<void>;
  /** Stops the server if running (`stopSignal`) and launches it again on the same port and dir. */
  restart(): Promise<void>;
}

/** Starts the server described by `options` on a free loopback port. See the module comment. */
export async function startServerProcess(options: ServerProcessOptions): Promise<ServerProcess> {
  const { name, dir } = options;
  let child: ChildProcess | null = null;
  let stopped = false;
  let port = 0;
  let output = '';

  const cleanupOnExit = (): void => {
    if (stopped) return;
    stopped = true;
    child?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', cleanupOnExit);

  const launch = async (): Promise<void> => {
    output = '';
    const started = spawn(options.binary, options.args(port), { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    started.stdout?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000)));
    started.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000)));
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (started.exitCode !== null || started.signalCode !== null) throw new Error(`${name} exited during start:\n${output}`);
      if (await options.ready(port)) return;
      await sleep(20);
    }
    started.kill('SIGKILL');
    throw new Error(`${name} did not ${options.readyMeans} within 30 s:\n${output}`);
  };

  const halt = async (signal: NodeJS.Signals): Promise<void> => {
    const running = child;
    if (running === null) return;
    child = null;
    running.kill(signal);
    const timer = signal === 'SIGKILL' ? undefined : setTimeout(() => running.kill('SIGKILL'), 5_000);
    await exited(running);
    clearTimeout(timer);
  };

  for (let attempt = 1; ; attempt += 1) {
    port = await freePort();
    try {
      await launch();
      watchForOrphan(`leasefence-${name}-watchdog`, dir, `kill -KILL "$(cat '${join(dir, options.pidFile)}')"`);
      break;
    } catch (error) {
      // NOTE: another process may take the port between probing and binding; try another one.
      await halt('SIGKILL');
      if (attempt >= 3) {
        cleanupOnExit();
        throw error;
      }
    }
  }

  return {
    port,
    get pid() {
      return child?.pid ?? null;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      process.removeListener('exit', cleanupOnExit);
      await halt(options.stopSignal);
      rmSync(dir, { recursive: true, force: true });
    },
    async kill() {
      await halt('SIGKILL');
    },
    async restart() {
      if (stopped) throw new Error(`${name} was stopped; start a new one`);
      await halt(options.stopSignal);
      await launch();
    },
  };
}
