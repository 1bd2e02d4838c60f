import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    memory: 'src/adapters/memory/index.ts',
    postgres: 'src/adapters/postgres/index.ts',
    redis: 'src/adapters/redis/index.ts',
    sqlite: 'src/adapters/sqlite/index.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  // NOTE: splitting shares one copy of the error classes between the entries of each format.
  splitting: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  treeshake: true,
});
