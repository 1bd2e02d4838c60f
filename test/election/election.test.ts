/**
 * Leader election on the memory store with a manual store clock: at most one live term at every instant (the
 * store's inspection agrees with the one leader that believes it leads), a deposed leader's fenced write is
 * refused, resign and an aborted campaign hand over, a throwing callback ends its term released, and bad
 * input is refused before any I/O.
 */
import { describe, expect, it } from 'vitest';
import { createManualClock, createMemoryStore } from '../../src/adapters/memory/index.js';
import { createElection, type Demotion, type Election, type Leader, type Term } from '../../src/election.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import type { Store } from '../../src/store.js';
import { spyOn } from '../leases/spy-store.js';

const KEY = 'election:scheduler';

/** An object whose every read throws, as a hostile Proxy does. */
const hostile = (): object =>
  new Proxy(
    {},
    {
      get: () => {
        throw new Error('proxy get');
      },
    },
  );

/** Resolves once `check` holds, polling every few ms (bounded). */
async function until(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** A candidate: its election, its campaign, and what it was told. */
interface Candidate {
  readonly name: string;
  readonly leases: Leases;
  readonly election: Election;
  readonly stop: AbortController;
  readonly terms: Term[];
  readonly demotions: Demotion[];
  /** The term this candidate believes it leads (its signal not aborted), or null. */
  leading: Term | null;
  readonly campaign: Promise<unknown>;
}

function candidate(store: Store, name: string, violations: string[], all: Candidate[], ttlMs = 60_000): Candidate {
  const leases = createLeases(store, { holder: name });
  const election = createElection(leases, KEY, { ttlMs });
  const stop = new AbortController();
  const self: Candidate = {
    name,
    leases,
    election,
    stop,
    terms: [],
    demotions: [],
    leading: null,
    campaign: Promise.resolve(),
  };
  const campaign = election.campaign({
    signal: stop.signal,
    onElected: async (term, signal) => {
      // At most one live term: no other candidate believes it leads, and the store shows this very term.
      const others = all.filter((other) => other !== self && other.leading !== null).map((other) => other.name);
      if (others.length > 0) violations.push(`${name} elected (token ${term.token}) while ${others.join(', ')} lead`);
      const seen = await leases.inspect(KEY);
      if (seen.grant?.token !== term.token || seen.grant.live !== true)
        violations.push(`${name}'s term ${term.token} is not the live grant`);
      self.terms.push(term);
      self.leading = term;
      signal.addEventListener('abort', () => (self.leading = null), { once: true });
    },
    onDemoted: (demotion) => {
      self.leading = null;
      self.demotions.push(demotion);
    },
  });
  Object.assign(self, { campaign });
  all.push(self);
  return self;
}

const leaderOf = (all: Candidate[]): Candidate | undefined => all.find((each) => each.leading !== null);

describe('createElection on the memory store', () => {
  it('elects one leader among three; resign hands the term to another candidate, woken by the release', async () => {
    const store = createMemoryStore({ clock: createManualClock(1_000) });
    const violations: string[] = [];
    const all: Candidate[] = [];
    for (const name of ['a', 'b', 'c']) candidate(store, name, violations, all);
    await until(() => leaderOf(all) !== undefined, 'a first leader');
    const first = leaderOf(all) as Candidate;
    const firstToken = (first.leading as Term).token;
    const handedAt = performance.now();
    await first.election.resign();
    await expect(first.campaign).resolves.toEqual({ reason: 'resigned', terms: 1 });
    expect(first.demotions.map((each) => each.reason)).toEqual(['resigned']);
    expect(first.demotions[0]).toMatchObject({ released: true });
    await until(() => leaderOf(all) !== undefined, 'the next leader');
    // NOTE: woken by the store's notification: far below any poll or expiry (the TTL is 60 s, the clock stands still).
    expect(performance.now() - handedAt).toBeLessThan(1_000);
    const second = leaderOf(all) as Candidate;
    expect(second).not.toBe(first);
    expect((second.leading as Term).token).toBeGreaterThan(firstToken);
    // The deposed leader's fenced write is refused by the fence, where it lands.
    const stale = await first.leases.fencedWrite((first.terms[0] as Term).lease, () => 'stale');
    expect(stale).toMatchObject({ ok: false, reason: 'superseded' });
    for (const each of all) each.stop.abort('test over');
    await Promise.all(all.map((each) => each.campaign));
    expect(violations).toEqual([]);
    expect((await store.inspect(KEY)).grant).toBeNull();
  });

  it('a leader whose term expired on the store clock is deposed: the next term starts, and the old term is fenced', async () => {
    const clock = createManualClock(1_000);
    const store = createMemoryStore({ clock });
    const violations: string[] = [];
    const all: Candidate[] = [];
    // NOTE: a TTL of 300 ms renews every 100 ms of real time; the store clock jumps past it at once.
    candidate(store, 'a', violations, all, 300);
    await until(() => leaderOf(all) !== undefined, 'a leads');
    const a = all[0] as Candidate;
    const aTerm = a.leading as Term;
    candidate(store, 'b', violations, all, 300);
    a.stop.abort('a leaves the race'); // a's release would hand over too; the expiry must come first
    clock.advance(10_000);
    // a's term expired on the store's clock before its stop released it: its writes are refused from now on.
    expect(await a.leases.fencedWrite(aTerm.lease, () => 'late')).toMatchObject({ ok: false });
    await until(() => all[1]?.leading !== null, 'b leads');
    await a.campaign;
    const bTerm = (all[1] as Candidate).leading as Term;
    expect(bTerm.token).toBeGreaterThan(aTerm.token);
    expect(await a.leases.fencedWrite(aTerm.lease, () => 'late')).toMatchObject({ ok: false, reason: 'superseded' });
    expect(await (all[1] as Candidate).leases.fencedWrite(bTerm.lease, () => 'ok')).toMatchObject({ ok: true, value: 'ok' });
    (all[1] as Candidate).stop.abort('over');
    await Promise.all(all.map((each) => each.campaign));
    expect(violations).toEqual([]);
  });

  it('an operator revoke deposes the leader at once (lost, revoked); it campaigns again and its old term stays fenced', async () => {
    const store = createMemoryStore({ clock: createManualClock(1_000) });
    const violations: string[] = [];
    const all: Candidate[] = [];
    for (const name of ['a', 'b']) candidate(store, name, violations, all);
    await until(() => leaderOf(all) !== undefined, 'a leader');
    const deposed = leaderOf(all) as Candidate;
    const oldTerm = deposed.leading as Term;
    const operator = createLeases(store, { holder: 'operator' });
    await operator.revoke(KEY, { reason: 'maintenance' });
    await until(() => deposed.demotions.length === 1, 'the demotion');
    const demotion = deposed.demotions[0] as Demotion & { reason: 'lost' };
    expect(demotion.reason).toBe('lost');
    expect(demotion.error.message).toMatch(/revoked|superseded/); // the revoke, or the next term that followed it
    await until(() => leaderOf(all) !== undefined, 'a new leader');
    expect(((leaderOf(all) as Candidate).leading as Term).token).toBeGreaterThan(oldTerm.token);
    expect(await deposed.leases.fencedWrite(oldTerm.lease, () => 'stale')).toMatchObject({ ok: false });
    for (const each of all) each.stop.abort('over');
    await Promise.all(all.map((each) => each.campaign));
    expect(violations).toEqual([]);
  });

  it('an aborted campaign signal (SIGTERM) stops the term, releases it, and the next candidate is elected promptly', async () => {
    const store = createMemoryStore({ clock: createManualClock(1_000) });
    const violations: string[] = [];
    const all: Candidate[] = [];
    for (const name of ['a', 'b']) candidate(store, name, violations, all);
    await until(() => leaderOf(all) !== undefined, 'a leader');
    const first = leaderOf(all) as Candidate;
    first.stop.abort('SIGTERM');
    await expect(first.campaign).resolves.toEqual({ reason: 'stopped', terms: 1 });
    expect(first.demotions).toMatchObject([{ reason: 'stopped', released: true }]);
    await until(() => leaderOf(all) !== undefined, 'the next leader', 1_000);
    for (const each of all) each.stop.abort('over');
    await Promise.all(all.map((each) => each.campaign));
    expect(violations).toEqual([]);
  });

  it('a throwing onElected ends its term released and reported (failed), and campaign rejects with its error', async () => {
    const store = createMemoryStore({ clock: createManualClock(1_000) });
    const election = createElection(createLeases(store, { holder: 'a' }), KEY);
    const demotions: Demotion[] = [];
    const boom = new Error('boom');
    const campaign = election.campaign({
      onElected: () => {
        throw boom;
      },
      onDemoted: (demotion) => void demotions.push(demotion),
    });
    await expect(campaign).rejects.toBe(boom);
    expect(demotions).toMatchObject([{ reason: 'failed', error: boom }]);
    expect((await store.inspect(KEY)).grant).toBeNull();
    expect((await store.inspect(KEY)).ending?.kind).toBe('released');
  });

  it('a throwing onDemoted ends the campaign with its error; the term was already released', async () => {
    const store = createMemoryStore({ clock: createManualClock(1_000) });
    const election = createElection(createLeases(store, { holder: 'a' }), KEY);
    const boom = new Error('demoted boom');
    let elected = false;
    const campaign = election.campaign({
      onElected: () => {
        elected = true;
      },
      onDemoted: () => {
        throw boom;
      },
    });
    await until(() => elected, 'elected');
    void election.resign();
    await expect(campaign).rejects.toBe(boom);
    expect((await store.inspect(KEY)).grant).toBeNull();
  });

  it('observers are told who leads and of each change, without campaigning', async () => {
    const store = createMemoryStore({ clock: createManualClock(1_000) });
    const observer = createElection(createLeases(store, { holder: 'observer' }), KEY);
    expect(await observer.leader()).toBeNull();
    const seen: Array<Leader | null> = [];
    const stopObserving = await observer.observe((leader) => void seen.push(leader));
    expect(seen).toEqual([null]);
    const violations: string[] = [];
    const all: Candidate[] = [];
    for (const name of ['a', 'b']) candidate(store, name, violations, all);
    await until(() => leaderOf(all) !== undefined && seen.length === 2, 'the observer sees the first leader');
    const first = leaderOf(all) as Candidate;
    expect(seen[1]).toMatchObject({ key: KEY, holder: first.name, token: (first.leading as Term).token, since: 1_000 });
    expect(await observer.leader()).toMatchObject({ holder: first.name });
    await first.election.resign();
    await until(() => seen.at(-1)?.holder !== undefined && seen.at(-1)?.holder !== first.name, 'the observer sees the handover');
    // No campaign by the observer: only a and b ever held the key.
    expect(seen.filter((leader) => leader !== null).map((leader) => leader?.holder)).not.toContain('observer');
    stopObserving();
    for (const each of all) each.stop.abort('over');
    await Promise.all(all.map((each) => each.campaign));
    expect(violations).toEqual([]);
  });

  it('an observer of a vacant key sees a new leader within pollMs even after a long idle time (a claim sends no message)', async () => {
    const store = createMemoryStore({ clock: createManualClock(1_000) });
    const observer = createElection(createLeases(store, { holder: 'observer' }), KEY, { pollMs: 50 });
    const seen: Array<{ leader: Leader | null; at: number }> = [];
    const stop = await observer.observe((leader) => void seen.push({ leader, at: performance.now() }));
    await new Promise((resolve) => setTimeout(resolve, 1_300)); // idle: nobody campaigns
    const claimedAt = performance.now();
    await createLeases(store, { holder: 'a' }).claimOrThrow(KEY);
    await until(() => seen.length === 2, 'the observer sees the leader', 3_000);
    stop();
    expect((seen[1]?.at ?? Number.POSITIVE_INFINITY) - claimedAt).toBeLessThan(400);
  });

  it('an observer on a store without notifications reads every pollMs and still sees each change', async () => {
    const memory = createMemoryStore({ clock: createManualClock(1_000) });
    // NOTE: the same store with its notification methods hidden, as a Redis store without a subscriber.
    const silent = new Proxy(memory, {
      get: (target, property) =>
        property === 'watchFreed' || property === 'watchRevoked' ? undefined : Reflect.get(target, property, target),
    });
    const observer = createElection(createLeases(silent, { holder: 'observer' }), KEY, { pollMs: 50 });
    const seen: Array<Leader | null> = [];
    const controller = new AbortController();
    await observer.observe((leader) => void seen.push(leader), { signal: controller.signal });
    const holder = createLeases(memory, { holder: 'a' });
    const lease = await holder.claimOrThrow(KEY);
    await until(() => seen.at(-1)?.token === lease.token, 'the observer polls the new leader', 2_000);
    await holder.release(lease);
    await until(() => seen.at(-1) === null, 'the observer polls the vacancy', 2_000);
    controller.abort();
    const count = seen.length;
    await holder.claimOrThrow(KEY);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(seen).toHaveLength(count); // stopped: no read after the abort
    expect(seen.map((leader) => leader?.holder ?? null)).toEqual([null, 'a', null]);
  });

  it('a second campaign on the same election while one runs is refused; an aborted signal campaigns for nothing', async () => {
    const spied = spyOn(createMemoryStore({ clock: createManualClock(1_000) }));
    const election = createElection(createLeases(spied.store, { holder: 'a' }), KEY);
    expect(await election.campaign({ onElected: () => undefined, signal: AbortSignal.abort('gone') })).toEqual({
      reason: 'stopped',
      terms: 0,
    });
    expect(spied.calls).toEqual([]);
    const running = election.campaign({ onElected: () => undefined });
    await expect(election.campaign({ onElected: () => undefined })).rejects.toThrow(InvalidArgumentError);
    await election.resign();
    await expect(running).resolves.toMatchObject({ reason: 'resigned' });
    expect((await spied.store.inspect(KEY)).grant).toBeNull();
  });

  it('bad input gets InvalidArgumentError before any I/O', async () => {
    const spied = spyOn(createMemoryStore());
    const leases = createLeases(spied.store, { holder: 'a' });
    const bad: Array<() => unknown> = [
      () => createElection(null as unknown as Leases, KEY),
      () => createElection(leases, '' as string),
      () => createElection(leases, 42 as unknown as string),
      () => createElection(leases, KEY, { ttlMs: 0 }),
      () => createElection(leases, KEY, { ttlMs: 1.5 }),
      () => createElection(leases, KEY, { pollMs: -1 }),
      () => createElection(leases, KEY, 'fast' as unknown as object),
      () => createElection(hostile() as Leases, KEY),
      () => createElection(leases, KEY, hostile()),
      () => createElection(leases, KEY, { timers: {} as never }),
    ];
    for (const make of bad) expect(make).toThrow(InvalidArgumentError);
    const election = createElection(leases, KEY);
    const campaigns: unknown[] = [
      undefined,
      {},
      { onElected: 'run' },
      { onElected: () => undefined, onDemoted: 1 },
      { onElected: () => undefined, signal: {} },
      hostile(),
    ];
    for (const handlers of campaigns) {
      await expect(election.campaign(handlers as Parameters<Election['campaign']>[0])).rejects.toThrow(InvalidArgumentError);
    }
    await expect(election.observe('x' as unknown as () => void)).rejects.toThrow(InvalidArgumentError);
    await expect(election.observe(() => undefined, { signal: 1 as unknown as AbortSignal })).rejects.toThrow(InvalidArgumentError);
    expect(spied.calls).toEqual([]);
  });
});
