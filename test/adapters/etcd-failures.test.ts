/**
 * etcd failures, typed as on the other stores: an unreachable member is StoreUnavailableError (nothing
 * applied); a transaction whose reply is lost is OutcomeUnknownError (it may have applied) and retrying
 * the same command is safe; a transaction delivered twice (the etcd3 client re-sends calls that failed on
 * the network) is recognised and not decided twice; a lost compare is decided again on fresh state.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { APPLIED_KEPT } from '../../src/adapters/etcd/record.js';
import { createEtcdStore, MAX_ATTEMPTS } from '../../src/adapters/etcd/index.js';
import { isLeaseError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import { newSecret } from '../../src/secret.js';
import { NO_ATTRIBUTES } from '../../src/validate.js';
import { startEtcd, type EtcdServer } from '../support/etcd-server.js';
import { freePort } from '../support/provision.js';
import { intercepted, openEtcdRig, type EtcdRig } from './etcd-rig.js';

let rig: EtcdRig | null = null;
const open = async (): Promise<EtcdRig> => (rig = await openEtcdRig());
afterEach(() => {
  rig?.close();
  rig = null;
});

/** Stands for the etcd3 client's network error class (the store classifies by constructor name). */
class GRPCUnavailableError extends Error {}
class GRPCInvalidArgumentError extends Error {}

const claimCommand = (key: string) => ({
  key,
  secret: newSecret(),
  holder: 'a',
  runId: null,
  ttlMs: 10_000,
  attributes: NO_ATTRIBUTES,
  recovering: false,
});

describe('an unreachable etcd', () => {
  it('is StoreUnavailableError for every operation, and a fenced write never calls its callback', async () => {
    const port = await freePort();
    const client = new Etcd3({ hosts: `http://127.0.0.1:${port}` });
    try {
      const leases = createLeases(createEtcdStore({ client }), { holder: 'a', ttlMs: 1_000 });
      expect(isLeaseError(await leases.claim('job:1').catch((error: unknown) => error), 'STORE_UNAVAILABLE')).toBe(true);
      expect(isLeaseError(await leases.inspect('job:1').catch((error: unknown) => error), 'STORE_UNAVAILABLE')).toBe(true);
    } finally {
      client.close();
    }
  });
});

