// Smoke test of the INSTALLED package, run by plain `node` from a temp project whose node_modules holds the
// packed tarball (see scripts/package-checks.ts). It loads every entry of package.json "exports" that needs no
// peer dependency through `import` and `require` (an entry that needs one must say so), runs a claim / fenced
// write / release on the memory store in each module system, and checks that the guards of one copy (ESM or
// CJS) recognise the errors and lease handles of the other. With `--with-peers` (the peer dependencies
// linked in), it loads the entries that need them instead.
// Prints `ok <check>` per check; any failure throws and exits non-zero.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const ok = (check) => console.log(`ok ${check}`);

/** Runs `fn`, expecting it to reject, and returns what it threw. */
async function thrownBy(fn) {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new assert.AssertionError({ message: 'expected a rejection' });
}

/** Every bare specifier (a package or a built-in) that `file` imports, through the chunks it imports. */
function bareImports(file, seen = new Set()) {
  if (seen.has(file)) return new Set();
  seen.add(file);
  const found = new Set();
  // NOTE: ESM import/export statements start a line in tsup's output; CJS loads through require('...').
  const statements = /^(?:import|export)\b[^'"\n]*['"]([^'"]+)['"]|\brequire\(['"]([^'"]+)['"]\)/gm;
  for (const [, imported, required] of readFileSync(file, 'utf8').matchAll(statements)) {
    const specifier = imported ?? required;
    if (specifier.startsWith('.')) for (const inner of bareImports(join(dirname(file), specifier), seen)) found.add(inner);
    else found.add(specifier);
  }
  return found;
}

