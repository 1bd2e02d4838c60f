/**
 * Run as `tsx postgres-otel-pg-program.ts <url> <table> <modules dir>`: a pg Pool instrumented by
 * OpenTelemetry's @opentelemetry/instrumentation-pg (resolved from <modules dir>, as leasefence does not
 * depend on it) runs leasefence's operations; prints one JSON line: whether `connect` was patched, the
 * operations' results, the spans pg's instrumentation recorded and the connections left checked out.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createPostgresStore, type PostgresClient } from '../../src/adapters/postgres/index.js';
import { createLeases } from '../../src/leases.js';

const [url, table, modules] = process.argv.slice(2) as [string, string, string];
const fromModules = createRequire(join(modules, 'package.json'));
// NOTE: typed here by the little used: the package is not a dependency of leasefence.
const { PgInstrumentation } = fromModules('@opentelemetry/instrumentation-pg') as {
  PgInstrumentation: new () => { setTracerProvider(provider: unknown): void; enable(): void };
};
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = fromModules(
  '@opentelemetry/sdk-trace-base',
) as typeof import('@opentelemetry/sdk-trace-base');
const exporter = new InMemorySpanExporter();
const instrumentation = new PgInstrumentation();
instrumentation.setTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
instrumentation.enable();
// NOTE: required after enable(), through require (the instrumentation hooks CommonJS loading of pg and pg-pool).
const pg = createRequire(import.meta.url)('pg') as typeof import('pg');
const pool = new pg.Pool({ connectionString: url, max: 3 });
pool.on('error', () => undefined);
const patched = '__wrapped' in pool.connect;

const within = <T>(what: string, promise: Promise<T>): Promise<T> =>
  Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} hung`)), 5_000))]);
const results: unknown[] = [];
try {
  const store = createPostgresStore({ client: pool as unknown as PostgresClient, table });
  await within('migrate', store.migrate());
  const leases = createLeases(store, { holder: 'w1' });
  const lease = await within('claim', leases.claimOrThrow('job:otel'));
  results.push(
    (
      await within(
        'fenced write',
        leases.fencedWrite(lease, async (tx) => (await tx.query('SELECT 1 AS n')).rows),
      )
    ).ok,
  );
  results.push((await within('inspect', leases.inspect(lease.key))).grant?.token === lease.token);
  results.push((await within('release', leases.release(lease))).ok);
} catch (error) {
  results.push(String(error));
}
await new Promise((resolve) => setTimeout(resolve, 50));
const spans = exporter.getFinishedSpans().map((span) => span.name);
console.log(
  JSON.stringify({
    patched,
    results,
    connectSpans: spans.filter((name) => name.includes('connect')).length,
    checkedOut: pool.totalCount - pool.idleCount,
  }),
);
await pool.end();
