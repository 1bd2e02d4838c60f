/**
 * Where the CLI loads a store's driver (`pg`, `ioredis`, `redis`, `better-sqlite3`) from: the project that
 * installed leasefence, or a directory the operator names (`--driver-path`). Never the current directory
 * or its parents: a `node_modules/pg` planted in any parent of wherever the CLI happens to run would
 * otherwise run with the operator's rights and read `LEASEFENCE_STORE`, password included.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The root of the leasefence package this file belongs to: the nearest parent with a package.json named leasefence. */
function packageRoot(file: string): string | null {
  for (let directory = dirname(file); ; directory = dirname(directory)) {
    const manifest = join(directory, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'leasefence') return directory;
      } catch {
        // NOTE: an unreadable manifest is not ours; keep looking.
      }
    }
    if (dirname(directory) === directory) return null;
  }
}

/**
 * The `node_modules` directories of leasefence's own install: its own (nested dependencies) and the one it
 * is installed in (the project's, where npm puts peer drivers; or the global prefix's for a global install).
 */
export function installDirectories(cliFile: string = fileURLToPath(import.meta.url)): string[] {
  const root = packageRoot(cliFile);
  if (root === null) return [];
  const parent = dirname(root);
  return basename(parent) === 'node_modules' ? [join(root, 'node_modules'), parent] : [join(root, 'node_modules')];
}

/** The `node_modules` directory `--driver-path` names: a project directory's, or the directory itself when it is one. */
export function driverDirectory(path: string): string {
  const absolute = resolve(path);
  return basename(absolute) === 'node_modules' ? absolute : join(absolute, 'node_modules');
}

/**
 * Loads `name` from the first of `directories` (each a `node_modules`) that has it, `null` when none has it.
 * NOTE: resolution starts inside the directory that holds the package, where Node looks first, so the
 * package's own `exports` apply and nothing above that directory is ever read.
 */
export async function loadDriver(name: string, directories: readonly string[]): Promise<unknown> {
  for (const directory of directories) {
    if (!existsSync(join(directory, name, 'package.json'))) continue;
    const resolved = createRequire(join(directory, 'leasefence-driver-lookup.js')).resolve(name);
    // NOTE: a package whose entry file is missing makes Node try the directories above: refuse what it found there.
    if (!resolved.startsWith(realpathSync(join(directory, name)) + sep))
      throw new Error(`${name} in ${directory} has no loadable entry point`);
    return import(pathToFileURL(resolved).href);
  }
  return null;
}
