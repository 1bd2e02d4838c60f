import { describe, expect, it } from 'vitest';
import { checkHistory, percentile } from './checker.js';
import type { FinalKeyState, HistoryEvent, LedgerEntry, OpName } from './history.js';

const MS = 1_000_000;

interface OpSpec {
  proc: string;
  op: OpName;
  key?: string;
  reqId?: string;
  token?: number;
  /** [invoke, completion] in ms; completion `null`: never completed. */
  at: [number, number | null];
  status?: 'ok' | 'fail' | 'info';
  done?: Partial<HistoryEvent>;
  invoke?: Partial<HistoryEvent>;
}

/** Builds synthetic histories: one call per operation. */
class Story {
  readonly events: HistoryEvent[] = [];
  #seq = 0;
  op(spec: OpSpec): string {
    const reqId = spec.reqId ?? `${spec.proc}:${++this.#seq}`;
    const key = spec.key ?? 'k';
    const token = spec.token === undefined ? {} : { token: String(spec.token) };
    const presented = spec.op === 'claim' ? {} : token;
    this.events.push({
      proc: spec.proc,
      op: spec.op,
      key,
      type: 'invoke',
      reqId,
      t: String(spec.at[0] * MS),
      ...presented,
      ...spec.invoke,
    });
    if (spec.at[1] !== null) {
      this.events.push({
        proc: spec.proc,
        op: spec.op,
        key,
        type: spec.status ?? 'ok',
        reqId,
        t: String(spec.at[1] * MS),
        ...token,
        ...spec.done,
      });
    }
    return reqId;
  }
  claim(proc: string, token: number, at: [number, number], acquiredAt: number, ttl = 100, done: Partial<HistoryEvent> = {}): void {
    this.op({ proc, op: 'claim', token, at, done: { acquiredAt, expiresAt: acquiredAt + ttl, storeNow: acquiredAt, ...done } });
  }
  write(proc: string, token: number, at: [number, number | null], status: 'ok' | 'fail' | 'info' = 'ok', storeNow?: number): string {
    return this.op({ proc, op: 'write', token, at, status, ...(storeNow === undefined ? {} : { done: { storeNow } }) });
  }
}

const finalOf = (ledger: LedgerEntry[], extra: Partial<FinalKeyState> = {}): FinalKeyState[] => [
  {
    key: 'k',
    token: String(ledger.reduce((max, entry) => Math.max(max, Number(entry.token)), 1)),
    ledger,
    gateLedger: [],
    checkpoint: null,
    ...extra,
  },
];
const entry = (reqId: string, token: number): LedgerEntry => ({ reqId, token: String(token) });
const check = (story: Story, final: FinalKeyState[], takeoverBoundMs: number | null = null) =>
  checkHistory(story.events, final, { takeoverBoundMs });
const checksFired = (story: Story, final: FinalKeyState[], bound: number | null = null) => [
  ...new Set(check(story, final, bound).violations.map((v) => v.check)),
];

