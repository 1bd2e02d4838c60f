/**
 * The queue workload's checker on hand-made histories (each rule fires on the history that breaks it and on no
 * other), and short in-process runs on the memory store: 0 violations with the real store, violations with
 * each planted bug, in both modes.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import type { ClaimNextGranted } from '../../src/fence/claim-next.js';
import type { Fence } from '../../src/fence/types.js';
import { submissionDigest } from '../../src/submission.js';
import { decodeEntry, encodeEntry } from './history.js';
import { checkQueue, formatQueueViolations, type QueueHistory, type QueueSubmitAttempt } from './queue-checker.js';
import { finalItemStates, runQueueWorkload } from './queue.js';

const history = (change: Partial<QueueHistory> = {}): QueueHistory => ({
  mode: 'queue',
  items: ['a'],
  grants: [
    { key: 'a', token: '1', runId: 'r1', at: 100, expiresAt: 400 },
    { key: 'a', token: '2', runId: 'r2', at: 400, expiresAt: 700 },
  ],
  attempts: [
    { key: 'a', token: '1', runId: 'r1', answer: 'expired', now: 450, delivered: true },
    { key: 'a', token: '2', runId: 'r2', answer: 'applied', now: 500, delivered: false },
    { key: 'a', token: '2', runId: 'r2', answer: 'replayed', now: 800, recordedToken: '2', delivered: true },
  ],
  releases: [],
  removals: [{ key: 'a', runId: 'r2' }],
  ledgers: new Map([['a', [{ runId: 'r2', token: '2' }]]]),
  stillQueued: new Set(),
  ...change,
});

const rules = (h: QueueHistory): string[] => [...new Set(checkQueue(h).map((violation) => violation.rule))];

describe('queue checker', () => {
  it('accepts a run finalized once after a lost reply and a replay past the lease', () => {
    expect(checkQueue(history())).toEqual([]);
  });

  it('a replay that wrote again is not exactly once', () => {
    const twice = history({
      attempts: [...history().attempts.slice(0, 2), { key: 'a', token: '2', runId: 'r2', answer: 'applied', now: 600, delivered: true }],
      ledgers: new Map([
        [
          'a',
          [
            { runId: 'r2', token: '2' },
            { runId: 'r2', token: '2' },
          ],
        ],
      ]),
    });
    expect(rules(twice)).toEqual(['exactly-once']);
  });

  it("a worker's own re-send answered replay-conflict is a violation, unless its run was recorded abandoned", () => {
    const attempts = [...history().attempts, { key: 'a', token: '2', runId: 'r2', answer: 'replay-conflict', now: 900, delivered: true }];
    expect(rules(history({ attempts }))).toEqual(['exactly-once']);
    expect(checkQueue(history({ attempts, abandonRecords: new Set(['r2']), stillQueued: new Set(['a']) }))).toEqual([]);
  });

  it('a run answered applied or replayed must be in the ledger', () => {
    expect(rules(history({ ledgers: new Map([['a', []]]), removals: [], stillQueued: new Set(['a']) }))).toEqual(['exactly-once']);
  });

  it('a write applied after its grant expired, or after a newer grant, is stale', () => {
    const late = history({
      attempts: [{ key: 'a', token: '1', runId: 'r1', answer: 'applied', now: 450, delivered: true }],
      ledgers: new Map([['a', [{ runId: 'r1', token: '1' }]]]),
      removals: [{ key: 'a', runId: 'r1' }],
    });
    expect(rules(late)).toEqual(['stale-submission']);
    expect(checkQueue(late)).toHaveLength(2);
  });

  it('a ledger entry the store never applied is stale (an unfenced write)', () => {
    const ghost = history({
      ledgers: new Map([
        [
          'a',
          [
            { runId: 'r1', token: '1' },
            { runId: 'r2', token: '2' },
          ],
        ],
      ]),
    });
    expect(rules(ghost)).toEqual(['stale-submission', 'finalized-twice']);
  });

  it('grants of one item overlap on the store clock', () => {
    expect(rules(history({ grants: [history().grants[0]!, { ...history().grants[1]!, at: 399 }] }))).toEqual(['overlapping-grants']);
    // A release ends the grant: the next one may start then.
    expect(
      rules(
        history({ grants: [history().grants[0]!, { ...history().grants[1]!, at: 200 }], releases: [{ key: 'a', token: '1', now: 200 }] }),
      ),
    ).toEqual([]);
  });

  it("a record-first holder's record of the abandoned run is not a second finalization", () => {
    const ledgers = new Map([
      [
        'a',
        [
          { runId: 'r1', token: '2' },
          { runId: 'r2', token: '2' },
        ],
      ],
    ]);
    const attempts = [
      { key: 'a', token: '2', runId: 'r1', answer: 'applied', now: 450, delivered: true },
      { key: 'a', token: '2', runId: 'r2', answer: 'applied', now: 500, delivered: true },
      { key: 'a', token: '1', runId: 'r1', answer: 'replay-conflict', now: 600, delivered: true },
    ];
    // Without the record: two finalizations, and r1's worker told replay-conflict for its own payload.
    expect(rules(history({ ledgers, attempts }))).toEqual(['finalized-twice', 'exactly-once']);
    expect(checkQueue(history({ ledgers, attempts, abandonRecords: new Set(['r1']) }))).toEqual([]);
  });

  it('an item out of the set without a landed submission, or never finalized and not queued, is lost', () => {
    expect(rules(history({ removals: [{ key: 'a', runId: 'r1' }] }))).toEqual(['item-lost']);
    // The violation tells the item's story (grants, attempts, removals, ledger), not just that it is lost.
    const lost = checkQueue(history({ ledgers: new Map([['a', []]]), removals: [] }));
    expect(formatQueueViolations(lost.filter((violation) => violation.rule === 'item-lost')).split('\n')).toEqual([
      '      item-lost a: never finalized and no longer in the set',
      '          grant token 1 to r1 at 100, unreleased, expires 400',
      '            submits r1: expired at 450',
      '          grant token 2 to r2 at 400, unreleased, expires 700',
      '            submits r2: applied at 500, reply lost',
      '            submits r2: replayed (recorded under 2) at 800',
      '          ledger: empty; not queued at the end',
    ]);
    expect(rules(history({ items: ['a', 'b'] }))).toEqual(['item-lost']);
    expect(rules(history({ items: ['a', 'b'], stillQueued: new Set(['b']) }))).toEqual([]);
  });
});

describe('queue workload on the memory store', () => {
  // The violation of a 10-minute chaos run (round 4, seed 3161676983, not reproducible: timing): an item whose
  // ledger holds a record-first holder's record of an abandoned run, blocked for recovery again because the next
  // record-first holder's own record was refused (its lease expired before its re-send), was counted as lost: the
  // harness only looked for blocked items among those with an empty ledger.
  it('an item blocked for recovery after an earlier abandon record is still queued, not lost', async () => {
    let now = 1000;
    const store = createMemoryStore({ clock: () => now });
    const set = 's';
    const key = '{s}:i0';
    const ledger: string[] = [];
    const grants: QueueHistory['grants'][number][] = [];
    const attempts: QueueSubmitAttempt[] = [];
    const abandonRecords = new Set<string>();
    const claim = async (runId: string, onExpired: 'take-over' | 'record-first'): Promise<ClaimNextGranted & { fence: Fence }> => {
      const outcome = await store.claimNext({
        set,
        holder: runId,
        runId,
        secret: `secret-${runId}`,
        ttlMs: 100,
        attributes: {},
        onExpired,
      });
      if (!outcome.ok) throw new Error(`claim-next idle for ${runId}`);
      grants.push({ key, token: outcome.token.toString(), runId, at: outcome.now, expiresAt: outcome.expiresAt });
      return { ...outcome, fence: { key, token: outcome.token, secret: `secret-${runId}`, holder: runId, runId } };
    };
    const submit = async (fence: Fence, runId: string, checkpoint: unknown): Promise<string> => {
      const entry = encodeEntry({ reqId: runId, token: fence.token.toString() });
      const submission = { runId, digest: submissionDigest(checkpoint, 65_536), receiptJson: null, bindToGrant: false };
      const outcome = await store.fencedWrite(fence, () => ledger.push(entry), { submission, checkpointJson: JSON.stringify(checkpoint) });
      const answer = outcome.ok ? 'applied' : outcome.reason;
      attempts.push({ key, token: fence.token.toString(), runId, answer, now: outcome.now, delivered: true });
      return answer;
    };
    await store.addItems({ set, keys: [key] });
    await claim('a1', 'take-over'); // crashes: its grant expires
    now += 200;
    const b = await claim('b1', 'record-first');
    expect(b.abandoned?.runId).toBe('a1');
    abandonRecords.add('a1');
    expect(await submit(b.fence, 'a1', { abandoned: 'a1' })).toBe('applied');
    now += 200; // b1 crashes before its own submission
    const c = await claim('c1', 'record-first');
    expect(c.abandoned?.runId).toBe('b1');
    abandonRecords.add('b1');
    now += 200; // c1's record, re-sent after its lease is gone, is refused: the key stays blocked for recovery
    expect(await submit(c.fence, 'b1', { abandoned: 'b1' })).toBe('expired');
    expect(
      (await store.claimNext({ set, holder: 'd1', runId: 'd1', secret: 'x', ttlMs: 100, attributes: {}, onExpired: 'take-over' })).ok,
    ).toBe(false);

    const final = await finalItemStates(store, [key], async () => ledger.map(decodeEntry), abandonRecords);
    const violations = checkQueue({
      mode: 'queue',
      items: [key],
      grants,
      attempts,
      releases: [],
      removals: [],
      ledgers: final.ledgers,
      abandonRecords,
      stillQueued: final.stillQueued,
    });
    expect(violations).toEqual([]);
    expect(final.blocked).toBe(1);
  });

  it('keeps every guarantee with lost replies, pauses and crashes', { timeout: 30_000 }, async () => {
    const result = await runQueueWorkload({ store: 'memory', url: null, seed: 24, durationMs: 1500, variant: null });
    expect(result.mode).toBe('queue');
    expect(result.violations).toEqual([]);
    expect(result.figures.replayed).toBeGreaterThan(0);
    expect(result.figures.refused).toBeGreaterThan(0);
    expect(result.figures.finalized).toBeGreaterThan(50);
    expect(result.figures.abandonedRecorded).toBeGreaterThan(0);
  });

  it('submit-only keeps every guarantee too', { timeout: 30_000 }, async () => {
    const result = await runQueueWorkload({ store: 'memory', url: null, seed: 25, durationMs: 1000, variant: null, submitOnly: true });
    expect(result.mode).toBe('submit-only');
    expect(result.violations).toEqual([]);
  });

  it.each([
    ['unrecorded-submission', 'exactly-once'],
    ['unfenced-write', 'stale-submission'],
  ] as const)('catches the planted bug %s (%s)', { timeout: 30_000 }, async (variant, rule) => {
    for (const submitOnly of [false, true]) {
      const result = await runQueueWorkload({ store: 'memory', url: null, seed: 26, durationMs: 1000, variant, submitOnly });
      expect(result.violations.map((violation) => violation.rule)).toContain(rule);
    }
  });
});
