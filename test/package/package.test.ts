/**
 * The package as users install it: built, packed, linted and loaded from a tarball in a temp project.
 * The build goes to a temp dir (see scripts/package-checks.ts), so it cannot race tests or builds that use
 * the checkout's `dist/`; nothing else in the suite reads `dist/`.
 */
import { readlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  type PackedPackage,
  packageEntries,
  packPackage,
  REPO_ROOT,
  runAttw,
  runPeerSmoke,
  runPublint,
  runSmoke,
  runTestingSmoke,
  runTypeChecks,
} from '../../scripts/package-checks.js';

// NOTE: the entries are package.json's "exports": a new entry is packed, linted, loaded and type-checked here
// without editing this file. Entries that import an (optional) peer dependency are named here with it.
const ENTRIES = packageEntries();
const PEERS: Readonly<Record<string, string>> = { 'leasefence/otel': '@opentelemetry/api', 'leasefence/testing': 'fast-check' };
const RUNTIME = ENTRIES.map((entry) => entry.specifier).filter((specifier) => PEERS[specifier] === undefined);

describe('the packed package', { timeout: 180_000 }, () => {
  let workDir = '';
  let packed: PackedPackage;

  beforeAll(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'leasefence-package-'));
    packed = await packPackage(workDir);
    // NOTE: the build (tsup with declarations) took over 90 s on a loaded 2-core machine, 210 s at a load
    // average of 33 and over 300 s inside a full run at 40; nothing here is about its speed, so the bound is
    // only there to end a hung build.
  }, 600_000);

  afterAll(async () => {
    if (workDir !== '') await rm(workDir, { recursive: true, force: true });
  });

  test('the tarball holds ESM, CJS and both kinds of declarations for every entry, and no sources or tests', () => {
    expect(ENTRIES.map((entry) => entry.specifier)).toEqual(
      expect.arrayContaining(['leasefence', 'leasefence/memory', 'leasefence/otel', 'leasefence/testing']),
    );
    for (const entry of ENTRIES) {
      for (const extension of ['.js', '.cjs', '.d.ts', '.d.cts']) expect(packed.files).toContain(`dist/${entry.file}${extension}`);
    }
    expect(packed.files).toContain('LICENSE');
    expect(
      packed.files.filter((file) => !/^(dist\/|package\.json$|README\.md$|LICENSE$|CHANGELOG\.md$|docs\/[\w-]+\.(md|svg)$)/.test(file)),
    ).toEqual([]);
    // NOTE: the guides ship with the package (the README points at them there), the generated API reference does not.
    expect(packed.files).toContain('docs/errors-and-operations.md');
    expect(packed.files).toContain('docs/timeline.svg'); // the README's picture is served from the package
    expect(packed.files.filter((file) => file.startsWith('docs/api/'))).toEqual([]);
  });

  test('publint (strict) finds nothing to fix in the tarball', async () => {
    const run = await runPublint(packed.tarball);
    expect(run.exitCode, run.output).toBe(0);
    expect(run.output).toContain('All good!');
  });

  test('types resolve for require, import and bundlers on every subpath (attw, node16 profile)', async () => {
    const run = await runAttw(packed.tarball);
    expect(run.exitCode, run.output).toBe(0);
    for (const { specifier: subpath } of ENTRIES)
      expect(run.output).toMatch(new RegExp(`"${subpath}"\\s*│ OK \\(CJS\\)\\s*│ OK \\(ESM\\)\\s*│ OK `));
  });

  test("every entry loads through require and import (or asks for its peer dependency), and each copy recognises the other copy's errors", async () => {
    const { smoke } = await runSmoke(workDir, packed.tarball);
    expect(smoke.exitCode, smoke.output).toBe(0);
    const checks = smoke.output.split('\n').filter((line) => line.startsWith('ok '));
    expect(checks).toEqual([
      'ok zero runtime dependencies',
      `ok entries import only Node built-ins and peer dependencies: ${Object.entries(PEERS)
        .map(([entry, peer]) => `${entry} (${peer})`)
        .join(', ')}`,
      ...RUNTIME.map((subpath) => `ok load ${subpath} via import and require`),
      ...Object.entries(PEERS).map(([entry, peer]) => `ok ${entry} asks for its peer dependency ${peer}`),
      'ok one copy of shared code per format, two copies across formats',
      'ok import: claim, fencedWrite, release, reclaim on leasefence/memory',
      'ok require: claim, fencedWrite, release, reclaim on leasefence/memory',
      'ok errors thrown by require (CJS) are recognised by import (ESM) guards',
      'ok errors thrown by import (ESM) are recognised by require (CJS) guards',
    ]);
  });

  test('the entries with a peer dependency load through require and import once it is installed', async () => {
    // NOTE: after the smoke test, which needs the peer dependencies absent: this one links them in.
    const run = await runPeerSmoke(workDir);
    expect(run.exitCode, run.output).toBe(0);
    expect(run.output.split('\n').filter((line) => line.startsWith('ok '))).toEqual(
      Object.entries(PEERS).map(([entry, peer]) => `ok load ${entry} via import and require with ${peer}`),
    );
  });

  test('leasefence/testing from the tarball runs its suites under node:test, catches every planted bug, and loads through require', async () => {
    // NOTE: after the smoke test, which needs fast-check absent: this one links it into the consumer project.
    const run = await runTestingSmoke(workDir);
    expect(run.exitCode, run.output).toBe(0);
    expect(run.output).toMatch(/^# fail 0$/m);
    expect(run.output).toMatch(/^# skipped 0$/m);
    // NOTE: 1 require check + 82 conformance specs (3 of leader election, 12 record-level, 10 claim-next, 10 semaphore,
    // 13 fair waiting) + model + semaphore model + race + fair-waiting race + 5 planted bugs (race) + 5 (model).
    expect(run.output).toMatch(/^# pass 97$/m);
  });

  test('the declarations of every entry compile (strict, skipLibCheck off, ESM and CJS) under TypeScript 5, 6 and 7 with @types/node 20, 22, 24 and 26', async () => {
    // NOTE: @types/node 26 has TracingChannel's type parameters the other way round from 20-24; leasefence's
    // declarations failed there with TS2344 (issue 29 item 14).
    const checks = await runTypeChecks(workDir, packed.tarball);
    const majors = (versions: string[]): number[] =>
      [...new Set(versions.map((version) => Number(version.split('.')[0])))].sort((a, b) => a - b);
    expect(majors(checks.map((check) => check.typescript))).toEqual([5, 6, 7]);
    expect(majors(checks.map((check) => check.typesNode))).toEqual([20, 22, 24, 26]);
    expect(checks).toHaveLength(12);
    const failed = checks.filter((check) => check.run.exitCode !== 0);
    expect(
      failed.map((check) => `typescript ${check.typescript} + @types/node ${check.typesNode}:\n${check.run.output}`).join('\n\n'),
    ).toBe('');
    // NOTE: 12 compiler runs, two at a time: ~120 s on a busy 2-core machine, over 180 s at a load average of 20;
    // the bound is only there to end a hung compiler.
  }, 900_000);

  test("the repo's own `tsc` is the pinned typescript, not one of the aliased compilers the checks use", () => {
    // NOTE: npm links a bin name claimed by several packages (typescript5, typescript7) to the first it links.
    expect(readlinkSync(`${REPO_ROOT}/node_modules/.bin/tsc`)).toBe('../typescript/bin/tsc');
  });
});
