/**
 * The CLI's modules import each other without a circle (issue 23: `confirm.ts` and `watch.ts` imported
 * `main.ts`, which imports them). Reads every import and re-export of src/cli/*.ts, type-only ones
 * included (a circle of types is still a circle a reader has to untangle), and looks for a cycle.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const CLI = resolve(import.meta.dirname, '..', '..', 'src', 'cli');

/** The sibling modules `file` imports or re-exports (`./x.js` names `x.ts`). */
function siblingsOf(file: string): string[] {
  const text = readFileSync(join(CLI, file), 'utf8');
  return [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'\.\/([^'/]+)\.js'/gms)].map((match) => `${match[1]}.ts`);
}

/** A cycle in the graph as a path of files, or `null`. */
function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]): string[] | null => {
    if (state.get(file) === 'open') return [...path.slice(path.indexOf(file)), file];
    if (state.get(file) === 'done') return null;
    state.set(file, 'open');
    for (const next of graph.get(file) ?? []) {
      const cycle = visit(next, [...path, file]);
      if (cycle !== null) return cycle;
    }
    state.set(file, 'done');
    return null;
  };
  for (const file of graph.keys()) {
    const cycle = visit(file, []);
    if (cycle !== null) return cycle;
  }
  return null;
}

describe('src/cli imports', () => {
  it('form no cycle', () => {
    const files = readdirSync(CLI).filter((file) => file.endsWith('.ts'));
    const graph = new Map(files.map((file) => [file, siblingsOf(file)]));
    expect([...graph.values()].flat().length).toBeGreaterThan(5);
    expect(findCycle(graph)).toBeNull();
  });
});
