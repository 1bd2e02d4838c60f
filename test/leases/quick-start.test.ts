/**
 * The README's quick start runs as written (against this checkout's sources) and prints what it says it
 * prints: the exactly-once pattern a new user copies must work.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

it('the README quick start runs as an ES module and exports each batch once, with its checkpoint', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Quick start'));
  const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  expect(code).toContain("{ checkpoint: { nextBatch: batch + 1 } }");
  const source = (code ?? '')
    .replace("from 'leasefence/memory';", `from ${JSON.stringify(join(ROOT, 'src/adapters/memory/index.ts'))};`)
    .replace("from 'leasefence';", `from ${JSON.stringify(join(ROOT, 'src/index.ts'))};`);
  // NOTE: an .mts file, so top-level await runs as the README's ES module note says.
  const dir = join(ROOT, 'node_modules', '.cache', 'leasefence-quick-start');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `quick-start-${process.pid}.mts`);
  writeFileSync(file, `${source}\nconst seen = await leases.inspect('export:daily');\nconsole.log(JSON.stringify(seen.checkpoint?.value));\n`);
  try {
    const output = execFileSync(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, encoding: 'utf8' });
    expect(output.trim().split('\n')).toEqual(["[ 'batch 1', 'batch 2', 'batch 3' ]", '{"nextBatch":4}']);
  } finally {
    rmSync(file, { force: true });
  }
}, 30_000);