const manifest = JSON.parse(readFileSync(require.resolve('leasefence/package.json'), 'utf8'));
const dist = dirname(require.resolve('leasefence'));
const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));
// NOTE: the entries are package.json's "exports", so a new entry is checked without editing this script;
// `peers` are the packages an entry's built files import (both formats), which must be peer dependencies.
const ENTRIES = Object.entries(manifest.exports)
  .filter(([subpath]) => subpath !== './package.json')
  .map(([subpath, target]) => {
    const specifier = subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`;
    const file = /^\.\/dist\/([\w-]+)\.js$/.exec(target.import.default)[1];
    const [esmPeers, cjsPeers] = [`${file}.js`, `${file}.cjs`].map((built) =>
      [...bareImports(join(dist, built))].filter((name) => !builtins.has(name)).sort(),
    );
    assert.deepEqual(cjsPeers, esmPeers, `dist/${file}.js and dist/${file}.cjs import the same packages`);
    return { specifier, file, peers: esmPeers };
  });
const RUNTIME = ENTRIES.filter((entry) => entry.peers.length === 0).map((entry) => entry.specifier);
const WITH_PEERS = ENTRIES.filter((entry) => entry.peers.length > 0);

if (process.argv.includes('--with-peers')) {
  // NOTE: run after the plain run, once package-checks.ts has linked the peer dependencies in.
  for (const { specifier, peers } of WITH_PEERS) {
    const [esm, cjs] = [await import(specifier), require(specifier)];
    assert.match(require.resolve(specifier), /\.cjs$/);
    assert.deepEqual(
      Object.keys(cjs).sort(),
      Object.keys(esm)
        .filter((name) => name !== 'default')
        .sort(),
      `${specifier}: the same exports from require and import`,
    );
    ok(`load ${specifier} via import and require with ${peers.join(', ')}`);
  }
  process.exit(0);
}

assert.equal(manifest.dependencies, undefined, 'leasefence has zero runtime dependencies');
ok('zero runtime dependencies');

for (const { specifier, peers } of ENTRIES) {
  for (const peer of peers)
    assert.ok(peer in (manifest.peerDependencies ?? {}), `${specifier} imports ${peer}, which is not a peer dependency`);
}
ok(
  `entries import only Node built-ins and peer dependencies: ${WITH_PEERS.map(({ specifier, peers }) => `${specifier} (${peers.join(', ')})`).join(', ')}`,
);

// NOTE: the consumer project has no pg, postgres, ioredis, redis or better-sqlite3 installed, so loading
// leasefence/postgres, leasefence/redis and leasefence/sqlite also proves that the adapters never import a
// client library at run time.
const esm = {};
const cjs = {};
for (const subpath of RUNTIME) {
  esm[subpath] = await import(subpath);
  cjs[subpath] = require(subpath);
  for (const [system, loaded] of [
    ['import', esm[subpath]],
    ['require', cjs[subpath]],
  ]) {
    assert.equal(typeof loaded, 'object', `${system} ${subpath} yields a module namespace`);
  }
  ok(`load ${subpath} via import and require`);
}

// NOTE: the peer dependencies are optional and absent from this project: an entry that needs one says so.
for (const { specifier, peers } of WITH_PEERS) {
  const missingPeer = await import(specifier).then(
    () => null,
    (error) => error,
  );
  assert.equal(missingPeer?.code, 'ERR_MODULE_NOT_FOUND', `import ${specifier} without ${peers.join(', ')} fails`);
  assert.match(missingPeer.message, new RegExp(peers.join('|')));
  assert.throws(() => require(specifier), new RegExp(peers.join('|')));
  ok(`${specifier} asks for its peer dependency ${peers.join(', ')}`);
}

assert.match(require.resolve('leasefence'), /\.cjs$/, 'require resolves the CJS build');
assert.notEqual(esm.leasefence.LeaseError, cjs.leasefence.LeaseError, 'ESM and CJS are two copies of the classes');
// NOTE: with tsup splitting, the entries of one format share one chunk: one copy of each class per format.
assert.equal(cjs['leasefence/store'].LeaseError, cjs.leasefence.LeaseError, 'CJS entries share code');
assert.equal(esm['leasefence/store'].LeaseError, esm.leasefence.LeaseError, 'ESM entries share code');
ok('one copy of shared code per format, two copies across formats');

/** A claim / fenced write / busy claim / release / reclaim cycle on the memory store of one module system. */
async function leaseCycle(system, api, memory) {
  const clock = memory.createManualClock(1_000_000);
  const store = memory.createMemoryStore({ clock });
  const alice = api.createLeases(store, { holder: 'alice', ttlMs: 1_000 });
  const bob = api.createLeases(store, { holder: 'bob', ttlMs: 1_000 });
  const claimed = await alice.claim('job:1');
  assert.equal(claimed.ok, true, `${system}: first claim is granted`);
  assert.equal(typeof claimed.lease.token, 'bigint', `${system}: tokens are bigints`);
  const written = await alice.fencedWrite(claimed.lease, (context) => `written under ${context.token}`);
  assert.deepEqual([written.ok, written.value], [true, `written under ${claimed.lease.token}`]);
  const busy = await bob.claim('job:1');
  assert.deepEqual([busy.ok, busy.reason, busy.holder], [false, 'held', 'alice'], `${system}: a held key is busy`);
  const released = await alice.release(claimed.lease);
  assert.equal(released.ok, true, `${system}: release succeeds`);
  const next = await bob.claim('job:1');
  assert.equal(next.ok, true, `${system}: a released key can be claimed`);
  assert.ok(next.lease.token > claimed.lease.token, `${system}: the next token is larger`);
  const stale = await alice.fencedWrite(claimed.lease, () => 'stale');
  assert.equal(stale.ok, false, `${system}: a released grant's write is refused`);
  ok(`${system}: claim, fencedWrite, release, reclaim on leasefence/memory`);
}
await leaseCycle('import', esm.leasefence, esm['leasefence/memory']);
await leaseCycle('require', cjs.leasefence, cjs['leasefence/memory']);

/** Errors and handles made by `maker` must be recognised by the guards of `judge` (the other copy). */
async function crossCopy(makerName, maker, judgeName, judge) {
  const memory = maker === esm.leasefence ? esm['leasefence/memory'] : cjs['leasefence/memory'];
  const store = memory.createMemoryStore({ clock: memory.createManualClock(0) });
  const alice = maker.createLeases(store, { holder: 'alice', ttlMs: 1_000 });
  const bob = maker.createLeases(store, { holder: 'bob', ttlMs: 1_000 });
  const lease = await alice.claimOrThrow('job:2');

  const busy = await thrownBy(() => bob.claimOrThrow('job:2'));
  assert.equal(busy instanceof judge.LeaseError, false, 'the other copy does not match by instanceof');
  assert.equal(judge.isLeaseError(busy), true, `${judgeName} isLeaseError recognises a ${makerName} LeaseBusyError`);
  assert.equal(judge.isLeaseError(busy, 'LEASE_BUSY'), true);
  assert.equal(judge.isLeaseLostError(busy), false);

  await alice.revoke('job:2', { reason: 'smoke test', by: 'operator' });
  const lost = await thrownBy(() => alice.fencedWriteOrThrow(lease, () => 'too late'));
  assert.equal(lost.code, 'LEASE_LOST');
  assert.equal(judge.isLeaseLostError(lost), true, `${judgeName} isLeaseLostError recognises a ${makerName} LeaseLostError`);
  assert.equal(judge.isStoreFailure(lost), false);

  const invalid = await thrownBy(() => alice.claim(''));
  assert.equal(judge.isLeaseError(invalid, 'INVALID_ARGUMENT'), true, `${judgeName} recognises ${makerName} INVALID_ARGUMENT`);

  // NOTE: a lease handle is branded too: the other copy's API accepts its shape and refuses it only because
  // it belongs to another store, with a LeaseError that the first copy's guard recognises in turn.
  const judgeMemory = judge === esm.leasefence ? esm['leasefence/memory'] : cjs['leasefence/memory'];
  const foreign = judge.createLeases(judgeMemory.createMemoryStore(), { holder: 'carol' });
  const refused = await thrownBy(() => foreign.release(lease));
  assert.equal(maker.isLeaseError(refused, 'INVALID_ARGUMENT'), true);
  assert.match(refused.message, /belongs to store/);
  ok(`errors thrown by ${makerName} are recognised by ${judgeName} guards`);
}
await crossCopy('require (CJS)', cjs.leasefence, 'import (ESM)', esm.leasefence);
await crossCopy('import (ESM)', esm.leasefence, 'require (CJS)', cjs.leasefence);

console.log('smoke: all checks passed');
