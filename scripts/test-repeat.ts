/**
 * Runs the test suite N times and says which tests failed in which run: `npm run test:repeat -- 10`.
 *
 * Options: `--load` keeps every core busy with a CPU hog for the length of each run (bounded: each hog stops
 * by itself after `--load-max` seconds, default 1800, and is killed by pid when its run ends);
 * `--keep` keeps the vitest JSON reports (the directory is printed). Anything after `--` goes to vitest,
 * e.g. `npm run test:repeat -- 5 --load -- test/chaos`.
 *
 * Each run uses vitest's JSON reporter (not its text output) to list the failed tests. It prints one line per
 * run (duration, failures) and ends with the table test -> failed runs; the exit code is 1 if any run failed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const separator = process.argv.indexOf('--', 2);
const ownArgs = separator === -1 ? process.argv.slice(2) : process.argv.slice(2, separator);
const vitestArgs = separator === -1 ? [] : process.argv.slice(separator + 1);

const USAGE = 'usage: npm run test:repeat -- <runs> [--load] [--load-max <s>] [--keep] [-- <vitest args>]   (--load-max: 1 to 86400 s)';

const OPTIONS = {
  load: { type: 'boolean', default: false },
  'load-max': { type: 'string', default: '1800' },
  keep: { type: 'boolean', default: false },
} as const;

/** The command line; a bad one prints the usage and exits 2. */
function parse(): ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>> {
  try {
    return parseArgs({ args: ownArgs, allowPositionals: true, options: OPTIONS });
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    process.exit(2);
  }
}
const { values, positionals } = parse();

const runs = Number(positionals[0] ?? 1);
const loadMax = Number(values['load-max']);
// NOTE: a --load-max that is not a number would start hogs that stop at once (no load), an infinite one hogs
// that never stop by themselves.
if (!Number.isInteger(runs) || runs < 1 || positionals.length > 1 || !(loadMax > 0 && loadMax <= 86_400)) {
  console.error(USAGE);
  process.exit(2);
}

/** What the vitest JSON reporter writes, the part this script reads. */
interface JsonReport {
  readonly testResults: ReadonlyArray<{
    readonly name: string;
    readonly status: string;
    readonly message?: string;
    readonly assertionResults: ReadonlyArray<{ readonly fullName: string; readonly status: string }>;
  }>;
}

/** One run's outcome: the tests that failed (a file that failed outside any test counts as one entry). */
interface RunOutcome {
  readonly run: number;
  readonly seconds: number;
  readonly exitCode: number | null;
  readonly failed: readonly string[];
}

const root = process.cwd();
const reportDir = mkdtempSync(join(tmpdir(), 'leasefence-test-repeat-'));

/** A test's name without the seed of its run (`(seed 123)`, `(with seed=-45)`), so runs can be compared. */
export function withoutSeed(name: string): string {
  return name.replace(/ ?\((?:with )?seed[ =]-?\d+\)/g, '');
}

function failedTests(report: JsonReport): string[] {
  const failed: string[] = [];
  for (const file of report.testResults) {
    const relative = file.name.startsWith(root) ? file.name.slice(root.length + 1) : file.name;
    const failedInFile = file.assertionResults.filter((test) => test.status === 'failed');
    for (const test of failedInFile) failed.push(`${relative} > ${test.fullName}`);
    // NOTE: a file whose import or hook failed has no failed test in it; it still must not read as green.
    if (failedInFile.length === 0 && file.status === 'failed')
      failed.push(`${relative} (failed outside a test: import or hook${file.message ? `: ${file.message.split('\n')[0]}` : ''})`);
  }
  return failed;
}

/** Starts one busy-looping node process per core; each stops by itself after `maxSeconds`. */
function startLoad(maxSeconds: number): ChildProcess[] {
  const hog = `const end = Date.now() + ${maxSeconds * 1000}; while (Date.now() < end) {}`;
  return Array.from({ length: availableParallelism() }, () => spawn(process.execPath, ['-e', hog], { stdio: 'ignore' }));
}

function runVitest(outputFile: string): Promise<number | null> {
  const args = ['vitest', 'run', '--reporter=dot', '--reporter=json', `--outputFile.json=${outputFile}`, ...vitestArgs];
  return new Promise((resolve) => {
    const child = spawn('npx', args, { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('exit', (code) => resolve(code));
  });
}

async function runOnce(run: number): Promise<RunOutcome> {
  const outputFile = join(reportDir, `run-${run}.json`);
  const hogs = values.load ? startLoad(loadMax) : [];
  const started = performance.now();
  let exitCode: number | null;
  try {
    exitCode = await runVitest(outputFile);
  } finally {
    for (const hog of hogs) hog.kill();
  }
  const seconds = (performance.now() - started) / 1000;
  const failed = existsSync(outputFile) ? failedTests(JSON.parse(readFileSync(outputFile, 'utf8')) as JsonReport) : [];
  // NOTE: a run that failed without a report (globalSetup threw, crash) still counts as failed.
  if (exitCode !== 0 && failed.length === 0) failed.push(`(run exited with ${exitCode} and no failed test in the JSON report)`);
  return { run, seconds, exitCode, failed };
}

const outcomes: RunOutcome[] = [];
for (let run = 1; run <= runs; run += 1) {
  const outcome = await runOnce(run);
  outcomes.push(outcome);
  const verdict = outcome.failed.length === 0 ? 'passed' : `${outcome.failed.length} failed`;
  console.log(`\n[test:repeat] run ${run}/${runs}${values.load ? ' (loaded)' : ''}: ${outcome.seconds.toFixed(1)} s, ${verdict}`);
  for (const test of outcome.failed) console.log(`[test:repeat]   FAIL ${test}`);
}

const byTest = new Map<string, number[]>();
for (const outcome of outcomes) {
  for (const test of new Set(outcome.failed.map(withoutSeed))) byTest.set(test, [...(byTest.get(test) ?? []), outcome.run]);
}

console.log(`\n[test:repeat] ${runs} run(s)${values.load ? ` under load (${availableParallelism()} CPU hogs)` : ''}`);
console.log(`[test:repeat] durations (s): ${outcomes.map((outcome) => outcome.seconds.toFixed(1)).join(', ')}`);
if (byTest.size === 0) console.log('[test:repeat] no test failed');
else {
  console.log('[test:repeat] test -> failed runs');
  for (const [test, failedRuns] of byTest)
    console.log(`[test:repeat]   ${test} -> ${failedRuns.join(', ')} (${failedRuns.length}/${runs})`);
}
if (values.keep) console.log(`[test:repeat] JSON reports kept in ${reportDir}`);
else rmSync(reportDir, { recursive: true, force: true });
process.exit(byTest.size === 0 ? 0 : 1);
