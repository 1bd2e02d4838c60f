/**
 * The SQLite store's tests are written as a store author writes theirs: the test files and the harness
 * import leasefence only through its public entries (`leasefence`, `leasefence/sqlite`,
 * `leasefence/testing`, `leasefence/memory` for the manual clock, here as their source files), plus the driver, the runner and Node built-ins.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ADAPTER_TESTS = join(import.meta.dirname, '../adapters');
const FILES = ['sqlite-harness.ts', 'sqlite-better-sqlite3.test.ts', 'sqlite-node-sqlite.test.ts'];
const ALLOWED =
  /^(\.\.\/\.\.\/src\/(index|adapters\/sqlite\/index|adapters\/memory\/index|testing\/index)\.js|\.\/sqlite-harness\.js|node:[a-z]+|vitest|better-sqlite3)$/;

describe('the SQLite store is tested through leasefence/testing alone', () => {
  it('its test files and harness import only the public entries, the driver, vitest and Node built-ins', () => {
    for (const file of FILES) {
      const source = readFileSync(join(ADAPTER_TESTS, file), 'utf8');
      const specifiers = [...source.matchAll(/^import [^;]*?from '([^']+)';$/gms)].map((match) => match[1]);
      expect(specifiers.length, file).toBeGreaterThan(1);
      for (const specifier of specifiers) expect(specifier, `${file} imports ${specifier}`).toMatch(ALLOWED);
    }
  });
});
