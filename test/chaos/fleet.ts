/**
 * The worker processes of one run: spawn (with `node --import tsx`), SIGKILL and respawn as a new
 * incarnation, SIGSTOP/SIGCONT, IPC, and an orderly stop that ends in SIGKILL for whatever hangs.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HarnessMessage, WorkerMessage, WorkerSetup } from './messages.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const WORKER_SCRIPT = join(HERE, 'worker.ts');

/**
 * How to start a worker: a bundle built once per process with esbuild (about 0.15 s to start instead of
 * 0.6 s with the tsx loader, which adds up over dozens of spawns on 2 cores), or tsx when esbuild is absent.
 */
let entry: Promise<{ script: string; execArgv: string[] }> | null = null;
export function workerEntry(): Promise<{ script: string; execArgv: string[] }> {
  entry ??= (async () => {
    try {
      const esbuild = (await import('esbuild' as string)) as {
        build(options: Record<string, unknown>): Promise<{ outputFiles: Array<{ contents: Uint8Array }> }>;
      };
      const built = await esbuild.build({
        entryPoints: [WORKER_SCRIPT],
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        packages: 'external',
        write: false,
        logLevel: 'silent',
      });
      const contents = built.outputFiles[0]?.contents;
      if (contents === undefined) throw new Error('esbuild produced no output');
      // NOTE: inside node_modules, so the bundle's bare imports (pg, ioredis) resolve to the project's; named by
      // content, so concurrent test files share one file and nothing piles up.
      const dir = join(HERE, '..', '..', 'node_modules', '.cache', 'leasefence-chaos');
      const script = join(dir, `worker-${createHash('sha1').update(contents).digest('hex').slice(0, 16)}.mjs`);
      if (!existsSync(script)) {
        mkdirSync(dir, { recursive: true });
        const temporary = `${script}.${process.pid}.tmp`;
        writeFileSync(temporary, contents);
        renameSync(temporary, script);
      }
      return { script, execArgv: [] };
    } catch {
      return { script: WORKER_SCRIPT, execArgv: ['--import', 'tsx'] };
    }
  })();
  return entry;
}

/**
 * Crashes of a driver, not of leasefence, that the harness reports apart. postgres.js 3.4.9 throws from a
 * `setImmediate` when a connection closes (terminated backend, reset, server restart) with a small write
 * buffered: the TypeError escapes every try/catch and kills the process. Upstream: porsager/postgres#1154,
 * #1066, #1208 (fixes proposed in #1168, #1209; not released in 3.4.9). A user's supervisor restarts the
 * process, as the harness does; safety is still checked on the history, the dead process's requests unknown.
 */
export const KNOWN_DRIVER_CRASHES: ReadonlyArray<{ readonly issue: string; readonly pattern: RegExp }> = [
  {
    issue: 'porsager/postgres#1154',
    pattern:
      /postgres\/src\/connection\.js:\d+[\s\S]*socket\.write[\s\S]*TypeError: Cannot read properties of null \(reading 'write'\)[\s\S]*at Immediate\.nextWrite/,
  },
];

/** How long a worker may take to load and report ready. */
const WORKER_START_MS = 120_000;

/** One worker slot; its process changes on every respawn. */
export interface WorkerSlot {
  readonly slot: number;
  /** The current incarnation's name (`w2.1`). */
  proc: string;
  process: ChildProcess;
  incarnation: number;
  paused: boolean;
  alive: boolean;
  /** Told to kill itself (`expectDeath`): its exit is a fault, not a crash. */
  dying: boolean;
}

type Listener = (slot: WorkerSlot, message: WorkerMessage) => void;

/** A worker process that died on its own (not killed by the nemesis, not stopped by the harness). */
export interface WorkerCrash {
  readonly proc: string;
  readonly code: number | null;
  readonly signal: string | null;
  /** The end of its stderr. */
  readonly stderr: string;
}

/** The processes of a run. */
export class Fleet {
  readonly slots: WorkerSlot[] = [];
  /** Workers that died on their own: a crash of the library or the driver under faults. */
  readonly crashes: WorkerCrash[] = [];
  /** Workers killed by a known bug of their driver (`KNOWN_DRIVER_CRASHES`): reported, respawned, not failed. */
  readonly driverCrashes: Array<WorkerCrash & { readonly known: string }> = [];
  readonly #listeners = new Set<Listener>();
  #stopping = false;

  #entry: { script: string; execArgv: string[] } = { script: WORKER_SCRIPT, execArgv: ['--import', 'tsx'] };

  constructor(private readonly setupOf: (slot: number, proc: string) => WorkerSetup) {}

