/**
 * `npm run example -- <name> [args]`: runs examples/<name>/main.mjs from a clone of leasefence, with nothing
 * set up beforehand. It builds the package's JavaScript into dist/ (the examples import `leasefence`, which
 * inside this repository resolves to the package itself, i.e. dist/), starts a throwaway PostgreSQL and/or
 * redis-server with the helpers the tests use (unless LEASEFENCE_PG_URL / LEASEFENCE_REDIS_URL name a server
 * already), runs the example with those variables, and stops the servers again, also when it fails.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { build, type Options } from 'tsup';
import tsupConfig from '../tsup.config.js';
import { startPostgres } from '../test/support/postgres-server.js';
import { startRedis } from '../test/support/redis-server.js';

/** Each example and the servers it needs. */
// NOTE: a Map, not an object: `EXAMPLES.get('toString')` is undefined, an object's `toString` is its prototype's.
const EXAMPLES: ReadonlyMap<string, ReadonlyArray<'postgres' | 'redis'>> = new Map([
  ['daily-export', ['postgres']],
  ['ramp-runner', ['redis']],
  ['classifier', []],
  ['scan-work', []],
  ['export-pool', []],
]);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Server {
  readonly url: string;
  stop(): Promise<void>;
}

/** The server `variable` names, or a throwaway one from `start` (which the caller stops). */
async function serverFor(variable: string, start: () => Promise<Server>, started: Server[]): Promise<string> {
  const given = process.env[variable];
  if (given !== undefined && given !== '') return given;
  const server = await start();
  started.push(server);
  console.error(`(started a throwaway server for this run: ${variable}=${server.url})`);
  return server.url;
}

function runExample(name: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const child = spawn(process.execPath, [`examples/${name}/main.mjs`, ...args], { cwd: ROOT, env, stdio: 'inherit' });
  // NOTE: Ctrl-C reaches the example too (same process group); wait for it to end, then stop the servers.
  process.on('SIGINT', () => undefined);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve(code ?? 1));
  });
}

async function main(): Promise<number> {
  const [name, ...args] = process.argv.slice(2);
  const servers = name === undefined ? undefined : EXAMPLES.get(name);
  if (name === undefined || servers === undefined) {
    console.error(`usage: npm run example -- <${[...EXAMPLES.keys()].join(' | ')}> [args]`);
    return 2;
  }
  const [library] = tsupConfig as readonly Options[];
  // NOTE: JavaScript only (seconds); `npm run build` adds the declarations.
  await build({ ...library, outDir: 'dist', dts: false, sourcemap: false, silent: true, config: false });
  const started: Server[] = [];
  try {
    const env = { ...process.env };
    if (servers.includes('postgres')) env['LEASEFENCE_PG_URL'] = await serverFor('LEASEFENCE_PG_URL', () => startPostgres(), started);
    if (servers.includes('redis'))
      env['LEASEFENCE_REDIS_URL'] = await serverFor('LEASEFENCE_REDIS_URL', () => startRedis({ persistence: 'none' }), started);
    return await runExample(name, args, env);
  } finally {
    await Promise.allSettled(started.map((server) => server.stop()));
  }
}

process.exitCode = await main();
