// The shared store suites (conformance, model, race) from the INSTALLED leasefence/testing, on the runtime
// that runs this file (Node, Bun, Deno), under the smallest runner the suites accept ({ describe, it,
// beforeAll, afterAll }) instead of vitest or node:test, which do not run the same way on all three. The
// first argument picks the store: `memory` (plus the planted-bug checks) or `node:sqlite` (sqlite-harness.mjs).
// Prints `ok`, `not ok` or `skip` per test, then `# pass N`, `# fail N`, `# skip N`; exits 1 if a test failed.
import { createMemoryStore } from 'leasefence/memory';
import { createMemoryHarness, describePlantedBugChecks, describeStoreSuites } from 'leasefence/testing';

/** A test that neither settles nor times out by itself (node:test ignores the suites' timeouts too). */
const DEFAULT_TIMEOUT_MS = 120_000;

const newGroup = (name) => ({ name, children: [], before: [], after: [] });
const root = newGroup('');
let current = root;
const runner = {
  describe(name, body) {
    const group = newGroup(name);
    current.children.push(group);
    const parent = current;
    current = group;
    try {
      body();
    } finally {
      current = parent;
    }
  },
  it(name, body, timeoutMs) {
    current.children.push({ name, body, timeoutMs: timeoutMs ?? DEFAULT_TIMEOUT_MS });
  },
  beforeAll(hook) {
    current.before.push(hook);
  },
  afterAll(hook) {
    current.after.push(hook);
  },
};

const counts = { pass: 0, fail: 0, skip: 0 };
const report = (verdict, name, detail) => {
  counts[verdict === 'ok' ? 'pass' : verdict === 'skip' ? 'skip' : 'fail'] += 1;
  console.log(`${verdict} ${name}${detail === undefined ? '' : `\n  ${String(detail?.stack ?? detail).replaceAll('\n', '\n  ')}`}`);
};

/** `promise`, or a rejection after `ms`. */
function bounded(promise, ms) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const testsIn = (group) => group.children.flatMap((child) => ('body' in child ? [child] : testsIn(child)));

async function runGroup(group, path) {
  let setupError = null;
  for (const hook of group.before) {
    try {
      await bounded(Promise.resolve().then(hook), DEFAULT_TIMEOUT_MS);
    } catch (error) {
      setupError = error;
      break;
    }
  }
  for (const child of group.children) {
    const name = [...path, child.name].join(' > ');
    if (setupError !== null) {
      for (const test of 'body' in child ? [child] : testsIn(child)) report('not ok', `${name} > ${test.name}`, setupError);
    } else if ('body' in child) {
      let skipped = null;
      // NOTE: like node:test's context: skip() marks the test, and the spec returns (leasefence/testing's skipTest).
      const context = {
        skip(reason) {
          skipped = reason ?? '';
        },
      };
      try {
        await bounded(
          Promise.resolve().then(() => child.body(context)),
          child.timeoutMs,
        );
        if (skipped === null) report('ok', name);
        else report('skip', `${name} (${skipped})`);
      } catch (error) {
        report('not ok', name, error);
      }
    } else {
      await runGroup(child, [...path, child.name]);
    }
  }
  for (const hook of group.after) {
    try {
      await bounded(Promise.resolve().then(hook), DEFAULT_TIMEOUT_MS);
    } catch (error) {
      report('not ok', `${path.join(' > ')} (afterAll)`, error);
    }
  }
}

const store = process.argv[2];
if (store === 'memory') {
  describeStoreSuites(runner, 'installed memory store', async () => createMemoryHarness((clock) => createMemoryStore({ clock })), {
    modelRuns: 100,
    raceRuns: 100,
    workers: 3,
  });
  describePlantedBugChecks(runner, { report: () => undefined });
} else if (store === 'node:sqlite') {
  // NOTE: imported only here: node:sqlite is missing on some runtimes (Node 20).
  const { makeNodeSqliteHarness } = await import('./sqlite-harness.mjs');
  describeStoreSuites(runner, 'installed sqlite store (node:sqlite)', makeNodeSqliteHarness, { modelRuns: 100, raceRuns: 100, workers: 3 });
} else {
  throw new Error(`usage: conformance.mjs memory|node:sqlite (got ${store})`);
}

await runGroup(root, []);
console.log(`# pass ${counts.pass}\n# fail ${counts.fail}\n# skip ${counts.skip}`);
// NOTE: exit now, whatever a failed test left scheduled.
process.exit(counts.fail === 0 ? 0 : 1);
