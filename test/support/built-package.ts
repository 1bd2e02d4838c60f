/**
 * The package's JavaScript as users import it, built once per state of the sources and shared by every test
 * file that runs programs against it (test/examples/*, and the README's runnable blocks). It is the
 * library entries of tsup.config.ts without declarations or source maps (a few seconds), in
 * `node_modules/.cache/leasefence-built-<hash>/leasefence`, where `<hash>` covers `src/`, package.json and
 * tsup.config.ts: a test file links it into its temp project as `node_modules/leasefence`.
 *
 * Test files run in parallel forks: the first to get here builds (under a lock directory), the others wait
 * for the finished directory, which appears at once, complete (renamed from a temp dir).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, rename, rm, stat, symlink } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { build, type Options } from 'tsup';
import tsupConfig from '../../tsup.config.js';
import { assertTierMayStart } from './tiers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CACHE = join(ROOT, 'node_modules', '.cache');
/** A lock older than this belongs to a build that died: the next caller takes it over. */
const STALE_LOCK_MS = 300_000;
/** Builds of other source states older than this are removed after a build. */
const OLD_BUILD_MS = 3_600_000;

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

/** A digest of everything the build reads. */
async function sourceHash(): Promise<string> {
  const hash = createHash('sha256');
  for (const file of [...(await filesUnder(join(ROOT, 'src'))), join(ROOT, 'package.json'), join(ROOT, 'tsup.config.ts')]) {
    hash
      .update(relative(ROOT, file))
      .update('\0')
      .update(await readFile(file))
      .update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/** Builds the package into `<dir>/leasefence` (package.json and dist/). */
async function buildInto(dir: string): Promise<void> {
  const target = join(dir, 'leasefence');
  await mkdir(target, { recursive: true });
  await copyFile(join(ROOT, 'package.json'), join(target, 'package.json'));
  // NOTE: the library entries of tsup.config.ts (not the CLI), without declarations or source maps.
  const [library] = tsupConfig as readonly Options[];
  await build({ ...library, outDir: join(target, 'dist'), dts: false, sourcemap: false, silent: true, config: false });
}

async function removeOldBuilds(keep: string): Promise<void> {
  const now = Date.now();
  for (const name of await readdir(CACHE)) {
    if (!name.startsWith('leasefence-built-') || name === keep || name.endsWith('.lock')) continue;
    const path = join(CACHE, name);
    if (now - (await stat(path)).mtimeMs > OLD_BUILD_MS) await rm(path, { recursive: true, force: true });
  }
}

/** Takes the lock (true), or finds it held by a live build (false); a stale lock is removed and retried. */
async function tryLock(lock: string): Promise<boolean> {
  try {
    await mkdir(lock);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const age = Date.now() - (await stat(lock).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs;
    if (age > STALE_LOCK_MS) await rm(lock, { recursive: true, force: true });
    return false;
  }
}

/**
 * The built package's directory (holding package.json and dist/), building it if this state of the
 * sources has not been built yet.
 */
export async function builtPackage(): Promise<string> {
  assertTierMayStart('package build');
  await mkdir(CACHE, { recursive: true });
  const name = `leasefence-built-${await sourceHash()}`;
  const dir = join(CACHE, name);
  const done = join(dir, 'leasefence');
  const lock = `${dir}.lock`;
  for (;;) {
    if (existsSync(done)) return done;
    if (await tryLock(lock)) break;
    await sleep(100);
  }
  try {
    if (existsSync(done)) return done;
    const temp = `${dir}.tmp-${process.pid}`;
    await rm(temp, { recursive: true, force: true });
    await buildInto(temp);
    await rename(temp, dir);
    await removeOldBuilds(name);
    return done;
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

/** Makes `<project>/node_modules/leasefence` the built package (a symlink), as if installed. */
export async function linkBuiltPackage(project: string): Promise<void> {
  await mkdir(join(project, 'node_modules'), { recursive: true });
  await symlink(await builtPackage(), join(project, 'node_modules', 'leasefence'), 'dir');
}
