/**
 * The prose docs keep up with the main entry: every name `leasefence` exports (the `export { ... }` and
 * `export type { ... }` lists of src/index.ts) appears in a code span of README.md or of docs/glossary.md (which
 * the README's API section links), so an application author meets every name outside the generated reference
 * (issue 23: "every name appears in the README or the API reference"; the reference is checked by
 * test/docs/api-reference.test.ts).
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

test('every name of the main entry appears in a code span of the README or of docs/glossary.md', () => {
  const names = exportedNames(readFileSync(join(ROOT, 'src', 'index.ts'), 'utf8'));
  expect(names).toContain('createLeases');
  const text = ['README.md', join('docs', 'glossary.md')].map((file) => readFileSync(join(ROOT, file), 'utf8')).join('\n');
  const spans = [...text.matchAll(/`([^`\n]+)`/g)].map((match) => match[1] ?? '');
  const named = (name: string): boolean =>
    spans.some((span) => new RegExp(`(^|[^\\w$])${name.replace(/\$/g, '\\$')}($|[^\\w$])`).test(span));
  expect(names.filter((name) => !named(name))).toEqual([]);
});
