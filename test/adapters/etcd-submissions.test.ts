/**
 * Submissions and write refusals on etcd (#24). The submissions live in their own etcd key: no operation but
 * a fenced write that carries a submission reads them, and that one reads them in its one read and compares
 * and puts them in its one transaction (the round trips stay two). A submission re-sent after a lost reply
 * (after the grant ended, too) is answered `replayed` with its receipt and lands once; an etcd3 re-send of the
 * transaction is recognised; another payload is `replay-conflict`; a callback's `refuse` sends nothing.
 */
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createEtcdStore, type EtcdClient, type EtcdTxnRequest, type EtcdTxnResponse } from '../../src/adapters/etcd/index.js';
import { isLeaseError } from '../../src/errors.js';
import type { SubmissionCommand } from '../../src/fence/operations.js';
import { SUBMISSION_RETENTION, type Fence } from '../../src/fence/types.js';
import { newSecret } from '../../src/secret.js';
import { NO_ATTRIBUTES } from '../../src/validate.js';
import { openEtcdRig, type EtcdRig } from './etcd-rig.js';

let rig: EtcdRig | null = null;
const open = async (...args: Parameters<typeof openEtcdRig>): Promise<EtcdRig> => (rig = await openEtcdRig(...args));
afterEach(() => {
  rig?.close();
  rig = null;
});

/** Stands for the etcd3 client's network error class (the store classifies by constructor name). */
class GRPCUnavailableError extends Error {}

/** Every key a request reads or writes, as text. */
const keysOf = (request: EtcdTxnRequest): string[] =>
  [
    ...(request.compare ?? []).map((compare) => compare.key),
    ...(request.success ?? []).flatMap((op) => [op.request_range?.key, op.request_put?.key, op.request_delete_range?.key]),
  ]
    .filter((key): key is Buffer => key !== undefined)
    .map((key) => key.toString('utf8'));

/** A client over `real` that records every transaction and lets `txn` handle the writing ones (with compares). */
function recording(
  real: EtcdClient,
  txn: (request: EtcdTxnRequest, send: (request: EtcdTxnRequest) => Promise<EtcdTxnResponse>) => Promise<EtcdTxnResponse> = (
    request,
    send,
  ) => send(request),
): { client: EtcdClient; requests: EtcdTxnRequest[] } {
  const requests: EtcdTxnRequest[] = [];
  return {
    requests,
    client: {
      kv: {
        range: (request) => real.kv.range(request),
        txn: (request) => {
          requests.push(request);
          return (request.compare ?? []).length === 0 ? real.kv.txn(request) : txn(request, (again) => real.kv.txn(again));
        },
      },
      leaseClient: real.leaseClient,
    },
  };
}

async function claimFence(r: EtcdRig, key: string, holder = 'a', ttlMs = 10_000, store = r.store): Promise<Fence> {
  const secret = newSecret();
  const outcome = await store.claim({ key, secret, holder, runId: null, ttlMs, attributes: NO_ATTRIBUTES, recovering: false });
  if (!outcome.ok) throw new Error(`claim refused: ${outcome.reason}`);
  return { key, token: outcome.token, secret, holder, runId: null };
}

const digestOf = (payload: string): string => createHash('sha256').update(payload).digest('hex');
const submission = (runId: string, payload: string, extra: Partial<SubmissionCommand> = {}): SubmissionCommand => ({
  runId,
  digest: digestOf(payload),
  receiptJson: JSON.stringify({ receipt: runId }),
  bindToGrant: false,
  ...extra,
});

const storedSubmissions = async (r: EtcdRig, key: string) => {
  const value = await r.get(`${r.prefix}submissions/${key}`);
  return value === null ? null : (JSON.parse(value) as { submissions: { runId: string; token: string }[] }).submissions;
};

