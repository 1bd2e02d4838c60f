/**
 * docs/errors-and-operations.md keeps up with the code: every error code (`LeaseErrorCode` in src/errors.ts)
 * and every refusal reason a result can carry (`FenceReason` in src/fence/types.ts and the `reason` literal
 * types of src/fence/operations.ts and src/leases-types.ts) has a row in one of its tables.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

/** The string literals of the union `export type <name> = 'a' | 'b' ...;` in `source`. */
function unionLiterals(source: string, name: string): string[] {
  const union = new RegExp(`export type ${name} =([^;]*);`).exec(source)?.[1];
  if (union === undefined) throw new Error(`no union type ${name}`);
  return [...union.matchAll(/'([^']+)'/g)].map((match) => match[1] ?? '');
}

/** The literals of every `readonly reason: 'a' | 'b'` property type in `source`. */
function reasonLiterals(source: string): string[] {
  return [...source.matchAll(/readonly reason: ((?:\s*\|?\s*'[^']+')+)/g)].flatMap((match) =>
    [...(match[1] ?? '').matchAll(/'([^']+)'/g)].map((literal) => literal[1] ?? ''),
  );
}

/** The first cell of every table row of `markdown` that is one code span: `` | `reason` | ``. */
function tableKeys(markdown: string): Set<string> {
  return new Set(
    [...markdown.matchAll(/^\| `([^`]+)` \|/gm), ...markdown.matchAll(/^\| [^|]+ \| `([^`]+)` \|/gm)].map((match) => match[1] ?? ''),
  );
}

const guide = read('docs/errors-and-operations.md');
const rows = tableKeys(guide);

test('every error code of src/errors.ts has a row in docs/errors-and-operations.md', () => {
  const codes = unionLiterals(read('src/errors.ts'), 'LeaseErrorCode');
  expect(codes.length).toBeGreaterThanOrEqual(8);
  expect(codes.filter((code) => !rows.has(code))).toEqual([]);
});

test('every refusal reason of the fence, the operations and withLease has a row in docs/errors-and-operations.md', () => {
  const reasons = new Set([
    ...unionLiterals(read('src/fence/types.ts'), 'FenceReason'),
    ...reasonLiterals(read('src/fence/operations.ts')),
    ...reasonLiterals(read('src/leases-types.ts')),
  ]);
  for (const expected of ['superseded', 'held', 'recovery-required', 'stale-token', 'key-mismatch', 'lost', 'stopped'])
    expect(reasons).toContain(expected);
  expect([...reasons].filter((reason) => !rows.has(reason))).toEqual([]);
});