describe('a member that crashes and comes back', () => {
  let server: EtcdServer | null = null;
  afterAll(async () => server?.stop());

  it('refuses while down (nothing applied), keeps every acknowledged grant across kill -9, and tokens go on increasing', async () => {
    server = await startEtcd();
    const client = new Etcd3({ hosts: server.url });
    try {
      const store = createEtcdStore({ client });
      const leases = createLeases(store, { holder: 'a', ttlMs: 60_000 });
      const first = await leases.claimOrThrow('job:1');
      await server.kill();
      expect(isLeaseError(await leases.claim('job:2').catch((error: unknown) => error), 'STORE_UNAVAILABLE')).toBe(true);
      await server.restart();
      // NOTE: the etcd3 client's circuit breaker lets calls through again a few seconds after the member is back.
      let seen = null;
      for (const deadline = Date.now() + 20_000; seen === null && Date.now() < deadline; ) {
        seen = await store.inspect('job:1').catch(() => null);
        if (seen === null) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(seen).toMatchObject({ grant: { token: first.token, holder: 'a', live: true } });
      expect(await leases.release(first)).toMatchObject({ ok: true });
      const second = await leases.claimOrThrow('job:1');
      expect(second.token > first.token).toBe(true);
      expect(await store.inspect('job:2')).toMatchObject({ exists: false });
    } finally {
      client.close();
    }
  });
});

describe('lost replies and repeated delivery', () => {
  it('a transaction whose reply is lost is OutcomeUnknownError; it did apply, and the same claim sent again reports that grant', async () => {
    const r = await open();
    const store = createEtcdStore({
      client: intercepted(r.client, async (request, send) => {
        await send(request);
        throw new GRPCUnavailableError('14 UNAVAILABLE: connection reset');
      }),
      prefix: r.prefix,
      clock: r.clock,
    });
    const command = claimCommand('job:1');
    const error = await store.claim(command).catch((caught: unknown) => caught);
    expect(isLeaseError(error, 'OUTCOME_UNKNOWN')).toBe(true);
    const again = await r.store.claim(command);
    expect(again).toMatchObject({ ok: true, key: 'job:1' });
    expect(await r.store.inspect('job:1')).toMatchObject({ grant: { token: again.ok ? again.token : -1n, holder: 'a' } });
  });

  it("etcd's refusal of a whole transaction is rethrown as it is: nothing applied", async () => {
    const r = await open();
    const refusal = new GRPCInvalidArgumentError('etcdserver: request is too large');
    const store = createEtcdStore({ client: intercepted(r.client, () => Promise.reject(refusal)), prefix: r.prefix, clock: r.clock });
    expect(await store.claim(claimCommand('job:1')).catch((caught: unknown) => caught)).toBe(refusal);
    expect(await r.store.inspect('job:1')).toMatchObject({ exists: false });
  });

  it('a transaction delivered twice is not decided twice: revoke says revoked, a fenced write lands once', async () => {
    const r = await open();
    const leases = r.leasesFor('a');
    const lease = await leases.claimOrThrow('job:1');
    let twice = true;
    const store = createEtcdStore({
      client: intercepted(r.client, async (request, send) => {
        if (!twice) return send(request);
        twice = false;
        await send(request);
        // NOTE: the re-sent copy finds the record changed by the first: its compare fails.
        return send(request);
      }),
      prefix: r.prefix,
      clock: r.clock,
    });
    const data = `${r.prefix.slice(0, -1)}-data/`;
    const written = await createLeases(store, { holder: 'a' }).fencedWrite(lease, (tx) => tx.put(`${data}entry`, 'once'));
    expect(written).toMatchObject({ ok: true, token: lease.token });
    expect(await r.read(data)).toEqual(['once']);
    expect((await r.client.kv.range({ key: Buffer.from(`${data}entry`) })).kvs[0]?.version).toBe('1');

    twice = true;
    const revoked = await store.revoke({ key: 'job:1', reason: 'test', by: 'ops', requireRecovery: false, expectedToken: null });
    expect(revoked).toMatchObject({ ok: true, revoked: { token: lease.token } });
  });

  it(`a transaction delivered twice whose id left the record's last ${APPLIED_KEPT} ids before the re-read is OutcomeUnknownError, never a refusal`, async () => {
    // NOTE: found by the etcd-cluster chaos run (seed 453983875): a checkpoint sent as the leader was killed
    // committed, the etcd3 client's re-sent copy lost its compare, and the new holder's 14 changes pushed its
    // id out before the re-read; the store then reported "superseded" for a checkpoint the next grant inherited.
    const r = await open();
    const a = r.leasesFor('a');
    const lease = await a.claimOrThrow('job:1');
    const b = r.leasesFor('b');
    const data = `${r.prefix.slice(0, -1)}-data/`;
    let twice = true;
    const store = createEtcdStore({
      client: intercepted(r.client, async (request, send) => {
        if (!twice) return send(request);
        twice = false;
        await send(request);
        // NOTE: the grant expires, b takes the key over and changes it more times than the record keeps ids.
        r.clock.advance(20_000);
        const taken = await b.claimOrThrow('job:1');
        for (let i = 0; i <= APPLIED_KEPT; i += 1) await b.fencedWriteOrThrow(taken, (tx) => tx.put(`${data}${i}`, 'b'));
        return send(request);
      }),
      prefix: r.prefix,
      clock: r.clock,
    });
    const outcome = await createLeases(store, { holder: 'a' })
      .checkpoint(lease, { page: 1 })
      .catch((caught: unknown) => caught);
    expect(
      isLeaseError(outcome, 'OUTCOME_UNKNOWN'),
      `got ${JSON.stringify(outcome, (_, value) => (typeof value === 'bigint' ? value.toString() : value))}`,
    ).toBe(true);
    // NOTE: it did apply: b's grant inherited it.
    expect((await r.store.inspect('job:1')).checkpoint?.token).toBe(lease.token);
  });

  it('a lost compare is decided again on fresh state: a renew racing a fenced write, both applied', async () => {
    const r = await open();
    const leases = r.leasesFor('a');
    const lease = await leases.claimOrThrow('job:1');
    const claimedUntil = lease.expiresAt!;
    let interposed = false;
    let sent = 0;
    const store = createEtcdStore({
      client: intercepted(r.client, async (request, send) => {
        sent += 1;
        if (!interposed) {
          interposed = true;
          r.clock.advance(10);
          await leases.renewOrThrow(lease);
        }
        return send(request);
      }),
      prefix: r.prefix,
      clock: r.clock,
    });
    const data = `${r.prefix.slice(0, -1)}-data/`;
    expect(await createLeases(store, { holder: 'a' }).fencedWrite(lease, (tx) => tx.put(`${data}entry`, 'x'))).toMatchObject({ ok: true });
    expect(sent).toBe(2);
    expect(await r.read(data)).toEqual(['x']);
    expect((await r.store.inspect('job:1')).grant?.expiresAt).toBe(claimedUntil + 10);
  });

  it(`gives up after ${MAX_ATTEMPTS} lost compares with OutcomeUnknownError`, async () => {
    const r = await open();
    let sent = 0;
    const store = createEtcdStore({
      client: intercepted(r.client, async () => {
        sent += 1;
        return { header: { revision: '1' }, succeeded: false };
      }),
      prefix: r.prefix,
      clock: r.clock,
    });
    expect(isLeaseError(await store.claim(claimCommand('job:1')).catch((caught: unknown) => caught), 'OUTCOME_UNKNOWN')).toBe(true);
    expect(sent).toBe(MAX_ATTEMPTS);
  });
});