describe('submissions on etcd', () => {
  it('live in their own key: only a fenced write with a submission reads, compares and puts it, still in one read + one transaction', async () => {
    const r = await open();
    const { client, requests } = recording(r.client);
    const store = createEtcdStore({ client, prefix: r.prefix, clock: r.clock });
    const fence = await claimFence(r, 'job:1');
    const submissionsKey = `${r.prefix}submissions/job:1`;
    const data = `${r.prefix.slice(0, -1)}-data/`;

    await store.fencedWrite(fence, (tx) => tx.put(`${data}plain`, 'x'), { checkpointJson: '{"step":1}' });
    await store.renew({ fence, ttlMs: 10_000 });
    await store.setKeyState({ key: 'job:1', values: {}, by: 'ops', holdMs: 10 });
    await store.inspect('job:1');
    expect(requests.flatMap(keysOf)).not.toContain(submissionsKey);
    expect(requests.length).toBe(2 + 2 + 2 + 1);

    requests.length = 0;
    const written = await store.fencedWrite(fence, (tx) => tx.put(`${data}submitted`, 'y'), {
      submission: submission('r1', '{"a":1}'),
      checkpointJson: '{"step":2}',
    });
    expect(written).toMatchObject({
      ok: true,
      token: fence.token,
      checkpoint: { token: fence.token },
      submission: { runId: 'r1', token: fence.token, holder: 'a', receiptJson: '{"receipt":"r1"}' },
    });
    expect(requests.length).toBe(2);
    const [readRequest, commitRequest] = requests as [EtcdTxnRequest, EtcdTxnRequest];
    expect(readRequest.success?.map((op) => op.request_range?.key?.toString('utf8'))).toContain(submissionsKey);
    expect(commitRequest.compare?.map((compare) => compare.key?.toString('utf8'))).toContain(submissionsKey);
    expect(commitRequest.success?.map((op) => op.request_put?.key?.toString('utf8'))).toContain(submissionsKey);
    expect(await storedSubmissions(r, 'job:1')).toMatchObject([{ runId: 'r1', token: fence.token.toString() }]);

    // NOTE: the release and the claim after it neither read nor rewrite the submissions; a replay still finds them.
    requests.length = 0;
    await store.release({ fence });
    r.clock.advance(10);
    const next = await claimFence(r, 'job:1', 'b', 10_000, store);
    expect(requests.flatMap(keysOf)).not.toContain(submissionsKey);
    expect(await store.fencedWrite(next, () => 'again', { submission: submission('r1', '{"a":1}') })).toMatchObject({
      ok: false,
      reason: 'replayed',
      submission: { runId: 'r1', token: fence.token },
    });
  });

  it('a submission re-sent after its reply was lost (and after the grant ended) is replayed with its receipt and lands once', async () => {
    const r = await open();
    const fence = await claimFence(r, 'job:1', 'a', 1_000);
    const data = `${r.prefix.slice(0, -1)}-data/`;
    const lossy = recording(r.client, async (request, send) => {
      const response = await send(request);
      throw Object.assign(new GRPCUnavailableError('14 UNAVAILABLE: connection reset'), { response });
    });
    const store = createEtcdStore({ client: lossy.client, prefix: r.prefix, clock: r.clock });
    const sent = submission('r7', '{"label":"spam"}');
    const lost = await store.fencedWrite(fence, (tx) => tx.put(`${data}r7`, 'spam'), { submission: sent }).catch((error: unknown) => error);
    expect(isLeaseError(lost, 'OUTCOME_UNKNOWN')).toBe(true);

    // NOTE: the worker retries after its grant expired and another holder took the key.
    r.clock.advance(1_000);
    await claimFence(r, 'job:1', 'b');
    let ran = false;
    const retried = await r.store.fencedWrite(
      fence,
      (tx) => {
        ran = true;
        tx.put(`${data}r7`, 'again');
      },
      { submission: sent },
    );
    expect(retried).toMatchObject({
      ok: false,
      reason: 'replayed',
      submission: { runId: 'r7', token: fence.token, holder: 'a', digest: sent.digest, receiptJson: '{"receipt":"r7"}' },
    });
    expect(ran).toBe(false);
    expect(await r.read(data)).toEqual(['spam']);

    const changed = await r.store.fencedWrite(fence, () => undefined, { submission: submission('r7', '{"label":"ham"}') });
    expect(changed).toMatchObject({
      ok: false,
      reason: 'replay-conflict',
      expected: { runId: 'r7', token: fence.token },
      found: { digest: sent.digest },
    });
    // NOTE: bound to its grant, the same run id from another grant is that grant's fence refusal, never the receipt.
    const bound = await r.store.fencedWrite({ ...fence, token: fence.token + 1n }, () => undefined, {
      submission: { ...sent, bindToGrant: true },
    });
    expect(bound).toMatchObject({ ok: false });
    expect(bound).not.toMatchObject({ reason: 'replayed' });
  });

  it('a transaction with a submission delivered twice by the client is recognised: answered ok once, written once', async () => {
    const r = await open();
    const fence = await claimFence(r, 'job:1');
    const data = `${r.prefix.slice(0, -1)}-data/`;
    let twice = true;
    const { client } = recording(r.client, async (request, send) => {
      if (!twice) return send(request);
      twice = false;
      await send(request);
      return send(request);
    });
    const store = createEtcdStore({ client, prefix: r.prefix, clock: r.clock });
    const outcome = await store.fencedWrite(fence, (tx) => tx.put(`${data}entry`, 'once'), { submission: submission('r1', '1') });
    expect(outcome).toMatchObject({ ok: true, submission: { runId: 'r1' } });
    expect(await r.read(data)).toEqual(['once']);
    expect(await storedSubmissions(r, 'job:1')).toHaveLength(1);
  });

  it(`keeps the newest ${SUBMISSION_RETENTION} per key, oldest forgotten first`, async () => {
    const r = await open();
    const fence = await claimFence(r, 'job:1');
    for (let i = 0; i <= SUBMISSION_RETENTION; i += 1) {
      expect(await r.store.fencedWrite(fence, () => i, { submission: submission(`r${i}`, String(i)) })).toMatchObject({ ok: true });
    }
    const kept = (await storedSubmissions(r, 'job:1'))!;
    expect(kept).toHaveLength(SUBMISSION_RETENTION);
    expect(kept[0]!.runId).toBe('r1');
    expect(kept.at(-1)!.runId).toBe(`r${SUBMISSION_RETENTION}`);
    expect(await r.store.fencedWrite(fence, () => 0, { submission: submission('r0', '0') })).toMatchObject({ ok: true });
  });

  it('two writers with the same run id racing on one grant: one lands, the other (decided again after its lost compare) is replayed', async () => {
    const r = await open();
    const fence = await claimFence(r, 'job:1');
    const data = `${r.prefix.slice(0, -1)}-data/`;
    let interposed = false;
    const { client } = recording(r.client, async (request, send) => {
      if (!interposed) {
        interposed = true;
        expect(await r.store.fencedWrite(fence, (tx) => tx.put(`${data}first`, '1'), { submission: submission('r1', 'p') })).toMatchObject({
          ok: true,
        });
      }
      return send(request);
    });
    const store = createEtcdStore({ client, prefix: r.prefix, clock: r.clock });
    const second = await store.fencedWrite(fence, (tx) => tx.put(`${data}second`, '2'), { submission: submission('r1', 'p') });
    expect(second).toMatchObject({ ok: false, reason: 'replayed', submission: { runId: 'r1' } });
    expect(await r.read(data)).toEqual(['1']);
  });
});

