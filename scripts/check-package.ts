/**
 * `npm run check:package`: builds, packs, lints (publint, attw), smoke-tests and type-checks the package in a temp dir,
 * prints each step with its duration, and exits non-zero if any step fails. The same steps run inside
 * `npm test` as test/package/package.test.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type CommandRun,
  packPackage,
  runAttw,
  runPeerSmoke,
  runPublint,
  runSmoke,
  runTestingSmoke,
  runTypeChecks,
} from './package-checks.js';

const workDir = await mkdtemp(join(tmpdir(), 'leasefence-package-'));
let failed = 0;

const show = (step: string, run: CommandRun, full: boolean): void => {
  const status = run.exitCode === 0 ? 'ok' : `FAILED (exit ${run.exitCode})`;
  console.log(`\n== ${step}: ${status} in ${run.ms} ms  [${run.command}]`);
  if (full || run.exitCode !== 0) console.log(run.output);
  if (run.exitCode !== 0) failed += 1;
};

try {
  const packed = await packPackage(workDir);
  show('build (tsup)', packed.build, false);
  show('pack', packed.pack, false);
  console.log(`tarball: ${packed.files.length} files\n  ${packed.files.join('\n  ')}`);
  show('publint', await runPublint(packed.tarball), true);
  show('attw', await runAttw(packed.tarball), true);
  const { install, smoke } = await runSmoke(workDir, packed.tarball);
  show('install tarball', install, false);
  show('smoke (require + import of every entry in "exports")', smoke, true);
  show('entries with a peer dependency, once it is installed', await runPeerSmoke(workDir), true);
  show('leasefence/testing under node --test', await runTestingSmoke(workDir), false);
  for (const check of await runTypeChecks(workDir, packed.tarball)) {
    show(`types with typescript ${check.typescript} and @types/node ${check.typesNode}`, check.run, false);
  }
} catch (error) {
  failed += 1;
  console.error(error instanceof Error ? error.message : error);
} finally {
  await rm(workDir, { recursive: true, force: true });
}

console.log(failed === 0 ? '\ncheck:package: all steps passed' : `\ncheck:package: ${failed} step(s) failed`);
process.exitCode = failed === 0 ? 0 : 1;
