/**
 * `leasefence watch`: redraws the lease table every interval (on a terminal: in place, clearing the
 * screen; otherwise: one frame after another, separated by a blank line), until interrupted or after
 * `iterations` frames. A failed refresh shows its error and the next one tries again, on a new connection
 * (see `WatchOptions.reconnect`); the exit code then reports the last frame's failure.
 */
import { printable } from '../printable.js';
import type { ListedLease } from '../operator.js';
import type { CliIo } from './io.js';
import { formatLeaseTable, toJson } from './render.js';

/** What `runWatch` draws and how often. */
export interface WatchOptions {
  /** Reads one frame's leases. */
  readonly frame: () => Promise<ListedLease[]>;
  /**
   * Replaces the connection after a failed refresh, before the next one: a client whose server went away
   * may have given up for good (the CLI's ioredis client does not reconnect), so a watch would otherwise
   * keep failing after the server is back.
   */
  readonly reconnect: () => Promise<void>;
  readonly title: string;
  /** Masks what a failed refresh's message must not show (the store URL's secrets a driver may quote). */
  readonly mask: (text: string) => string;
  readonly intervalMs: number;
  readonly iterations: number;
  /** One JSON document per line per frame instead of a table. */
  readonly json: boolean;
  readonly io: CliIo;
}

const CLEAR_SCREEN = '\u001b[H\u001b[2J';

/**
 * Runs the live view until interrupted or `iterations` frames were drawn. Resolves with the error of the last
 * frame drawn, or `null` when it succeeded.
 */
export async function runWatch(options: WatchOptions): Promise<unknown> {
  const { io, json } = options;
  const terminal = (io.stdout as { isTTY?: boolean }).isTTY === true;
  let stopped = false;
  void io.interrupted?.then(() => {
    stopped = true;
  });
  let failure: unknown = null;
  for (let drawn = 0; drawn < options.iterations && !stopped; drawn += 1) {
    let body: string;
    try {
      if (failure !== null) await options.reconnect();
      const leases = await options.frame();
      failure = null;
      body = json ? toJson({ at: Date.now(), leases }, 0) : leases.length === 0 ? 'no leases' : formatLeaseTable(leases);
    } catch (error) {
      failure = error;
      body = printable(options.mask(`refresh failed: ${error instanceof Error ? error.message : String(error)}`));
    }
    if (json) io.stdout.write(`${body}\n`);
    else {
      const header = `${printable(options.title)}  ${new Date().toISOString()}  every ${options.intervalMs / 1000} s, Ctrl-C to quit`;
      io.stdout.write(`${terminal ? CLEAR_SCREEN : drawn > 0 ? '\n' : ''}${header}\n\n${body}\n`);
    }
    if (drawn + 1 < options.iterations) await sleep(options.intervalMs, io.interrupted);
  }
  return failure;
}

/** Waits `ms`, or less when `interrupted` settles first. */
function sleep(ms: number, interrupted: Promise<void> | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    void interrupted?.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
