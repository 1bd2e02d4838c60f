/**
 * Checks of the package as users get it: build with tsup, `npm pack`, lint the tarball with publint and
 * @arethetypeswrong/cli, install it into a throwaway project and run test/package/smoke.mjs there.
 * Used by `npm run check:package` (scripts/check-package.ts) and by test/package/package.test.ts.
 *
 * Everything happens in a temp work dir: the build goes to `<workDir>/package/dist`, never to the repo's
 * `dist/`, so a check can run while tests, the demo or another build use the checkout.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file lives in `scripts/`). */
export const REPO_ROOT: string = resolve(fileURLToPath(new URL('..', import.meta.url)));

const BIN = join(REPO_ROOT, 'node_modules', '.bin');
/** Files `npm pack` takes besides `dist/` (per `files` in package.json); README.md may not exist yet. */
const PACKAGE_FILES = ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md'];

/** The guides and pictures in `docs/` that the package ships (per `files`), so the README can point at them. */
const PACKAGE_DOCS = /^[\w-]+\.(md|svg)$/;

/** What a finished command printed, and how long it took. */
export interface CommandRun {
  readonly command: string;
  readonly exitCode: number;
  readonly output: string;
  readonly ms: number;
}

/** Runs `file args` in `cwd`, capturing stdout and stderr together; never throws for a non-zero exit. */
export function runCommand(file: string, args: readonly string[], cwd: string): Promise<CommandRun> {
  const started = performance.now();
  const command = [file.startsWith(BIN) ? file.slice(BIN.length + 1) : file, ...args].join(' ');
  return new Promise((done) => {
    // NOTE: FORCE_COLOR=0 keeps the captured output readable; CI=true silences npm's progress and funding lines.
    const env = { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1', CI: 'true' };
    execFile(file, [...args], { cwd, env, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const exitCode = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      done({ command, exitCode, output: `${stdout}${stderr}`.trim(), ms: Math.round(performance.now() - started) });
    });
  });
}

/** Throws with the command's output unless it exited 0. */
export function assertSucceeded(run: CommandRun): CommandRun {
  if (run.exitCode !== 0) throw new Error(`\`${run.command}\` exited ${run.exitCode}:\n${run.output}`);
  return run;
}

/** A packed tarball and the runs that made it. */
export interface PackedPackage {
  readonly tarball: string;
  /** Paths inside the tarball, as `npm pack` listed them. */
  readonly files: readonly string[];
  readonly build: CommandRun;
  readonly pack: CommandRun;
}

/** Builds with tsup into `<workDir>/package/dist`, stages the package files beside it and packs it. */
export async function packPackage(workDir: string): Promise<PackedPackage> {
  const stage = join(workDir, 'package');
  const out = join(workDir, 'tarball');
  await mkdir(stage, { recursive: true });
  await mkdir(out, { recursive: true });
  // NOTE: tsup reads tsup.config.ts from the repo root; --out-dir only moves the output (and its `clean`).
  const build = assertSucceeded(await runCommand(join(BIN, 'tsup'), ['--out-dir', join(stage, 'dist')], REPO_ROOT));
  for (const file of PACKAGE_FILES) {
    if (existsSync(join(REPO_ROOT, file))) await copyFile(join(REPO_ROOT, file), join(stage, file));
  }
  await mkdir(join(stage, 'docs'), { recursive: true });
  for (const file of (await readdir(join(REPO_ROOT, 'docs'))).filter((name) => PACKAGE_DOCS.test(name))) {
    await copyFile(join(REPO_ROOT, 'docs', file), join(stage, 'docs', file));
  }
  const pack = assertSucceeded(
    await runCommand('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', out], stage),
  );
  const [report] = JSON.parse(pack.output.slice(pack.output.indexOf('['))) as [{ filename: string; files: { path: string }[] }];
  return { tarball: join(out, report.filename), files: report.files.map((file) => file.path), build, pack };
}

/** publint on the tarball; `--strict` turns its warnings into failures. */
export function runPublint(tarball: string): Promise<CommandRun> {
  return runCommand(join(BIN, 'publint'), ['run', '--strict', tarball], REPO_ROOT);
}

/**
 * @arethetypeswrong/cli on the tarball with the `node16` profile: types must resolve for `require` and
 * `import` under TypeScript's node16/nodenext resolution and for bundlers.
 */
export function runAttw(tarball: string): Promise<CommandRun> {
  // NOTE: the node16 profile skips only the `node10` resolution (TypeScript's legacy `moduleResolution:
  // node`), which ignores `exports` and so cannot see subpaths like `leasefence/memory`. leasefence needs
  // Node >= 20, whose users compile with node16/nodenext or bundler resolution; no rule is ignored.
  return runCommand(join(BIN, 'attw'), [tarball, '--profile', 'node16', '--format', 'table-flipped', '--no-emoji', '--no-color'], REPO_ROOT);
}

/** Installs the tarball into a fresh project (offline: it has no dependencies) and runs the smoke script there. */
export async function runSmoke(workDir: string, tarball: string): Promise<{ install: CommandRun; smoke: CommandRun }> {
  const project = join(workDir, 'consumer');
  await mkdir(project, { recursive: true });
  await writeFile(join(project, 'package.json'), `${JSON.stringify({ name: 'leasefence-smoke', private: true }, null, 2)}\n`);
  const install = assertSucceeded(
    await runCommand('npm', ['install', '--no-save', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', tarball], project),
  );
  // NOTE: the script must live in the consumer project: bare `import 'leasefence'` resolves from the file's folder.
  await writeFile(join(project, 'smoke.mjs'), await readFile(join(REPO_ROOT, 'test', 'package', 'smoke.mjs')));
  const smoke = await runCommand(process.execPath, ['smoke.mjs'], project);
  return { install, smoke };
}

/**
 * After `runSmoke`: links the repo's fast-check into the consumer project (the optional peer dependency of
 * `leasefence/testing`, which the smoke run proved every other entry loads without) and runs
 * test/package/testing-smoke.mjs there under `node --test`.
 */
export async function runTestingSmoke(workDir: string): Promise<CommandRun> {
  const project = join(workDir, 'consumer');
  // NOTE: a link, not an install (offline): fast-check's own dependencies resolve from its real path in the repo.
  await symlink(join(REPO_ROOT, 'node_modules', 'fast-check'), join(project, 'node_modules', 'fast-check'), 'dir');
  await writeFile(join(project, 'testing-smoke.mjs'), await readFile(join(REPO_ROOT, 'test', 'package', 'testing-smoke.mjs')));
  return runCommand(process.execPath, ['--test', '--test-reporter=tap', 'testing-smoke.mjs'], project);
}
