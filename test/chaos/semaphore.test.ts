/**
 * The semaphore workload's checker on hand-made histories (each rule fires on the history that breaks it and on
 * no other), and short in-process runs on the memory store: 0 violations with the real store, violations with
 * each planted bug.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import type { Store } from '../../src/store.js';
import { delegatingStore } from './mutants.js';
import { checkSemaphore, type PermitGrant, type SemaphoreHistory } from './semaphore-checker.js';
import { SEMAPHORE_STORES, SEMAPHORE_VARIANTS, runSemaphoreWorkload } from './semaphore.js';
import { ChaosUsageError, parseChaosOptions } from '../../scripts/chaos-options.js';

const [P1, P2, P3, P4] = ['{s}:permit-1', '{s}:permit-2', '{s}:permit-3', '{s}:permit-4'];
const grant = (key: string, token: number, acquiredAt: number, limit = 3, ttl = 300): PermitGrant => ({
  key,
  token: String(token),
  runId: `r${token}`,
  limit,
  acquiredAt,
  expiresAt: acquiredAt + ttl,
});

/**
 * A run that keeps every guarantee: three live from 120, token 4 granted at 150 as token 1 is released, a write of
 * token 2 applied with its reply lost, a stale write of token 3 refused after its expiry, token 5 granted at 420
 * under the lowered limit 2 (token 2 revoked, token 3 expiring then: only token 4 is live before it).
 */
const history = (change: Partial<SemaphoreHistory> = {}): SemaphoreHistory => ({
  semaphore: 's',
  grants: [grant(P1, 1, 100), grant(P2, 2, 110), grant(P3, 3, 120), grant(P1, 4, 150), grant(P2, 5, 420, 2)],
  writes: [
    { key: P1, token: '1', writeId: 'a', answer: 'applied', now: 140, delivered: true },
    { key: P2, token: '2', writeId: 'b', answer: 'applied', now: 200, delivered: false },
    { key: P3, token: '3', writeId: 'c', answer: 'expired', now: 500, delivered: true },
    { key: P1, token: '4', writeId: 'd', answer: 'applied', now: 300, delivered: true },
  ],
  // Token 1 released at 150 (a start at 150 comes after), token 2 revoked at 250; token 3 expires at 420.
  endings: [
    { key: P1, token: '1', kind: 'released', now: 150 },
    { key: P2, token: '2', kind: 'revoked', now: 250 },
  ],
  unsureEndings: [],
  ledgers: new Map([
    [
      P1,
      [
        { writeId: 'a', token: '1' },
        { writeId: 'd', token: '4' },
      ],
    ],
    [P2, [{ writeId: 'b', token: '2' }]],
  ]),
  ...change,
});

/** Grants only, with their endings: no writes, no ledgers. */
const bare = (grants: PermitGrant[], endings: SemaphoreHistory['endings'] = []): SemaphoreHistory =>
  history({ grants, endings, writes: [], ledgers: new Map() });
const three = [grant(P1, 1, 100), grant(P2, 2, 110), grant(P3, 3, 120)];
const rules = (h: SemaphoreHistory): string[] => [...new Set(checkSemaphore(h).map((violation) => violation.rule))];
const base = history();

