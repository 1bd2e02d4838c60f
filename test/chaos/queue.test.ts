/**
 * The queue workload's checker on hand-made histories (each rule fires on the history that breaks it and on no
 * other), and short in-process runs on the memory store: 0 violations with the real store, violations with
 * each planted bug, in both modes.
 */
import { describe, expect, it } from 'vitest';
import { checkQueue, type QueueHistory } from './queue-checker.js';
import { runQueueWorkload } from './queue.js';

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
    expect(rules(history({ items: ['a', 'b'] }))).toEqual(['item-lost']);
    expect(rules(history({ items: ['a', 'b'], stillQueued: new Set(['b']) }))).toEqual([]);
  });
});

describe('queue workload on the memory store', () => {
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
