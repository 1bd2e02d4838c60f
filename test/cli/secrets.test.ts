/**
 * The CLI never prints a store's password (issue 29 item 8): only scheme, host, port and database, in
 * errors, usage, `--json` and the `watch` title; also with a raw `@` in the password, a `?password=` query
 * parameter, an unsupported scheme, or a URL passed where a command belongs. Against the test run's real
 * PostgreSQL and redis-server (and a closed port), the CLI in-process.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeStoreUrl, maskSecrets, secretsOf } from '../../src/cli/store-url.js';
import { sharedPostgresUrl } from '../adapters/postgres-harness.js';
import { sharedRedisUrl } from '../adapters/redis-harness.js';
import { startInProcess } from './cli-harness.js';

/** A password with a raw `@`, a `/` and a `?`, whose pieces must never be printed. */
const PASSWORD = 'Pa55@w0rd/x?y';
const PIECES = ['Pa55', 'w0rd', 'Pa55@w0rd', encodeURIComponent(PASSWORD)];

async function run(args: readonly string[], env: Record<string, string> = {}): Promise<string> {
  const cli = startInProcess(args, { tty: false, env });
  cli.answer('');
  await cli.exited;
  return cli.printed.stdout + cli.printed.stderr;
}

function expectNoSecret(printed: string, secrets: readonly string[] = PIECES): void {
  for (const secret of secrets) expect(printed).not.toContain(secret);
}

describe('describeStoreUrl', () => {
  it('keeps scheme, host, port and database only', () => {
    expect(describeStoreUrl(`postgres://app:${PASSWORD}@db.example:5433/orders?sslmode=require&password=hunter22`)).toBe(
      'postgres://db.example:5433/orders',
    );
    expect(describeStoreUrl('redis://:hunter22@cache:6380/2')).toBe('redis://cache:6380/2');
    expect(describeStoreUrl('rediss://default:hunter22@cache')).toBe('rediss://cache');
    expect(describeStoreUrl('postgresql://app@db/x?password=hunter22')).toBe('postgresql://db/x');
    expect(describeStoreUrl('mysql://root:hunter22@db/x')).toBe('mysql:');
    expect(describeStoreUrl('postgres://app:hunter22@[::1]:5432')).toBe('postgres://[::1]:5432');
    expect(describeStoreUrl('sqlite:/var/lib/app/leases.db')).toBe('sqlite:/var/lib/app/leases.db');
    expect(describeStoreUrl('hunter22')).toBe('(not a URL)');
  });

  it('never contains the password or a password query parameter (property)', () => {
    const secret = fc.stringMatching(/^[A-Za-z0-9@/?#:%!$&'()*+,;=._~-]{6,24}$/).filter((text) => /[A-Za-z]{3}/.test(text));
    fc.assert(
      fc.property(
        fc.constantFrom('postgres', 'postgresql', 'redis', 'rediss', 'mysql', 'mongodb'),
        secret,
        fc.boolean(),
        (scheme, password, inQuery) => {
          const marked = `S3CRET${password}`;
          const url = inQuery
            ? `${scheme}://user@host:1234/db?password=${encodeURIComponent(marked)}`
            : `${scheme}://user:${marked}@host:1234/db`;
          const described = describeStoreUrl(url);
          expect(described).not.toContain('S3CRET');
          expect(secretsOf(url)).toContain(marked);
          expect(maskSecrets(`failed: ${marked}`, url)).toBe('failed: ***');
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('the CLI prints no password', () => {
  it('an unreachable Postgres whose password has a raw @, / and ?', async () => {
    const printed = await run(['list', '--store', `postgres://app:${PASSWORD}@127.0.0.1:1/orders`]);
    expect(printed).toMatch(/^leasefence: /);
    expectNoSecret(printed);
  });

  it('an unsupported scheme, a URL given as the command, and usage errors', async () => {
    const url = `mysql://root:${PASSWORD}@db:3306/x`;
    const unsupported = await run(['list', '--store', url]);
    expect(unsupported).toMatch(
      /--store must be a postgres:\/\/, postgresql:\/\/, redis:\/\/, rediss:\/\/, sqlite:, etcd:\/\/ or http\(s\):\/\/ \(etcd\) URL, got mysql:/,
    );
    expectNoSecret(unsupported);
    const asCommand = await run([`postgres://app:${PASSWORD}@db/x`, '--store', 'redis://127.0.0.1:1']);
    expect(asCommand).toMatch(/unknown command/);
    expectNoSecret(asCommand);
    const fromEnv = await run(['list', '--bogus'], { LEASEFENCE_STORE: `postgres://app:${PASSWORD}@db/x` });
    expectNoSecret(fromEnv);
  });

  it('the watch title and --json frames on a real Redis and Postgres, with ?password= in the URL', async () => {
    const redis = `${await sharedRedisUrl()}/0?password=${encodeURIComponent(`q${PASSWORD}`)}`;
    const postgres = `${await sharedPostgresUrl()}?password=${encodeURIComponent(PASSWORD)}`;
    for (const url of [redis, postgres]) {
      for (const json of [[], ['--json']]) {
        const printed = await run(['watch', '--iterations', '1', '--store', url, ...json]);
        if (json.length === 0) expect(printed).toMatch(/^leasefence watch (redis|postgres):\/\/127\.0\.0\.1:\d+/);
        expectNoSecret(printed);
      }
      expectNoSecret(await run(['list', '--json', '--store', url]));
    }
  });
});
