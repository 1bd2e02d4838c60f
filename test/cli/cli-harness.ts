/**
 * Runs the `leasefence` CLI as a separate process (node + tsx on the sources), as a user would, and in a
 * tmux pseudo-terminal for the interactive parts.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { runCli as runInProcess } from '../../src/cli/main.js';
import { findOrInstall } from '../support/provision.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
/** tsx's loader by absolute path, so the CLI can run from any working directory. */
const TSX_LOADER = join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs');
const BIN = join(ROOT, 'src', 'cli', 'bin.ts');

/** The command line that runs the CLI. */
export const CLI_COMMAND: readonly string[] = ['node', '--import', TSX_LOADER, BIN];

/** What a CLI run printed and its exit code. */
export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI with `args` (stdin: `input`, or empty and not a terminal). */
export function runCli(
  args: readonly string[],
  options: { readonly cwd?: string; readonly env?: Record<string, string>; readonly input?: string } = {},
): Promise<CliRun> {
  if (!existsSync(TSX_LOADER)) throw new Error(`tsx loader not found at ${TSX_LOADER}`);
  return new Promise((done, fail) => {
    const child = spawn(CLI_COMMAND[0] as string, [...CLI_COMMAND.slice(1), ...args], {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, LEASEFENCE_STORE: '', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', fail);
    child.on('close', (code) => done({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

const exec = promisify(execFile);

/** The tmux binary on PATH, or `null`. */
function installedTmux(): string | null {
  const which = spawnSync('which', ['tmux'], { encoding: 'utf8' });
  const path = which.status === 0 ? which.stdout.trim() : '';
  return path === '' ? null : path;
}

/** A tmux session (its own server socket) running one command in a pseudo-terminal. */
export interface TerminalSession {
  /** The visible screen, as text. */
  screen(): Promise<string>;
  /** Types `text` (tmux key names allowed, e.g. `Enter`). */
  type(...keys: string[]): Promise<void>;
  /** Waits until the screen matches `pattern` (or throws after `timeoutMs`), and returns it. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  close(): Promise<void>;
}

/** Starts `command` (shell words, already quoted) in a new tmux session of 200 x 50 cells. */
export async function startTerminal(command: string): Promise<TerminalSession> {
  const socket = `leasefence-cli-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const binary = findOrInstall(
    'tmux',
    installedTmux,
    'tmux not found on PATH: install it with `sudo apt-get install -y tmux` (the CLI tests drive the confirmation prompt in a tmux pseudo-terminal).',
  );
  const tmux = (...args: string[]) => exec(binary, ['-L', socket, ...args]);
  await tmux('new-session', '-d', '-s', 'cli', '-x', '200', '-y', '50', `cd ${ROOT} && ${command}; echo "[exit $?]"; sleep 60`);
  const screen = async (): Promise<string> => (await tmux('capture-pane', '-p', '-t', 'cli')).stdout;
  return {
    screen,
    type: async (...keys) => void (await tmux('send-keys', '-t', 'cli', ...keys)),
    async waitFor(pattern, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const text = await screen();
        if (pattern.test(text)) return text;
        if (Date.now() > deadline) throw new Error(`the terminal never showed ${pattern}; it shows:\n${text}`);
        await new Promise((wait) => setTimeout(wait, 150));
      }
    },
    close: async () => void (await tmux('kill-server').catch(() => undefined)),
  };
}

/** Quotes one shell word. */
export const shellWord = (word: string): string => `'${word.replaceAll("'", "'\\''")}'`;

/**
 * What a terminal must never receive from caller text: controls but the newline (newlines are checked by
 * counting lines), DEL, C1 controls (U+009B is CSI), line separators and bidi overrides.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is what this pattern is for
export const UNSAFE_ON_A_TERMINAL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** A CLI run in this process (`runCli` of src/cli/main.ts) whose stdin the test types into. */
export interface InProcessRun {
  /** What it printed so far. */
  readonly printed: { stdout: string; stderr: string };
  /** Types `text` and ends the input. */
  answer(text: string): void;
  /** Waits until stderr matches `pattern` (or throws after `timeoutMs`). */
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** The exit code. */
  readonly exited: Promise<number>;
}

/** Starts the CLI in this process with `args`; stdin is a terminal when `tty` (a `PassThrough` marked `isTTY`). */
export function startInProcess(
  args: readonly string[],
  { tty = true, env = {} }: { readonly tty?: boolean; readonly env?: Record<string, string> } = {},
): InProcessRun {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const printed = { stdout: '', stderr: '' };
  stdout.on('data', (chunk: Buffer) => {
    printed.stdout += chunk.toString();
  });
  stderr.on('data', (chunk: Buffer) => {
    printed.stderr += chunk.toString();
  });
  const stdin = Object.assign(new PassThrough(), { isTTY: tty });
  const exited = runInProcess(args, { stdout, stderr, stdin, env });
  return {
    printed,
    answer: (text) => void stdin.end(text),
    async waitForStderr(pattern, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(printed.stderr)) {
        if (Date.now() > deadline) throw new Error(`stderr never matched ${pattern}; it holds:\n${printed.stderr}`);
        await new Promise((wait) => setTimeout(wait, 20));
      }
    },
    exited,
  };
}
