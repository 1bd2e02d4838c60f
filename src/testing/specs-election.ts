/**
 * Conformance specs, part 4: leader election (`leasefence/election`) on the store. A term is a grant, so these
 * hold the store to what an election rests on: one live term at a time on the store's clock, a deposed
 * leader's fenced write refused, `resign` handing the term to a waiting candidate, and each term's token
 * larger than the last. Every spec uses the suite TTL (no renewal runs) and bounded waits, so they stay fast.
 */
import { createElection, type Election, type Term } from '../election.js';
import type { Leases } from '../leases-types.js';
import type { Store } from '../store.js';
import { expectEqual, expectMatch, expectTrue } from './assertions.js';
import { mustClaim, type SuiteContext } from './context.js';

/** How long a spec waits for an election to happen (a waiting candidate is woken by a release or its poll). */
const ELECTED_WITHIN_MS = 5_000;

/** A candidate of one spec: its election, its running campaign, the terms it won and whether it leads now. */
interface Candidate {
  readonly leases: Leases;
  readonly election: Election;
  readonly stop: AbortController;
  readonly terms: Term[];
  readonly demotions: string[];
  leading: Term | null;
  campaign: Promise<unknown>;
}

/**
 * Starts a campaign for `holder` on `key`; `violations` collects a term elected while another candidate of
 * `all` still believes it leads, or one the store does not show as the live grant.
 */
function campaignFor<S extends Store>(
  context: SuiteContext<S>,
  holder: string,
  key: string,
  all: Candidate[],
  violations: string[],
): Candidate {
  const leases = context.leasesFor(holder) as unknown as Leases;
  const election = createElection(leases, key);
  const self: Candidate = {
    leases,
    election,
    stop: new AbortController(),
    terms: [],
    demotions: [],
    leading: null,
    campaign: Promise.resolve(),
  };
  self.campaign = election.campaign({
    signal: self.stop.signal,
    onElected: async (term, signal) => {
      const others = all.filter((other) => other !== self && other.leading !== null);
      if (others.length > 0) violations.push(`${holder} elected (token ${term.token}) while another candidate leads`);
      const seen = await leases.inspect(key);
      if (seen.grant?.token !== term.token || !seen.grant.live) violations.push(`${holder}'s term ${term.token} is not the live grant`);
      self.terms.push(term);
      self.leading = term;
      signal.addEventListener('abort', () => (self.leading = null), { once: true });
    },
    onDemoted: (demotion) => {
      self.leading = null;
      self.demotions.push(demotion.reason);
    },
  });
  all.push(self);
  return self;
}

/** Resolves once `check` holds (polled every few ms); throws after `ELECTED_WITHIN_MS`. */
async function until(check: () => boolean, what: string): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > ELECTED_WITHIN_MS) throw new Error(`timed out after ${ELECTED_WITHIN_MS} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Stops every campaign (candidates that do not lead first, so no hand-over runs) and waits for them all. */
async function stopAll(all: readonly Candidate[]): Promise<void> {
  for (const each of [...all].sort((a, b) => Number(a.leading !== null) - Number(b.leading !== null))) each.stop.abort('spec over');
  await Promise.all(all.map((each) => each.campaign));
}

const leaderOf = (all: readonly Candidate[]): Candidate | undefined => all.find((each) => each.leading !== null);

/** Registers the election specs. */
export function describeElectionSpecs<S extends Store>(context: SuiteContext<S>): void {
  const { runner } = context;

  runner.describe('leader election', () => {
    runner.it('elects one of three candidates: one live term, the one the store shows', async () => {
      const key = context.harness.freshKey('election-one');
      const all: Candidate[] = [];
      const violations: string[] = [];
      for (const holder of ['a', 'b', 'c']) campaignFor(context, holder, key, all, violations);
      await until(() => leaderOf(all) !== undefined, 'a leader');
      // NOTE: the losers are waiting; a short pause gives a second (wrong) election the chance to happen.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expectEqual(all.filter((each) => each.leading !== null).length, 1, 'candidates that lead');
      const leader = leaderOf(all) as Candidate;
      const term = leader.leading as Term;
      expectMatch(await leader.election.leader(), { key, holder: leader.leases.holder, token: term.token });
      await stopAll(all);
      expectEqual(violations, [], 'violations');
      expectEqual(leader.demotions, ['stopped'], "the leader's demotions");
      expectEqual(await leader.election.leader(), null, 'the leader after every campaign stopped');
    });

    runner.it('resign hands the term to a waiting candidate, whose token is larger; a new campaign gets a larger one still', async () => {
      const key = context.harness.freshKey('election-resign');
      const all: Candidate[] = [];
      const violations: string[] = [];
      const a = campaignFor(context, 'a', key, all, violations);
      await until(() => a.leading !== null, 'a leads');
      const aTerm = a.leading as Term;
      const b = campaignFor(context, 'b', key, all, violations);
      // NOTE: b is woken by the release where the store sends notifications; a store without them (a harness
      // store with no subscriber) hands over at b's next poll, up to a second later (waiting's default pollMs).
      await a.election.resign();
      await a.campaign;
      expectEqual(a.demotions, ['resigned'], "a's demotions");
      await until(() => b.leading !== null, 'b leads after a resigned');
      const bTerm = b.leading as Term;
      expectTrue(bTerm.token > aTerm.token, `b's token ${bTerm.token} is larger than a's ${aTerm.token}`);
      expectMatch(await b.election.leader(), { holder: 'b', token: bTerm.token });
      await b.election.resign();
      await b.campaign;
      const again = campaignFor(context, 'a', key, all, violations);
      await until(() => again.leading !== null, 'a leads again');
      const cTerm = again.leading as Term;
      expectTrue(cTerm.token > bTerm.token, `the third term's token ${cTerm.token} is larger than b's ${bTerm.token}`);
      await stopAll(all);
      expectEqual(violations, [], 'violations');
    });

    runner.it("refuses a deposed leader's fenced write: its term expired on the store's clock and another took the key", async () => {
      const key = context.harness.freshKey('election-deposed');
      const all: Candidate[] = [];
      const violations: string[] = [];
      const a = campaignFor(context, 'a', key, all, violations);
      await until(() => a.leading !== null, 'a leads');
      const aTerm = a.leading as Term;
      expectMatch(await context.harness.appendUnderFence(a.leases as unknown as Leases<S>, aTerm.lease, 'a-while-leading'), { ok: true });
      await context.harness.expireNow(key);
      // NOTE: a still believes it leads (no renewal ran yet); the store's clock says its term is over.
      expectEqual(await a.election.leader(), null, 'the leader once the term expired');
      const b = context.leasesFor('b');
      const next = await mustClaim(b, key);
      expectTrue(next.token > aTerm.token, `the next term's token ${next.token} is larger than the deposed ${aTerm.token}`);
      expectMatch(await context.harness.appendUnderFence(a.leases as unknown as Leases<S>, aTerm.lease, 'a-deposed'), { ok: false });
      expectMatch(await context.harness.appendUnderFence(b, next, 'b-leading'), { ok: true });
      expectEqual(await context.harness.readLedger(key), ['a-while-leading', 'b-leading'], 'the ledger');
      await stopAll(all);
      expectMatch(await b.release(next), { ok: true });
      expectEqual(violations, [], 'violations');
    });
  });
}