describe('semaphore checker', () => {
  it('accepts a run within the limit, with a lost reply, a stale write refused and a lowered limit', () => {
    // At 420, token 3 expires (an end at t frees before a start at t) and token 2 was revoked: only token 4 is live
    // before token 5, fewer than its limit 2.
    expect(checkSemaphore(base)).toEqual([]);
  });

  it('a fourth grant while three are live is over the limit', () => {
    const fourth = [...three, grant(P4, 4, 130)];
    expect(rules(bare(fourth))).toEqual(['over-limit']);
    // One granted as one of them is known released, or expires, is not.
    expect(checkSemaphore(bare(fourth, [{ key: P2, token: '2', kind: 'released', now: 130 }]))).toEqual([]);
    expect(checkSemaphore(bare([...three, grant(P4, 4, 410)]))).toEqual([]);
  });

  it('a grant under a lowered limit counts the live grants of the higher one', () => {
    // Token 5 under limit 2 at 415: tokens 3 (until 420) and 4 (until 450) are live, 2 >= 2.
    expect(rules(history({ grants: [...base.grants.slice(0, 4), grant(P2, 5, 415, 2)] }))).toEqual(['over-limit']);
    // The same grant under limit 3 is fine.
    expect(rules(history({ grants: [...base.grants.slice(0, 4), grant(P2, 5, 415, 3)] }))).toEqual([]);
  });

  it('a low token does not hide a grant from the count (the grants are taken in time order)', () => {
    expect(rules(bare([...three, grant(P4, 0, 130)]))).toContain('over-limit');
  });

  it('a release whose outcome is unknown may have freed its permit since the last time known within its grant', () => {
    // Token 3 released with a driver error after 130: a grant at 140 may have followed its release.
    const grants = [...base.grants.slice(0, 3), grant(P3, 4, 140), grant(P1, 5, 150)];
    const endings = [{ key: P1, token: '1', kind: 'released' as const, now: 150 }];
    expect(rules(history({ grants, endings, writes: [], ledgers: new Map() }))).toEqual(['over-limit', 'tokens']);
    const unsureEndings = [{ key: P3, token: '3', after: 130 }];
    expect(checkSemaphore(history({ grants, endings, unsureEndings, writes: [], ledgers: new Map() }))).toEqual([]);
  });

  it('tokens are distinct, rise with acquiredAt, and one grant per permit key is live at a time', () => {
    // The same token answered twice for one acquire (a re-delivery) is one grant.
    expect(checkSemaphore(history({ grants: [...base.grants, base.grants[4] as PermitGrant] }))).toEqual([]);
    expect(rules(history({ grants: [...base.grants, { ...(base.grants[4] as PermitGrant), runId: 'other' }] }))).toEqual(['tokens']);
    // Token 6 granted at 410, before token 5 at 420.
    expect(rules(history({ grants: [...base.grants, grant(P4, 6, 410, 3, 5)] }))).toEqual(['tokens']);
    // Token 4 on permit 2 at 150, while token 2 is live there until its revoke at 250.
    const overlapping = history({
      grants: [...base.grants.slice(0, 3), grant(P2, 4, 150), grant(P1, 5, 420, 2)],
      writes: [],
      ledgers: new Map(),
    });
    expect(rules(overlapping)).toEqual(['tokens']);
  });

  it('a write applied after its grant expired, was revoked, or was superseded is stale', () => {
    const write = { key: P3, token: '3', writeId: 'c', answer: 'applied', now: 430, delivered: true };
    const ledgers = new Map([...base.ledgers, [P3, [{ writeId: 'c', token: '3' }]]]);
    expect(rules(history({ writes: [...base.writes.slice(0, 2), write, base.writes[3]!], ledgers }))).toEqual(['stale-write']);
    const afterRevoke = { key: P2, token: '2', writeId: 'b', answer: 'applied', now: 260, delivered: true };
    expect(rules(history({ writes: [base.writes[0]!, afterRevoke, ...base.writes.slice(2)] }))).toEqual(['stale-write']);
    // Applied at 150, the ms of token 1's release and token 4's grant: the write came first (release, then grant).
    const sameMs = { key: P1, token: '1', writeId: 'a', answer: 'applied', now: 150, delivered: true };
    expect(checkSemaphore(history({ writes: [sameMs, ...base.writes.slice(1)] }))).toEqual([]);
  });

  it('a ledger holds only applied writes of known grants, in token order, and every applied write', () => {
    // A refused write in the ledger (an unfenced write).
    expect(rules(history({ ledgers: new Map([...base.ledgers, [P3, [{ writeId: 'c', token: '3' }]]]) }))).toEqual(['stale-write']);
    // A write of a driver error may be in it.
    const unknown = { key: P3, token: '3', writeId: 'c', answer: 'error', now: null, delivered: true };
    expect(
      checkSemaphore(
        history({
          writes: [...base.writes.slice(0, 2), unknown, base.writes[3]!],
          ledgers: new Map([...base.ledgers, [P3, [{ writeId: 'c', token: '3' }]]]),
        }),
      ),
    ).toEqual([]);
    // Out of token order, a token never granted, twice.
    expect(
      rules(
        history({
          ledgers: new Map([
            ...base.ledgers,
            [
              P1,
              [
                { writeId: 'd', token: '4' },
                { writeId: 'a', token: '1' },
              ],
            ],
          ]),
        }),
      ),
    ).toEqual(['stale-write']);
    expect(rules(history({ ledgers: new Map([...base.ledgers, [P3, [{ writeId: 'z', token: '9' }]]]) }))).toEqual(['stale-write']);
    expect(
      rules(
        history({
          ledgers: new Map([
            ...base.ledgers,
            [
              P2,
              [
                { writeId: 'b', token: '2' },
                { writeId: 'b', token: '2' },
              ],
            ],
          ]),
        }),
      ),
    ).toEqual(['stale-write']);
    // An applied write missing from the ledger.
    expect(rules(history({ ledgers: new Map([...base.ledgers, [P2, []]]) }))).toEqual(['lost-write']);
  });
});

