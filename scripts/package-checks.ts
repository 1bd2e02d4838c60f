/**
 * Checks of the package as users get it: build with tsup, `npm pack`, lint the tarball with publint and
 * @arethetypeswrong/cli, install it into a throwaway project and run test/package/smoke.mjs there, and
 * type-check the installed declarations with several TypeScript and @types/node versions.
 * The entries come from package.json "exports", so a new entry is checked without editing the checks.
 * Used by `npm run check:package` (scripts/check-package.ts) and by test/package/package.test.ts.
 *
 * Everything happens in a temp work dir: the build goes to `<workDir>/package/dist`, never to the repo's
 * `dist/`, so a check can run while tests, the demo or another build use the checkout.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file lives in `scripts/`). */
export const REPO_ROOT: string = resolve(fileURLToPath(new URL('..', import.meta.url)));

const BIN = join(REPO_ROOT, 'node_modules', '.bin');
/** Files `npm pack` takes besides `dist/` (per `files` in package.json); README.md may not exist yet. */
const PACKAGE_FILES = ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md'];

/** The guides and pictures in `docs/` that the package ships (per `files`), so the README can point at them. */
const PACKAGE_DOCS = /^[\w-]+\.(md|svg)$/;

/** One entry point of the package: its import specifier and its file name in `dist/` (`index`, `memory`, ...). */
export interface PackageEntry {
  readonly specifier: string;
  readonly file: string;
}

/** The repository's package.json. */
function manifest(): { name: string; exports: Record<string, unknown>; peerDependencies?: Record<string, string> } {
  return JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as ReturnType<typeof manifest>;
}

/** Every entry point in package.json "exports" (but `./package.json`), in the order written there. */
export function packageEntries(): PackageEntry[] {
  const { name, exports } = manifest();
  return Object.entries(exports)
    .filter(([subpath]) => subpath !== './package.json')
    .map(([subpath, target]) => {
      const file = /^\.\/dist\/([\w-]+)\.js$/.exec((target as { import?: { default?: string } }).import?.default ?? '')?.[1];
      if (file === undefined) throw new Error(`package.json exports["${subpath}"]: expected import.default "./dist/<entry>.js"`);
      return { specifier: subpath === '.' ? name : `${name}/${subpath.slice(2)}`, file };
    });
}

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
  const pack = assertSucceeded(await runCommand('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', out], stage));
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
  return runCommand(
    join(BIN, 'attw'),
    [tarball, '--profile', 'node16', '--format', 'table-flipped', '--no-emoji', '--no-color'],
    REPO_ROOT,
  );
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
 * Links the repo's copies of the package's (optional) peer dependencies into `project`'s node_modules.
 * NOTE: links, not installs (offline): their own dependencies resolve from their real paths in the repo.
 */
async function linkPeers(project: string): Promise<void> {
  for (const peer of Object.keys(manifest().peerDependencies ?? {})) {
    const link = join(project, 'node_modules', peer);
    if (existsSync(link)) continue;
    await mkdir(dirname(link), { recursive: true });
    await symlink(join(REPO_ROOT, 'node_modules', peer), link, 'dir');
  }
}

/**
 * After `runSmoke`, which proved every entry without a peer dependency loads without them: links the peer
 * dependencies into the consumer project and loads the entries that need one (`leasefence/otel`,
 * `leasefence/testing`) through import and require (`smoke.mjs --with-peers`).
 */
export async function runPeerSmoke(workDir: string): Promise<CommandRun> {
  const project = join(workDir, 'consumer');
  await linkPeers(project);
  return runCommand(process.execPath, ['smoke.mjs', '--with-peers'], project);
}

/**
 * After `runSmoke`: links the peer dependencies into the consumer project (fast-check is `leasefence/testing`'s)
 * and runs test/package/testing-smoke.mjs there under `node --test`.
 */
