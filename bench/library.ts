/**
 * The library the benchmarks measure: a source tree (`src/`) bundled the way `npm run build` bundles
 * `dist/` (tsup.config.ts: esbuild, ESM, platform node, target node20, one bundle per public entry point with
 * shared chunks, every dependency left as an import, no `keepNames`), written to a temp dir and imported.
 * This checkout and BENCH_COMPARE's tree load through `loadLibrary` alike, so "before" and "after" both run
 * as bundled ESM, each as one copy of its own, and differ only by their code. (Loading `src/` through tsx
 * instead measured ~1.45× the CPU of the bundle, and a second copy of a tree through tsx ran at 0.62–0.84 of
 * the first: docs/history/benchmarks.md, "Memory store and the shell, round three".)
 */
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import type * as Root from '../src/index.js';
import type * as Memory from '../src/adapters/memory/index.js';
import type * as Postgres from '../src/adapters/postgres/index.js';
import type * as Redis from '../src/adapters/redis/index.js';
import type * as Etcd from '../src/adapters/etcd/index.js';
import type * as Sqlite from '../src/adapters/sqlite/index.js';
import type * as Cycles from './cycles.js';

/** One tree's public entry points, as a user imports them (`leasefence`, `leasefence/memory`, ...). */
export interface Library {
  /** `leasefence`. */
  readonly root: typeof Root;
  /** `leasefence/memory`. */
  readonly memory: typeof Memory;
  /** `leasefence/postgres`. */
  readonly postgres: typeof Postgres;
  /** `leasefence/redis`. */
  readonly redis: typeof Redis;
  /** `leasefence/etcd`. */
  readonly etcd: typeof Etcd;
  /** `leasefence/sqlite`. */
  readonly sqlite: typeof Sqlite;
  /** bench/cycles.ts, bundled with this tree: the loops that call it, a copy of their own per tree. */
  readonly cycles: typeof Cycles;
}

/**
 * The public entry points the bench groups use, named and placed as in tsup.config.ts's `entry` (relative
 * to `src/`); test/bench/library.test.ts checks that they still match it.
 */
export const ENTRIES = {
  index: 'index.ts',
  memory: 'adapters/memory/index.ts',
  postgres: 'adapters/postgres/index.ts',
  redis: 'adapters/redis/index.ts',
  etcd: 'adapters/etcd/index.ts',
  sqlite: 'adapters/sqlite/index.ts',
} as const;

/** tsup.config.ts's `target` (checked by test/bench/library.test.ts). */
export const TARGET = 'node20';

/** This checkout's `src/`. */
export const THIS_SRC = resolve(import.meta.dirname, '../src');

/** The benchmark loops, bundled into each tree's library (see cycles.ts for why). */
const CYCLES = resolve(import.meta.dirname, 'cycles.ts');
const NODE_MODULES = resolve(import.meta.dirname, '../node_modules');
const directories: string[] = [];

/** Removes every bundle loaded so far (also done when the process exits). */
export function removeBundles(): void {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
}
process.once('exit', removeBundles);

/**
 * Bundles the tree at `src` (a `src/` directory: this checkout's, or another's extracted with
 * `git archive <commit> src`) into a temp dir of its own and imports it. Every call makes a new copy, even
 * of the same tree (the self-check row loads this tree twice). The temp dir is removed when the process
 * exits, or by `removeBundles`.
 */
export async function loadLibrary(src: string): Promise<Library> {
  const source = resolve(src);
  const directory = mkdtempSync(join(tmpdir(), 'leasefence-bench-library-'));
  directories.push(directory);
  // NOTE: dependencies stay imports, as in dist/; the link lets Node resolve them from this checkout's
  // node_modules (one copy of pg, ioredis... for both trees, as for contenders and baselines).
  symlinkSync(NODE_MODULES, join(directory, 'node_modules'), 'dir');
  const outdir = join(directory, 'dist');
  await build({
    entryPoints: { ...Object.fromEntries(Object.entries(ENTRIES).map(([name, file]) => [name, join(source, file)])), cycles: CYCLES },
    outdir,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: TARGET,
    splitting: true,
    treeShaking: true,
    packages: 'external',
    // NOTE: .mjs so that Node (and tsx's loader) take the bundle as ESM with no package.json beside it.
    outExtension: { '.js': '.mjs' },
    logLevel: 'warning',
  });
  const load = async <T>(name: keyof typeof ENTRIES | 'cycles'): Promise<T> =>
    (await import(pathToFileURL(join(outdir, `${name}.mjs`)).href)) as T;
  return {
    root: await load('index'),
    memory: await load('memory'),
    postgres: await load('postgres'),
    redis: await load('redis'),
    etcd: await load('etcd'),
    sqlite: await load('sqlite'),
    cycles: await load('cycles'),
  };
}

let mine: Promise<Library> | undefined;
let compared: Promise<Library | null> | undefined;

/** This checkout's library, bundled once and shared by every group. */
export function thisLibrary(): Promise<Library> {
  mine ??= loadLibrary(THIS_SRC);
  return mine;
}

/** BENCH_COMPARE's tree (its `src/`), bundled once and shared by every group, or null when unset. */
export function comparedLibrary(): Promise<Library | null> {
  const compare = process.env['BENCH_COMPARE'];
  compared ??= compare === undefined || compare === '' ? Promise.resolve(null) : loadLibrary(compare);
  return compared;
}
