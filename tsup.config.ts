import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: {
      index: 'src/index.ts',
      // NOTE: the store-author entry (`leasefence/store`): the Store contract, pure transitions, fence checks.
      store: 'src/store-entry.ts',
      // NOTE: the diagnostics channels' names and payloads, for observability code.
      diagnostics: 'src/diagnostics-entry.ts',
      // NOTE: leader election on the lease API.
      election: 'src/election-entry.ts',
      memory: 'src/adapters/memory/index.ts',
      postgres: 'src/adapters/postgres/index.ts',
      redis: 'src/adapters/redis/index.ts',
      otel: 'src/otel/index.ts',
      sqlite: 'src/adapters/sqlite/index.ts',
      etcd: 'src/adapters/etcd/index.ts',
      // NOTE: the store suites for store authors; the only entry that imports fast-check (a peer dependency).
      testing: 'src/testing/index.ts',
    },
    format: ['esm', 'cjs'],
    dts: true,
    // NOTE: splitting shares one copy of the error classes between the entries of each format.
    splitting: true,
    sourcemap: true,
    clean: true,
    target: 'node20',
    treeshake: true,
  },
  {
    // NOTE: the `leasefence` executable: ESM only (top-level await), no types, its own bundle.
    entry: { cli: 'src/cli/bin.ts' },
    format: ['esm'],
    dts: false,
    splitting: false,
    sourcemap: true,
    clean: false,
    target: 'node20',
    treeshake: true,
  },
]);