export async function runTestingSmoke(workDir: string): Promise<CommandRun> {
  const project = join(workDir, 'consumer');
  await linkPeers(project);
  await writeFile(join(project, 'testing-smoke.mjs'), await readFile(join(REPO_ROOT, 'test', 'package', 'testing-smoke.mjs')));
  return runCommand(process.execPath, ['--test', '--test-reporter=tap', 'testing-smoke.mjs'], project);
}

/** A TypeScript compiler from devDependencies (aliased beside `typescript`, so `npm ci` installs every one). */
const TYPESCRIPTS = ['typescript5', 'typescript', 'typescript7'];
/** The @types/node versions from devDependencies: `@types/node` is the repo's own (Node 20), the rest aliases. */
const NODE_TYPES = ['node', 'node22', 'node24', 'node26'];

/** One compiler and one @types/node, and what `tsc` said about the installed package's declarations. */
export interface TypeCheck {
  readonly typescript: string;
  readonly typesNode: string;
  readonly run: CommandRun;
}

/** The `version` field of an installed package. */
function versionOf(directory: string): string {
  return (JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * Installs the tarball into a fresh project with the peer dependencies linked, and runs `tsc` (strict,
 * `skipLibCheck: false`, `module: nodenext`) on a file that imports every entry from ESM (`.mts`: the
 * `.d.ts` declarations) and one that imports every entry from CommonJS (`.cts`: the `.d.cts`), once per
 * TypeScript in `TYPESCRIPTS` and @types/node in `NODE_TYPES` (a `typeRoots` per @types/node version).
 * Runs two compilers at a time.
 */
export async function runTypeChecks(workDir: string, tarball: string): Promise<TypeCheck[]> {
  const project = join(workDir, 'types-consumer');
  await mkdir(project, { recursive: true });
  await writeFile(join(project, 'package.json'), `${JSON.stringify({ name: 'leasefence-types', private: true }, null, 2)}\n`);
  assertSucceeded(
    await runCommand('npm', ['install', '--no-save', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', tarball], project),
  );
  await linkPeers(project);
  const entries = packageEntries();
  const imports = entries.map((entry, at) => `import * as entry${at} from '${entry.specifier}';`).join('\n');
  const uses = `export const entries = [${entries.map((_, at) => `entry${at}`).join(', ')}];`;
  await writeFile(join(project, 'consumer.mts'), `${imports}\n${uses}\n`);
  await writeFile(join(project, 'consumer.cts'), `${imports}\n${uses}\n`);

  const checks: (() => Promise<TypeCheck>)[] = [];
  for (const typesNode of NODE_TYPES) {
    const installed = join(REPO_ROOT, 'node_modules', '@types', typesNode);
    const roots = join(project, 'types', typesNode);
    await mkdir(roots, { recursive: true });
    await symlink(installed, join(roots, 'node'), 'dir');
    const compilerOptions = {
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'es2022',
      strict: true,
      noEmit: true,
      skipLibCheck: false,
      types: ['node'],
      typeRoots: [`./types/${typesNode}`],
    };
    const tsconfig = `tsconfig.${typesNode}.json`;
    await writeFile(join(project, tsconfig), `${JSON.stringify({ compilerOptions, files: ['consumer.mts', 'consumer.cts'] }, null, 2)}\n`);
    for (const typescript of TYPESCRIPTS) {
      const compiler = join(REPO_ROOT, 'node_modules', typescript);
      checks.push(async () => ({
        typescript: versionOf(compiler),
        typesNode: versionOf(installed),
        run: await runCommand(process.execPath, [join(compiler, 'bin', 'tsc'), '-p', tsconfig], project),
      }));
    }
  }
  const results: TypeCheck[] = [];
  // NOTE: two at a time: each TypeScript 5/6 run takes ~10 s of one core; TypeScript 7 about 1 s.
  for (let at = 0; at < checks.length; at += 2) results.push(...(await Promise.all(checks.slice(at, at + 2).map((check) => check()))));
  return results;
}
