/**
 * The README's API overview keeps up with the main entry: every name `leasefence` exports (the `export { ... }`
 * and `export type { ... }` lists of src/index.ts) appears in a code span of the README, so an application
 * author who reads only the README has seen every name (issue 23: "every name appears in the README or the
 * API reference"; the reference is test/docs/api-reference.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The names `source` re-exports: `export { a, type B, c as d } from ...` gives a, B, d. */
function exportedNames(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  return [...code.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)].flatMap((match) =>
    (match[1] ?? '')
      .split(',')
      .map((part) => part.trim().replace(/^type\s+/, ''))
      .filter((part) => part !== '')
      .map((part) => part.split(/\s+as\s+/).pop() ?? part),
  );
}

test('every name of the main entry appears in a code span of the README', () => {
  const names = exportedNames(readFileSync(join(ROOT, 'src', 'index.ts'), 'utf8'));
  expect(names).toContain('createLeases');
  const spans = [...readFileSync(join(ROOT, 'README.md'), 'utf8').matchAll(/`([^`\n]+)`/g)].map((match) => match[1] ?? '');
  const named = (name: string): boolean =>
    spans.some((span) => new RegExp(`(^|[^\\w$])${name.replace(/\$/g, '\\$')}($|[^\\w$])`).test(span));
  expect(names.filter((name) => !named(name))).toEqual([]);
});
