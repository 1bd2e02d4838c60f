/**
 * The import structure of src/, as a specification (issue 23, "No circles"). Parses the import and
 * export-from specifiers of every src/**\/*.ts with TypeScript's own pre-processor (no extra dependency),
 * type-only imports included: a type import is a dependency of the declaration files too.
 *
 * Rules:
 * 1. No import cycle anywhere in src/.
 * 2. No module inside src/ imports the package barrel src/index.ts.
 * 3. A store adapter (src/adapters/**) imports only
 *    - the store-author entry src/store-entry.ts (`leasefence/store`) or a module it re-exports, which is
 *      exactly STORE_ENTRY_MODULES below (a module added to the entry is a decision this test makes visible),
 *    - the pure core src/fence/**,
 *    - files of src/adapters/** (its own directory, and the shared src/adapters/*.ts helpers),
 *    - node: built-ins (not checked here: only relative specifiers are src modules),
 *    i.e. nothing an outside store author could not import from `leasefence/store`.
 * 4. The pure core src/fence/** imports only src/fence/**.
 * 5. Neither the store-author entry nor the public types of the lease API (src/leases-types.ts) reach the
 *    shell (SHELL below: the modules that run operations), even transitively.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** src-relative paths of the src modules `file` imports (relative specifiers only; `.js` mapped to `.ts`). */
function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles
    .map((imported) => imported.fileName)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => relative(SRC, resolve(dirname(file), specifier.replace(/\.js$/, '.ts'))));
}

function graph(): Map<string, string[]> {
  return new Map(sourceFiles(SRC).map((file) => [relative(SRC, file), importsOf(file)]));
}

/** Every elementary cycle found by a depth-first search, each once (as the path that closes it). */
function cycles(edges: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (state.get(next) === undefined && edges.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...edges.keys()].sort()) if (state.get(node) === undefined) visit(node);
  return found;
}

/** What src/store-entry.ts re-exports from: the modules an adapter may import besides fence/ and adapters/. */
const STORE_ENTRY_MODULES = [
  'clock.ts',
  'errors.ts',
  // NOTE: claim-next's commands and outcomes (types only), for the optional item methods of a store.
  'fence/claim-next.ts',
  'fence/operations.ts',
  'fence/permits.ts',
  // NOTE: the key's queue of waiting claims (the reference rules for a store that decides in SQL or Lua).
  'fence/queue.ts',
  'fence/token.ts',
  'fence/transitions.ts',
  'fence/types.ts',
  'fence/verdict.ts',
  'gate.ts',
  // NOTE: the lease handle (no shell imports, see rule 5): `leaseFence` turns a handle given to a store's own
  // method (Postgres `fencedStatement`) into its checked fence.
  'lease.ts',
  'list.ts',
  'redact.ts',
  'secret-hash.ts',
  'secret.ts',
  'store.ts',
  'unreadable-checkpoint.ts',
  'validate.ts',
  'write-refusal.ts',
];

/** The imperative shell: the modules that run operations against a store. */
const SHELL = [
  'leases.ts',
  'with-lease.ts',
  'renewal.ts',
  'observed-leases.ts',
  'operator.ts',
  'events.ts',
  'waiting/key-waiters.ts',
  'waiting/waiter.ts',
  'waiting/waiting-claims.ts',
  'waiting/with-lease-claim.ts',
];

/** Every module `from` imports, directly or not. */
function reachable(edges: Map<string, string[]>, from: string): Set<string> {
  const seen = new Set<string>();
  const visit = (node: string): void => {
    for (const next of edges.get(node) ?? []) {
      if (!seen.has(next)) {
        seen.add(next);
        visit(next);
      }
    }
  };
  visit(from);
  return seen;
}

describe('the import structure of src/', () => {
  const edges = graph();

  it('has no import cycle', () => {
    expect(cycles(edges).map((cycle) => cycle.join(' -> '))).toEqual([]);
  });

  it('never imports the package barrel src/index.ts from inside src/', () => {
    const importers = [...edges].filter(([, imports]) => imports.includes('index.ts')).map(([file]) => file);
    expect(importers).toEqual([]);
  });

  it('has a store-author entry that re-exports exactly the modules adapters may use', () => {
    expect([...new Set(edges.get('store-entry.ts'))].sort()).toEqual(STORE_ENTRY_MODULES);
  });

  it('lets adapters import only the store-author entry, its modules, the pure core and adapter files', () => {
    const allowed = new Set(['store-entry.ts', ...STORE_ENTRY_MODULES]);
    const outside = [...edges]
      .filter(([file]) => file.startsWith('adapters/'))
      .flatMap(([file, imports]) => imports.map((imported) => [file, imported] as const))
      .filter(([, imported]) => !imported.startsWith('adapters/') && !imported.startsWith('fence/') && !allowed.has(imported))
      .map(([file, imported]) => `${file} imports ${imported}`);
    expect(outside).toEqual([]);
  });

  it('keeps the store-author entry and the public types of the lease API clear of the shell, even transitively', () => {
    for (const module of ['store-entry.ts', 'leases-types.ts']) {
      expect(
        [...reachable(edges, module)].filter((reached) => SHELL.includes(reached)),
        module,
      ).toEqual([]);
    }
  });

  it('keeps the pure core src/fence/ free of imports from outside it', () => {
    const outside = [...edges]
      .filter(([file]) => file.startsWith('fence/'))
      .flatMap(([file, imports]) =>
        imports.filter((imported) => !imported.startsWith('fence/')).map((imported) => `${file} imports ${imported}`),
      );
    expect(outside).toEqual([]);
  });
});