describe('chaos history checker', () => {
  it('accepts a correct history: a takeover after expiry, the stale holder refused', () => {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000);
    const w1 = story.write('a', 1, [3, 4], 'ok', 1003);
    story.claim('b', 2, [110, 112], 1110, 100, { previousToken: '1', reason: 'expired' });
    const w2 = story.write('b', 2, [113, 114], 'ok', 1113);
    story.op({ proc: 'a', op: 'write', token: 1, at: [120, 121], status: 'fail', done: { reason: 'superseded' } });
    const report = check(story, finalOf([entry(w1, 1), entry(w2, 2)], { token: '2' }));
    expect(report.violations).toEqual([]);
    expect(report.figures).toMatchObject({ grants: 2, takeovers: 1, writesAcked: 2, pairsChecked: 1, refusals: { 'write:superseded': 1 } });
  });

  it('flags a token granted twice and a token that does not grow in real-time order', () => {
    const twice = new Story();
    twice.claim('a', 1, [0, 2], 1000);
    twice.claim('b', 1, [200, 202], 1200);
    expect(checksFired(twice, finalOf([], { token: '1' }))).toContain('token-reused');
    const order = new Story();
    order.claim('a', 5, [0, 2], 1000);
    order.claim('b', 4, [200, 202], 1200);
    expect(checksFired(order, finalOf([], { token: '5' }))).toContain('token-order');
  });

  it('flags a final token below a granted one, unless the store forgot everything after it', () => {
    const story = new Story();
    story.claim('a', 3, [0, 2], 1000);
    expect(checksFired(story, finalOf([], { token: '2' }))).toEqual(['token-regressed']);
    story.op({ proc: 'nemesis', op: 'amnesia', key: '', at: [50, 60] });
    expect(checksFired(story, finalOf([], { token: '0' }))).toEqual([]);
  });

  it('flags two grants live at once on the store clock, but not after a release or a forced expiry', () => {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000, 100);
    story.claim('b', 2, [50, 52], 1050, 100);
    expect(checksFired(story, finalOf([], { token: '2' }))).toEqual(['two-live-grants']);
    const released = new Story();
    released.claim('a', 1, [0, 2], 1000, 100);
    released.op({ proc: 'a', op: 'release', token: 1, at: [40, 42] });
    released.claim('b', 2, [50, 52], 1050, 100);
    expect(checksFired(released, finalOf([], { token: '2' }))).toEqual([]);
    const forced = new Story();
    forced.claim('a', 1, [0, 2], 1000, 100);
    forced.op({ proc: 'nemesis', op: 'force-expire', at: [30, 31] });
    forced.claim('b', 2, [50, 52], 1050, 100);
    expect(checksFired(forced, finalOf([], { token: '2' }))).toEqual([]);
  });

  it('uses renewed expiries: a grant made before a confirmed renewal ran out is flagged', () => {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000, 100);
    story.op({ proc: 'a', op: 'renew', token: 1, at: [60, 61], done: { storeNow: 1060, expiresAt: 1160 } });
    story.claim('b', 2, [130, 132], 1130, 100);
    expect(checksFired(story, finalOf([], { token: '2' }))).toEqual(['two-live-grants']);
  });

  it('flags a stale write accepted after a newer grant completed (the Kleppmann pause), not one that raced it', () => {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000);
    story.claim('b', 2, [110, 112], 1110);
    const stale = story.write('a', 1, [150, 151], 'ok');
    expect(checksFired(story, finalOf([entry(stale, 1)], { token: '2' }))).toContain('stale-accepted');
    const racing = new Story();
    racing.claim('a', 1, [0, 2], 1000);
    const early = racing.write('a', 1, [90, 200], 'ok');
    racing.claim('b', 2, [110, 112], 1110);
    expect(checksFired(racing, finalOf([entry(early, 1)], { token: '2' }))).toEqual([]);
  });

  it('flags an accepted write applied after a newer grant on the store clock, or after its own expiry', () => {
    const overtaken = new Story();
    overtaken.claim('a', 1, [0, 2], 1000);
    const late = overtaken.write('a', 1, [100, 200], 'ok', 1150);
    overtaken.claim('b', 2, [110, 112], 1110);
    expect(checksFired(overtaken, finalOf([entry(late, 1)], { token: '2' }))).toEqual(['stale-accepted']);
    const expired = new Story();
    expired.claim('a', 1, [0, 2], 1000, 100);
    const w = expired.write('a', 1, [90, 120], 'ok', 1100);
    expect(checksFired(expired, finalOf([entry(w, 1)], { token: '1' }))).toEqual(['expired-accepted']);
  });

  it('accepts a release re-delivered after a newer grant (answered alreadyReleased), but flags a release that applied after it', () => {
    const redelivered = new Story();
    // a's grant would live until 2000: b's grant at 1110 is legal only because a's release applied first.
    redelivered.claim('a', 1, [0, 2], 1000, 1000);
    redelivered.claim('b', 2, [110, 112], 1110, 100, { previousToken: '1', reason: 'released' });
    redelivered.op({ proc: 'a', op: 'release', token: 1, at: [100, 200], done: { storeNow: 1150, alreadyReleased: true } });
    expect(checksFired(redelivered, finalOf([], { token: '2' }))).toEqual([]);
    const applied = new Story();
    applied.claim('a', 1, [0, 2], 1000, 1000);
    applied.claim('b', 2, [110, 112], 1110);
    applied.op({ proc: 'a', op: 'release', token: 1, at: [100, 200], done: { storeNow: 1150 } });
    expect(checksFired(applied, finalOf([], { token: '2' }))).toContain('stale-accepted');
  });

  it('flags a renewal that resurrects a superseded or released grant', () => {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000);
    story.claim('b', 2, [110, 112], 1110);
    story.op({ proc: 'a', op: 'renew', token: 1, at: [120, 121], done: { storeNow: 1120, expiresAt: 1220 } });
    expect(checksFired(story, finalOf([], { token: '2' }))).toContain('stale-accepted');
    const released = new Story();
    released.claim('a', 1, [0, 2], 1000);
    released.op({ proc: 'a', op: 'release', token: 1, at: [10, 11] });
    released.op({ proc: 'a', op: 'renew', token: 1, at: [20, 21], done: { storeNow: 1020, expiresAt: 1120 } });
    expect(checksFired(released, finalOf([], { token: '1' }))).toEqual(['released-accepted']);
  });

  it('checks the final ledger like a set: acknowledged kept, refused absent, no duplicates, no phantoms', () => {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000);
    const acked = story.write('a', 1, [3, 4]);
    const refused = story.write('a', 1, [5, 6], 'fail');
    const unknown = story.write('a', 1, [7, null], 'info');
    expect(checksFired(story, finalOf([entry(acked, 1), entry(unknown, 1)]))).toEqual([]);
    expect(checksFired(story, finalOf([entry(acked, 1)]))).toEqual([]);
    expect(checksFired(story, finalOf([]))).toEqual(['acked-write-lost']);
    expect(checksFired(story, finalOf([entry(acked, 1), entry(refused, 1)]))).toEqual(['refused-write-applied']);
    expect(checksFired(story, finalOf([entry(acked, 1), entry(acked, 1)]))).toEqual(['duplicate-application']);
    expect(checksFired(story, finalOf([entry(acked, 1), entry('ghost', 1)]))).toEqual(['phantom-write']);
    expect(checksFired(story, finalOf([entry(acked, 2)], { token: '2' }))).toEqual(['ledger-token-mismatch']);
    expect(check(story, finalOf([entry(acked, 1), entry(unknown, 1)])).figures.unknownApplied).toBe(1);
  });

  it('flags ledger entries whose tokens go down, and excuses writes lost when the store forgot its data', () => {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000, 50);
    const w1 = story.write('a', 1, [3, 4]);
    story.claim('b', 2, [60, 62], 1060, 50);
    const w2 = story.write('b', 2, [63, 64]);
    expect(checksFired(story, finalOf([entry(w2, 2), entry(w1, 1)], { token: '2' }))).toEqual(['ledger-order']);
    story.op({ proc: 'nemesis', op: 'amnesia', key: '', at: [70, 80] });
    const report = check(story, finalOf([], { token: '2' }));
    expect(report.violations).toEqual([]);
    expect(report.figures.lostToAmnesia).toBe(2);
  });

  it('flags a token gate that lets an older token write after a newer one', () => {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000, 50);
    story.claim('b', 2, [60, 62], 1060, 50);
    const g2 = story.op({ proc: 'b', op: 'gate', token: 2, at: [63, 64] });
    const g1 = story.op({ proc: 'a', op: 'gate', token: 1, at: [70, 71] });
    const final = finalOf([], { token: '2', gateLedger: [entry(g2, 2), entry(g1, 1)] });
    expect(checksFired(story, final)).toEqual(expect.arrayContaining(['gate-stale-accepted', 'ledger-order']));
  });

  it('checks inherited checkpoints: written by a worker, not refused, not older than an acknowledged one', () => {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000, 50);
    story.op({ proc: 'a', op: 'checkpoint', reqId: 'cp1', token: 1, at: [3, 4] });
    story.op({ proc: 'a', op: 'checkpoint', reqId: 'cp-refused', token: 1, at: [5, 6], status: 'fail' });
    story.claim('b', 2, [60, 62], 1060, 50, { checkpointId: 'cp1', checkpointToken: '1', previousToken: '1' });
    expect(checksFired(story, finalOf([], { token: '2' }))).toEqual([]);
    const lost = new Story();
    lost.claim('a', 1, [0, 2], 1000, 50);
    lost.op({ proc: 'a', op: 'checkpoint', reqId: 'cp1', token: 1, at: [3, 4] });
    lost.claim('b', 2, [60, 62], 1060, 50);
    expect(checksFired(lost, finalOf([], { token: '2' }))).toEqual(['acked-checkpoint-lost']);
    const refused = new Story();
    refused.claim('a', 1, [0, 2], 1000, 50);
    refused.op({ proc: 'a', op: 'checkpoint', reqId: 'cp-refused', token: 1, at: [5, 6], status: 'fail' });
    refused.claim('b', 2, [60, 62], 1060, 50, { checkpointId: 'cp-refused', checkpointToken: '1' });
    expect(checksFired(refused, finalOf([], { token: '2', checkpoint: { id: 'ghost', token: '1' } }))).toEqual([
      'refused-checkpoint-kept',
      'phantom-checkpoint',
    ]);
  });

  it('flags bad input that reached the store or was accepted', () => {
    const story = new Story();
    story.op({ proc: 'a', op: 'bad-input', key: '', at: [0, 1], status: 'fail', done: { storeCalls: 0 } });
    expect(checksFired(story, [])).toEqual([]);
    story.op({ proc: 'a', op: 'bad-input', key: '', at: [2, 3], status: 'fail', done: { storeCalls: 1 } });
    story.op({ proc: 'a', op: 'bad-input', key: '', at: [4, 5], status: 'ok' });
    expect(check(story, []).violations.map((v) => v.check)).toEqual(['bad-input-reached-store', 'bad-input-reached-store']);
  });

  it('measures takeover latency from a holder being killed to the next grant, and enforces a bound', () => {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000, 100);
    story.op({ proc: 'nemesis', op: 'kill', key: '', at: [10, 11], invoke: { target: 'a' } });
    story.op({ proc: 'b', op: 'claim', at: [20, 21], status: 'fail', done: { reason: 'held' } });
    story.claim('b', 2, [100, 115], 1110, 100, { reason: 'expired' });
    const report = check(story, finalOf([], { token: '2' }), 1000);
    expect(report.figures.takeoverLatencies).toEqual([105]);
    expect(report.ok).toBe(true);
    expect(checksFired(story, finalOf([], { token: '2' }), 50)).toEqual(['slow-takeover']);
  });

  it('measures takeover after a whole-server freeze from the SIGCONT to the next grant of a key still held', () => {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000, 5);
    story.op({ proc: 'a', op: 'release', key: 'k', token: 1, at: [3, 4], done: { storeNow: 1003 } });
    story.claim('c', 2, [9, 10], 1009, 100);
    // NOTE: frozen from 20 to 1020 ms; c's grant (token 2) ran out on the store's clock meanwhile.
    story.op({ proc: 'nemesis', op: 'fault', key: '', at: [20, 1020], invoke: { reason: 'freeze' } });
    story.claim('b', 3, [1030, 1070], 2030, 100, { previousToken: '2', reason: 'expired' });
    const report = check(story, finalOf([], { token: '3' }));
    expect(report.figures.takeoverLatencies).toEqual([50]);
    expect(report.figures.faults).toMatchObject({ freeze: 1 });
    expect(report.ok).toBe(true);
  });

  it('bounds the takeover from the first claim of the key after the kill: a key nobody asked for is not slow', () => {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000, 100);
    story.op({ proc: 'nemesis', op: 'kill', key: '', at: [10, 11], invoke: { target: 'a' } });
    story.claim('b', 2, [5000, 5010], 6000, 100, { reason: 'expired' });
    expect(check(story, finalOf([], { token: '2' }), 1000).figures.takeoverLatencies).toEqual([5000]);
    expect(checksFired(story, finalOf([], { token: '2' }), 1000)).toEqual([]);
    // NOTE: a claim refused while the killed holder's grant may still run (within one TTL of the kill) is right.
    story.op({ proc: 'c', op: 'claim', at: [20, 21], status: 'fail', done: { reason: 'held' } });
    expect(checksFired(story, finalOf([], { token: '2' }), 1000)).toEqual([]);
    story.op({ proc: 'c', op: 'claim', at: [200, 201], status: 'fail', done: { reason: 'held' } });
    expect(checksFired(story, finalOf([], { token: '2' }), 1000)).toEqual(['slow-takeover']);
  });

  it('ends the wait after a pause at the next grant, even when the paused holder claims the key again itself', () => {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000, 100);
    story.op({ proc: 'nemesis', op: 'pause', key: '', at: [10, 300], invoke: { target: 'a' } });
    story.op({ proc: 'b', op: 'claim', at: [20, 21], status: 'fail', done: { reason: 'held' } });
    story.claim('a', 2, [310, 320], 1320, 100, { reason: 'expired' });
    story.claim('b', 3, [5000, 5010], 6000, 100, { reason: 'released' });
    expect(check(story, finalOf([], { token: '3' }), 1000).figures.takeoverLatencies).toEqual([310]);
    expect(checksFired(story, finalOf([], { token: '3' }), 1000)).toEqual([]);
  });

  it('computes percentiles by nearest rank', () => {
    expect(percentile([], 50)).toBeNull();
    expect(percentile([5, 1, 3, 2, 4], 50)).toBe(3);
    expect(percentile([5, 1, 3, 2, 4], 99)).toBe(5);
  });
});