describe('semaphore workload on the memory store', () => {
  it('keeps every guarantee with lost replies, pauses, crashes, revokes and a lowered limit', { timeout: 30_000 }, async () => {
    const result = await runSemaphoreWorkload({ store: 'memory', url: null, seed: 25, durationMs: 2000, variant: null });
    expect(result.supported).toBe(true);
    expect(result.violations).toEqual([]);
    const figures = result.figures!;
    expect(figures.mostLive).toBe(3);
    expect(figures.lowLimitGrants).toBeGreaterThan(0);
    expect(figures.revoked).toBeGreaterThan(0);
    expect(figures.unreleased).toBeGreaterThan(0);
    expect(figures.refused).toBeGreaterThan(0);
    expect(figures.lostReplies).toBeGreaterThan(0);
    expect(result.full).toBeGreaterThan(0);
    expect(result.redelivered).toBeGreaterThan(0);
  });

  it.each([
    ['over-limit', 'over-limit'],
    ['unfenced-write', 'stale-write'],
    ['racy-acquire', 'over-limit'],
  ] as const)('catches the planted bug %s (%s)', { timeout: 30_000 }, async (variant, rule) => {
    const result = await runSemaphoreWorkload({ store: 'memory', url: null, seed: 26, durationMs: 1500, variant });
    expect(result.violations.map((violation) => violation.rule)).toContain(rule);
  });

  it('catches a store that counts only the permits up to a lowered limit, by the limit each grant was made under', {
    timeout: 30_000,
  }, async () => {
    const result = await runSemaphoreWorkload({ store: 'memory', url: null, seed: 28, durationMs: 2000, variant: 'uncounted-above-limit' });
    // Tokens, permit keys and writes stay right: only the count is wrong, and only under the lowered limit.
    expect(new Set(result.violations.map((violation) => violation.rule))).toEqual(new Set(['over-limit']));
    expect(result.figures?.mostLive).toBe(3);
  });

  it('a permit the store never frees again is stuck', { timeout: 30_000 }, async () => {
    // The bug: a permit taken over from an expired grant is answered full, its grant lost to everyone (and so on).
    const leaky = (): Store => {
      const store = createMemoryStore();
      const acquire = (store.acquirePermit as NonNullable<Store['acquirePermit']>).bind(store);
      return {
        ...delegatingStore(store),
        acquirePermit: async (command) => {
          const outcome = await acquire(command);
          if (!outcome.ok || outcome.previous?.kind !== 'expired') return outcome;
          const { semaphore, limit } = command;
          return { ok: false, reason: 'full', semaphore, limit, live: [], unavailable: [], nextAt: null, now: outcome.now };
        },
      };
    };
    const result = await runSemaphoreWorkload({
      store: 'memory',
      url: null,
      seed: 29,
      durationMs: 1500,
      variant: null,
      makeMemoryStore: leaky,
    });
    expect(new Set(result.violations.map((violation) => violation.rule))).toEqual(new Set(['stuck']));
  });

  it('a store without acquirePermit is reported unsupported and skipped', async () => {
    const lines: string[] = [];
    const { acquirePermit: _, ...withoutSemaphores } = createMemoryStore() as Store;
    expect(withoutSemaphores).not.toHaveProperty('acquirePermit');
    const result = await runSemaphoreWorkload({
      store: 'memory',
      url: null,
      seed: 27,
      durationMs: 100,
      variant: null,
      log: (line) => lines.push(line),
      makeMemoryStore: () => withoutSemaphores,
    });
    expect(result.supported).toBe(false);
    expect(lines.join('\n')).toContain('has no acquirePermit');
  });
});

describe('npm run chaos -- --workload semaphore', () => {
  const catalog = {
    scenarios: { memory: ['crash'] },
    clients: {},
    variants: ['blind-renew'],
    semaphore: { stores: SEMAPHORE_STORES, variants: SEMAPHORE_VARIANTS },
  };
  const parse = (...argv: string[]) => parseChaosOptions(['--workload', 'semaphore', ...argv], catalog);

  it('takes its own stores and planted bugs, and refuses the others before any server starts', () => {
    expect(parse()).toMatchObject({ workload: 'semaphore', stores: ['postgres', 'redis', 'sqlite'], variant: null });
    expect(parse('--stores', 'memory', '--variant', 'racy-acquire', '--duration', '60')).toMatchObject({
      stores: ['memory'],
      variant: 'racy-acquire',
      totalMs: 60_000,
    });
    expect(() => parse('--stores', 'etcd')).toThrow(ChaosUsageError);
    expect(() => parse('--variant', 'blind-renew')).toThrow(/--variant: unknown "blind-renew"/);
    expect(() => parse('--stores', 'memory', '--scenarios', 'crash')).toThrow(/the semaphore workload has no scenarios/);
    expect(() => parse('--submit-only')).toThrow(/--submit-only belongs to --workload queue/);
  });
});
