/**
 * `--store etcd://host:port` (issue 26): the CLI lists, inspects, revokes and watches the leases of an etcd
 * store, the etcd3 client loaded from its own install, on a real etcd member (the test worker's shared one);
 * a member's `http://` client URL works the same; `--prefix` picks the store's namespace. An unreachable
 * etcd is exit 5 (unavailable) within the CLI's call deadline, and a password in the URL is never printed.
 */
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEtcdStore } from '../../src/adapters/etcd/index.js';
import { createLeases } from '../../src/leases.js';
import { freePort } from '../support/provision.js';
import { freshEtcdPrefix, sharedEtcdUrl } from '../adapters/etcd-harness.js';
import { runCli, startInProcess } from './cli-harness.js';

describe('the CLI on an etcd store', () => {
  let url = '';
  let host = '';
  const prefix = freshEtcdPrefix('lf-cli');
  let client: Etcd3;
  let token = 0n;
  beforeAll(async () => {
    url = await sharedEtcdUrl();
    host = new URL(url).host;
    client = new Etcd3({ hosts: url });
    const leases = createLeases(createEtcdStore({ client, prefix }), { holder: 'nightly', ttlMs: 60_000 });
    const lease = await leases.claimOrThrow('report:daily', { runId: 'r1' });
    token = lease.token;
    await leases.checkpointOrThrow(lease, { page: 7 });
  });
  afterAll(() => client.close());

  async function cli(store: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const run = startInProcess([...args, '--store', store, '--prefix', prefix], { tty: false });
    run.answer('');
    const code = await run.exited;
    return { code, ...run.printed };
  }

  it("lists, inspects and watches through etcd:// and a member's http:// URL", async () => {
    for (const store of [`etcd://${host}`, url, `etcd://127.0.0.1:1,${host}`]) {
      const list = await cli(store, 'list');
      expect(list, store).toMatchObject({ code: 0, stderr: '' });
      expect(list.stdout).toMatch(new RegExp(`report:daily +live +${token} +held \\d+ s by nightly, run r1 +expires in \\d+ s`));
    }
    const inspect = await cli(`etcd://${host}`, 'inspect', 'report:daily');
    expect(inspect.code).toBe(0);
    expect(inspect.stdout).toContain('"page": 7');
    const watch = await cli(`etcd://${host}`, 'watch', '--iterations', '1');
    expect(watch.code).toBe(0);
    expect(watch.stdout).toMatch(new RegExp(`^leasefence watch etcd://${host.replace(/\./g, '\\.')}  `));
  });

  it('without --prefix the store is the default namespace: the key is not found there (exit 3)', async () => {
    const run = startInProcess(['inspect', 'report:daily', '--store', `etcd://${host}`], { tty: false });
    run.answer('');
    expect(await run.exited).toBe(3);
    expect(run.printed.stdout).not.toContain('"page": 7');
  });

  it("revokes (with --yes) from a separate process, etcd3 loaded from the CLI's own install", async () => {
    const run = await runCli(['revoke', 'report:daily', '--reason', 'stuck', '--yes', '--store', `etcd://${host}`, '--prefix', prefix]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(new RegExp(`^revoked report:daily: token ${token} \\(nightly, run r1\\) is fenced`));
    const after = await createLeases(createEtcdStore({ client, prefix }), { holder: 'x' }).inspect('report:daily');
    expect(after.ending).toMatchObject({ kind: 'revoked', reason: 'stuck' });
  });

  it('an unreachable etcd: exit 5 within the call deadline, the password never printed', async () => {
    const port = await freePort();
    const started = performance.now();
    const run = await cli(`etcd://root:s3cret%40pw@127.0.0.1:${port}`, 'list');
    expect(performance.now() - started).toBeLessThan(20_000);
    expect(run.code).toBe(5);
    expect(`${run.stdout}${run.stderr}`).not.toMatch(/s3cret|root/);
  }, 30_000);

  it('an etcd URL without a host is a usage error (exit 2)', async () => {
    expect((await cli('etcd://', 'list')).code).toBe(2);
  });
});