describe('write refusals on etcd', () => {
  it("the callback's refuse sends nothing: no puts, no checkpoint, no submission; the answer is write-refused", async () => {
    const r = await open();
    const fence = await claimFence(r, 'job:1');
    const data = `${r.prefix.slice(0, -1)}-data/`;
    await r.client.put(`${data}owner`).value('inactive');
    const revision = await r.modRevision('job:1');
    const refused = await r.store.fencedWrite(
      fence,
      async (tx) => {
        tx.put(`${data}result`, 'x');
        const owner = await r.client.get(`${data}owner`).string();
        if (owner === 'inactive') tx.refuse('owner-inactive', 'the owner account is inactive');
        return 'never';
      },
      { checkpointJson: '{"step":1}', submission: submission('r1', 'x') },
    );
    expect(refused).toEqual({
      ok: false,
      reason: 'write-refused',
      key: 'job:1',
      code: 'owner-inactive',
      detail: 'the owner account is inactive',
      token: fence.token,
      now: r.clock(),
    });
    expect(await r.get(`${data}result`)).toBeNull();
    expect(await r.modRevision('job:1')).toBe(revision);
    expect(await storedSubmissions(r, 'job:1')).toBeNull();
    expect((await r.store.inspect('job:1')).checkpoint).toBeNull();
    // NOTE: the run id was not recorded: the same submission, no longer refused, lands.
    expect(await r.store.fencedWrite(fence, () => 'ok', { submission: submission('r1', 'x') })).toMatchObject({ ok: true, value: 'ok' });
  });

  it('a bad refusal code is InvalidArgumentError, and the write still applies nothing', async () => {
    const r = await open();
    const fence = await claimFence(r, 'job:1');
    const revision = await r.modRevision('job:1');
    const error = await r.store.fencedWrite(fence, (tx) => tx.refuse('')).catch((caught: unknown) => caught);
    expect(isLeaseError(error, 'INVALID_ARGUMENT')).toBe(true);
    expect(await r.modRevision('job:1')).toBe(revision);
  });
});
