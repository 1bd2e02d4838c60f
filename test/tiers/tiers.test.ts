/**
 * The test tiers (test/support/tiers.ts, vitest.config.ts): every test file runs in exactly one of the
 * `unit`, `stores`, `long` and `runtimes` projects, and `npm test` (which runs them all) runs every file.
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import config from '../../vitest.config.js';
import { TIERS } from '../support/tiers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Every `*.test.ts` under test/, walked here rather than through tiers.ts. */
const testFiles = (): string[] =>
  readdirSync(`${ROOT}/test`, { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.test.ts'))
    .map((path) => `test/${path.split('\\').join('/')}`)
    .sort();

/** The files each project of the config includes (explicit paths, no globs). */
function projectFiles(): Map<string, readonly string[]> {
  const projects = config.test?.projects ?? [];
  const byName = new Map<string, readonly string[]>();
  for (const project of projects) {
    if (typeof project !== 'object' || !('test' in project)) throw new Error('a project that is not an inline config');
    const test = project.test ?? {};
    byName.set(String(test.name), [...(test.include ?? [])]);
  }
  return byName;
}

describe('test tiers', () => {
  it('are the projects unit, stores, long and runtimes, in that order', () => {
    expect([...projectFiles().keys()]).toEqual([...TIERS]);
  });

  it('put every test file in exactly one project, and name no file that does not exist', () => {
    const listed = [...projectFiles().values()].flat();
    expect(listed.filter((file, index) => listed.indexOf(file) !== index)).toEqual([]);
    expect([...listed].sort()).toEqual(testFiles());
  });

  it('start servers only for stores, long and runtimes', () => {
    const projects = (config.test?.projects ?? []) as Array<{ test: { name: string; globalSetup: string[] } }>;
    expect(Object.fromEntries(projects.map((project) => [project.test.name, project.test.globalSetup]))).toEqual({
      unit: [],
      stores: ['test/support/global-setup.ts'],
      long: ['test/support/global-setup.ts'],
      runtimes: ['test/support/global-setup.ts'],
    });
  });
});