describe('chaos history checker after a failover (lost by design)', () => {
  /**
   * A Redis Cluster failover as the harness records it: a's grant 1 and write w1 reach the replica; b's
   * grant 2, its fenced write and its gate write do not; the master is killed at 20 ms and the replica,
   * promoted, grants 3 to c (its predecessor: 1), refuses b's fenced write, and takes c's writes.
   */
  function failoverStory(): { story: Story; w1: string; w3: string; g3: string } {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000);
    const w1 = story.write('a', 1, [3, 4], 'ok', 1003);
    story.op({ proc: 'a', op: 'release', token: 1, at: [5, 6], done: { storeNow: 1005 } });
    story.claim('b', 2, [10, 12], 1010, 100, { previousToken: '1', reason: 'released' });
    story.write('b', 2, [13, 14], 'ok', 1013);
    story.op({ proc: 'b', op: 'gate', token: 2, at: [15, 16] });
    story.op({ proc: 'nemesis', op: 'failover', key: '', at: [20, 40], invoke: { reason: 'failover', target: 'k' } });
    story.claim('c', 3, [45, 47], 1045, 100, { previousToken: '1', reason: 'released' });
    story.op({ proc: 'b', op: 'write', token: 2, at: [50, 51], status: 'fail', done: { reason: 'superseded' } });
    const w3 = story.write('c', 3, [52, 53], 'ok', 1052);
    const g3 = story.op({ proc: 'c', op: 'gate', token: 3, at: [54, 55] });
    return { story, w1, w3, g3 };
  }

  it('counts the grant and writes a failover forgot apart, not as violations, and measures kill-to-grant', () => {
    const { story, w1, w3, g3 } = failoverStory();
    const report = check(story, finalOf([entry(w1, 1), entry(w3, 3)], { token: '3', gateLedger: [entry(g3, 3)] }));
    expect(report.violations).toEqual([]);
    expect(report.figures).toMatchObject({ grantsLostToFailover: 1, writesLostToFailover: 2, takeoverLatencies: [27] });
  });

  it('accepts the writes of a grant current again on the promoted replica, whose successor it forgot', () => {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000, 200);
    story.op({ proc: 'nemesis', op: 'force-expire', key: 'k', at: [5, 6] });
    story.claim('b', 2, [10, 12], 1010, 100, { previousToken: '1', reason: 'expired' });
    story.op({ proc: 'nemesis', op: 'failover', key: '', at: [20, 40], invoke: { reason: 'failover', target: 'k' } });
    const w1 = story.write('a', 1, [45, 46], 'ok', 1045);
    const report = check(story, finalOf([entry(w1, 1)], { token: '1' }));
    expect(report.violations).toEqual([]);
    expect(report.figures.grantsLostToFailover).toBe(1);
  });

  it('accepts a split brain a failover ends: the killed master back, empty, taking grants and writes that are then discarded', () => {
    const { story, w1, w3, g3 } = failoverStory();
    // d claims on the old master (back empty, not yet a replica): token 5 from its clock, its predecessor none.
    story.claim('d', 5, [56, 58], 1056);
    story.write('d', 5, [59, 60], 'ok', 1059);
    story.op({ proc: 'd', op: 'gate', token: 5, at: [61, 62] });
    // c, on the promoted replica, writes through the gate after d did; d's gate write after c's is accepted by the old master.
    const g3b = story.op({ proc: 'c', op: 'gate', token: 3, at: [63, 64] });
    story.op({ proc: 'd', op: 'gate', token: 5, at: [65, 66] });
    story.op({ proc: 'nemesis', op: 'failover', key: '', at: [50, 80], invoke: { reason: 'failover', target: 'k' } });
    const report = check(story, finalOf([entry(w1, 1), entry(w3, 3)], { token: '3', gateLedger: [entry(g3, 3), entry(g3b, 3)] }));
    expect(report.violations).toEqual([]);
    expect(report.figures).toMatchObject({ grantsLostToFailover: 2, writesLostToFailover: 5 });
    // ...but a stale write of the discarded grant that is in the store is a violation.
    const stale = story.write('d', 5, [70, 71], 'ok', 1070);
    story.claim('e', 6, [67, 69], 1067, 100, { previousToken: '3', reason: 'released' });
    const fired = checksFired(
      story,
      finalOf([entry(w1, 1), entry(w3, 3), entry(stale, 5)], { token: '6', gateLedger: [entry(g3, 3), entry(g3b, 3)] }),
    );
    expect(fired).toContain('stale-accepted');
  });

  // Planted bugs, each forced into a history with a failover: the by-design allowances must not hide them.
  it('flags a promoted store that re-issues a forgotten token (no clock floor)', () => {
    const story = new Story();
    story.claim('a', 1, [0, 2], 1000);
    story.op({ proc: 'a', op: 'release', token: 1, at: [5, 6], done: { storeNow: 1005 } });
    story.claim('b', 2, [10, 12], 1010, 100, { previousToken: '1', reason: 'released' });
    story.op({ proc: 'nemesis', op: 'failover', key: '', at: [20, 40], invoke: { reason: 'failover', target: 'k' } });
    story.claim('c', 2, [45, 47], 1045, 100, { previousToken: '1', reason: 'released' });
    expect(checksFired(story, finalOf([], { token: '2' }))).toEqual(expect.arrayContaining(['token-reused', 'token-order']));
  });

  it('flags fenced writes that land out of token order after a failover, and the stale write itself', () => {
    const { story, w1, w3 } = failoverStory();
    const stale = story.write('b', 2, [56, 57], 'ok', 1056);
    expect(checksFired(story, finalOf([entry(w1, 1), entry(w3, 3), entry(stale, 2)], { token: '3' }))).toEqual(
      expect.arrayContaining(['ledger-order', 'stale-accepted']),
    );
  });

  it('flags a token gate that accepts an older token after a newer gate write that survived the failover', () => {
    const { story, w1, w3, g3 } = failoverStory();
    const stale = story.op({ proc: 'b', op: 'gate', token: 2, at: [60, 61] });
    const fired = checksFired(story, finalOf([entry(w1, 1), entry(w3, 3)], { token: '3', gateLedger: [entry(g3, 3), entry(stale, 2)] }));
    expect(fired).toEqual(expect.arrayContaining(['gate-stale-accepted', 'ledger-order']));
  });

  it('flags a final token below a grant made after the failover, and two live grants after it', () => {
    const { story, w1, w3, g3 } = failoverStory();
    const gateLedger = [entry(g3, 3)];
    expect(checksFired(story, finalOf([entry(w1, 1), entry(w3, 3)], { token: '1', gateLedger }))).toEqual(['token-regressed']);
    story.claim('d', 4, [60, 62], 1060, 100, { previousToken: '3', reason: 'expired' });
    expect(checksFired(story, finalOf([entry(w1, 1), entry(w3, 3)], { token: '4', gateLedger }))).toEqual(['two-live-grants']);
  });
});