  /** Starts `count` workers and waits until each has connected and reported ready. */
  async start(count: number): Promise<void> {
    this.#entry = await workerEntry();
    const started: Array<Promise<void>> = [];
    for (let slot = 0; slot < count; slot += 1) {
      const proc = `w${slot}.0`;
      const worker: WorkerSlot = { slot, proc, process: this.#spawn(slot, proc), incarnation: 0, paused: false, alive: true, dying: false };
      this.slots.push(worker);
      started.push(this.#ready(worker));
    }
    await Promise.all(started);
  }

  /** Subscribes to worker messages; returns the unsubscribe function. */
  on(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  send(worker: WorkerSlot, message: HarnessMessage): void {
    if (worker.alive && worker.process.connected) worker.process.send(message);
  }

  /** SIGKILL; the slot is respawned as the next incarnation (not awaited: the caller decides). */
  kill(worker: WorkerSlot): void {
    worker.process.kill('SIGKILL');
    worker.alive = false;
    worker.paused = false;
  }

  /** Starts the next incarnation of a killed worker and waits for it to be ready. */
  async respawn(worker: WorkerSlot): Promise<void> {
    worker.incarnation += 1;
    worker.proc = `w${worker.slot}.${worker.incarnation}`;
    worker.process = this.#spawn(worker.slot, worker.proc);
    worker.alive = true;
    worker.dying = false;
    await this.#ready(worker);
  }

  /**
   * Marks `worker` as about to kill itself; resolves `true` when it exited within `timeoutMs`, else SIGKILLs
   * it and resolves `false`. Either way the slot is dead, ready for `respawn`.
   */
  expectDeath(worker: WorkerSlot, timeoutMs: number): Promise<boolean> {
    worker.dying = true;
    const child = worker.process;
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        child.off('exit', onExit);
        this.kill(worker);
        resolve(false);
      }, timeoutMs);
      const onExit = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      child.once('exit', onExit);
    });
  }

  pause(worker: WorkerSlot): void {
    if (!worker.alive) return;
    worker.process.kill('SIGSTOP');
    worker.paused = true;
  }

  resume(worker: WorkerSlot): void {
    if (!worker.alive) return;
    worker.process.kill('SIGCONT');
    worker.paused = false;
  }

  /** Resumes everything, asks every worker to stop, and SIGKILLs what has not exited after `graceMs`. */
  async stop(graceMs = 6000): Promise<void> {
    this.#stopping = true;
    const exits = this.slots.map((worker) => {
      if (!worker.alive || worker.process.exitCode !== null) return Promise.resolve();
      if (worker.paused) this.resume(worker);
      const exited = new Promise<void>((resolve) => worker.process.once('exit', () => resolve()));
      this.send(worker, { type: 'stop' });
      return Promise.race([exited, new Promise<void>((resolve) => setTimeout(resolve, graceMs))]).then(() => {
        if (worker.process.exitCode === null && worker.process.signalCode === null) this.kill(worker);
      });
    });
    await Promise.all(exits);
  }

  #spawn(slot: number, proc: string): ChildProcess {
    const setup = this.setupOf(slot, proc);
    const child = fork(this.#entry.script, [], {
      execArgv: this.#entry.execArgv,
      env: { ...process.env, CHAOS_WORKER: JSON.stringify(setup) },
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      process.stderr.write(chunk);
      stderr = (stderr + chunk.toString()).slice(-2000);
    });
    child.once('exit', (code, signal) => {
      const worker = this.slots.find((candidate) => candidate.process === child);
      // NOTE: a SIGKILL from the nemesis clears `alive` first; anything else before stop() is a crash.
      if (worker?.dying) {
        worker.alive = false;
        worker.paused = false;
      } else if (worker?.alive && !this.#stopping) {
        worker.alive = false;
        // NOTE: classified once stderr is closed: its last chunks can arrive after the exit event.
        child.once('close', () => {
          const crash = { proc, code, signal, stderr };
          const known = KNOWN_DRIVER_CRASHES.find((candidate) => candidate.pattern.test(stderr));
          if (known === undefined) this.crashes.push(crash);
          else this.driverCrashes.push({ ...crash, known: known.issue });
        });
      }
    });
    child.on('message', (message: WorkerMessage) => {
      const worker = this.slots.find((candidate) => candidate.process === child);
      if (worker !== undefined) for (const listener of this.#listeners) listener(worker, message);
    });
    child.on('error', () => undefined);
    return child;
  }

  #ready(worker: WorkerSlot): Promise<void> {
    const child = worker.process;
    return new Promise<void>((resolve, reject) => {
      // NOTE: only a bound on a hung start: starting a tsx worker took over 20 s on a loaded 2-core machine.
      const timer = setTimeout(
        () => reject(new Error(`worker ${worker.proc} did not start within ${WORKER_START_MS / 1000} s`)),
        WORKER_START_MS,
      );
      const onMessage = (message: WorkerMessage): void => {
        if (message.type !== 'ready') return;
        clearTimeout(timer);
        child.off('message', onMessage);
        resolve();
      };
      child.on('message', onMessage);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`worker ${worker.proc} exited with ${code} before it was ready`));
      });
    });
  }
}
