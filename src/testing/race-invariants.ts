/**
 * Checkers of DESIGN.md invariants 1-5 over a race history. Each returns the violations it found (empty:
 * the invariant held). "Certainly before" uses the store's apply order when it is exactly known (in-process
 * stores) and real-time order otherwise (a completed before b was invoked), so a checker never reports a
 * violation that some legal order would explain.
 */
import type { StoreInspection } from '../fence/operations.js';
import type { RaceHistory, RaceOp } from './race-history.js';

/** A grant as the history shows it: the claim that made it and everything its owner did with it. */
interface GrantStory {
  readonly token: bigint;
  readonly claim: RaceOp;
  /** The owner's operations presenting this grant, in the order the owner ran them. */
  readonly uses: readonly RaceOp[];
  readonly revokes: readonly RaceOp[];
}

const okOf = (op: RaceOp): boolean => op.outcome?.ok === true;
const nowOf = (op: RaceOp): number => {
  const { outcome } = op;
  const now = outcome?.lease?.acquiredAt ?? outcome?.now;
  if (typeof now !== 'number') throw new Error(`${describeOp(op)} reported no store time`);
  return now;
};

/** Whether `a` certainly took effect before `b`. */
export function certainlyBefore(history: RaceHistory, a: RaceOp, b: RaceOp): boolean {
  if (history.exactOrder && a.apply !== null && b.apply !== null) return a.apply < b.apply;
  return a.complete < b.invoke;
}

/** One line on `op` for a failure report: worker, kind, token, order numbers, outcome. */
export function describeOp(op: RaceOp): string {
  const { outcome } = op;
  const result =
    outcome === null
      ? 'pending'
      : outcome.ok
        ? `ok${op.kind === 'claim' ? ` token ${outcome.lease?.token}` : ''}`
        : `refused ${outcome.reason}`;
  const token = op.presented === null ? '' : ` t${op.presented}`;
  return `w${op.worker} ${op.kind}${token} [invoke ${op.invoke}, apply ${op.apply ?? '?'}, complete ${op.complete}] -> ${result}`;
}

function grantStories(history: RaceHistory): GrantStory[] {
  const claims = history.ops.filter((op) => op.kind === 'claim' && okOf(op));
  return claims
    .map((claim) => {
      const token = claim.outcome!.lease!.token;
      const uses = history.ops.filter((op) => op.worker === claim.worker && op.presented === token && op.invoke > claim.invoke);
      const revokes = history.ops.filter((op) => op.kind === 'revoke' && okOf(op) && op.outcome!.revoked!.token === token);
      return { token, claim, uses, revokes };
    })
    .sort((a, b) => (a.token < b.token ? -1 : 1));
}

/**
 * The store's clock never runs backwards along its apply order (where that order is known). This also
 * guards the race harness itself: an answer recorded out of apply order would show up here.
 */
export function checkStoreClock(history: RaceHistory): string[] {
  if (!history.exactOrder) return [];
  const applied = history.ops.filter((op) => op.apply !== null).sort((a, b) => a.apply! - b.apply!);
  const violations: string[] = [];
  for (let i = 1; i < applied.length; i += 1) {
    const [before, after] = [applied[i - 1]!, applied[i]!];
    if (nowOf(after) < nowOf(before))
      violations.push(`store time went backwards: ${describeOp(before)} at ${nowOf(before)}, then ${describeOp(after)} at ${nowOf(after)}`);
  }
  return violations;
}

/** Invariant 2: tokens are never issued twice (nor equal to a burned one) and grow in the order they were minted. */
export function checkTokens(history: RaceHistory): string[] {
  const violations: string[] = [];
  const minted: { op: RaceOp; token: bigint }[] = [];
  for (const op of history.ops) {
    if (!okOf(op)) continue;
    if (op.kind === 'claim') minted.push({ op, token: op.outcome!.lease!.token });
    if (op.kind === 'revoke') minted.push({ op, token: op.outcome!.token! });
  }
  const seen = new Map<bigint, RaceOp>();
  for (const { op, token } of minted) {
    const earlier = seen.get(token);
    if (earlier !== undefined) violations.push(`token ${token} issued twice: ${describeOp(earlier)} and ${describeOp(op)}`);
    seen.set(token, op);
  }
  for (const a of minted) {
    for (const b of minted) {
      if (certainlyBefore(history, a.op, b.op) && !(a.token < b.token))
        violations.push(`token went backwards: ${describeOp(a.op)} minted ${a.token} before ${describeOp(b.op)} minted ${b.token}`);
    }
  }
  return violations;
}

/** The expiry in effect for `story` just before `at` (exact order), or the latest one known before it. */
function expiryBefore(history: RaceHistory, story: GrantStory, at: RaceOp): number | null {
  let expiresAt = story.claim.outcome!.lease!.expiresAt;
  for (const use of story.uses)
    if (use.kind === 'renew' && okOf(use) && certainlyBefore(history, use, at)) expiresAt = use.outcome!.expiresAt ?? null;
  return expiresAt;
}

/** Whether an expire-now hook may have lowered `story`'s expiry before `until` completed. */
function mayHaveBeenExpiredEarly(history: RaceHistory, story: GrantStory, until: RaceOp): boolean {
  return history.expiries.some((expire) => expire.complete > story.claim.invoke && expire.invoke < until.complete);
}

/** Invariant 1: a grant is made only once the previous one ended (released, revoked or expired by the store's clock). */
export function checkSingleLiveGrant(history: RaceHistory): string[] {
  const violations: string[] = [];
  const stories = grantStories(history);
  for (let i = 1; i < stories.length; i += 1) {
    const before = stories[i - 1]!;
    const after = stories[i]!;
    const ended = [
      ...before.uses.filter((use) => use.kind === 'release' && okOf(use) && use.outcome!.alreadyReleased === false),
      ...before.revokes,
    ];
    if (ended.some((end) => !certainlyBefore(history, after.claim, end))) continue;
    let expiresAt = expiryBefore(history, before, after.claim);
    const previous = after.claim.outcome!.previous;
    if (
      history.expiryHookMovesExpiry &&
      previous?.kind === 'expired' &&
      previous.token === before.token &&
      mayHaveBeenExpiredEarly(history, before, after.claim)
    ) {
      expiresAt = expiresAt === null ? previous.at : Math.min(expiresAt, previous.at);
    }
    const acquiredAt = nowOf(after.claim);
    if (expiresAt === null || acquiredAt < expiresAt) {
      violations.push(
        `two live grants: token ${after.token} granted at ${acquiredAt} while token ${before.token} was live until ${expiresAt ?? 'forever'} (${describeOp(after.claim)})`,
      );
    }
  }
  return violations;
}

/**
 * Invariants 3 and 5: every renew, checkpoint, fenced write and release the store accepted carried the grant
 * current at the store's clock: not expired, not released, not revoked, not superseded. A repeated release
 * is accepted only after the grant's own release.
 */
export function checkAcceptedOperations(history: RaceHistory): string[] {
  const violations: string[] = [];
  const stories = grantStories(history);
  stories.forEach((story, index) => {
    const successor = stories[index + 1] ?? null;
    let expiresAt = story.claim.outcome!.lease!.expiresAt;
    let released = false;
    for (const use of story.uses) {
      if (!okOf(use) || use.kind === 'claim' || use.kind === 'revoke') continue;
      const repeat = use.kind === 'release' && use.outcome!.alreadyReleased === true;
      const fail = (why: string) => violations.push(`${describeOp(use)} accepted ${why}`);
      if (repeat) {
        if (!released) fail('as a repeated release of a grant that was never released');
        continue;
      }
      if (released) fail('after its own release');
      const now = nowOf(use);
      if (expiresAt !== null && now >= expiresAt) fail(`at ${now}, at or after the grant expired at ${expiresAt}`);
      if (successor !== null && certainlyBefore(history, successor.claim, use)) fail(`after token ${successor.token} was granted`);
      for (const revoke of story.revokes) if (certainlyBefore(history, revoke, use)) fail('after the grant was revoked');
      if (use.kind === 'renew') expiresAt = use.outcome!.expiresAt ?? null;
      if (use.kind === 'release') released = true;
    }
  });
  return violations;
}

/** A revoke applies only to the current grant (not one already released or superseded) and burns exactly one token. */
export function checkRevokes(history: RaceHistory): string[] {
  const violations: string[] = [];
  const stories = grantStories(history);
  for (const revoke of history.ops.filter((op) => op.kind === 'revoke' && okOf(op))) {
    const token = revoke.outcome!.revoked!.token;
    const index = stories.findIndex((story) => story.token === token);
    const story = stories[index];
    if (story === undefined) {
      violations.push(`${describeOp(revoke)} revoked token ${token}, which was never granted`);
      continue;
    }
    if (revoke.outcome!.token !== token + 1n)
      violations.push(`${describeOp(revoke)} moved the token to ${revoke.outcome!.token}, not ${token + 1n}`);
    const successor = stories[index + 1];
    if (successor !== undefined && certainlyBefore(history, successor.claim, revoke))
      violations.push(`${describeOp(revoke)} revoked token ${token} after token ${successor.token} was granted`);
    const release = story.uses.find((use) => use.kind === 'release' && okOf(use) && use.outcome!.alreadyReleased === false);
    if (release !== undefined && certainlyBefore(history, release, revoke))
      violations.push(`${describeOp(revoke)} revoked token ${token} after its release`);
  }
  return violations;
}

const tokenOfEntry = (entry: string): bigint => BigInt(/:t(\d+):/.exec(entry)?.[1] ?? '-1');

/**
 * Invariants 3 and 4 on the ledger: it holds exactly the accepted writes (no refused write, not even partly;
 * no accepted write lost; none twice), in apply order where that is known, with non-decreasing tokens.
 */
export function checkLedger(history: RaceHistory, ledger: readonly string[]): string[] {
  const violations: string[] = [];
  const writes = history.ops.filter((op) => op.kind === 'write');
  const accepted = writes.filter(okOf);
  const acceptedEntries = new Set(accepted.map((op) => op.entry));
  if (new Set(ledger).size !== ledger.length) violations.push(`the ledger holds an entry twice: ${ledger.join(', ')}`);
  for (const entry of ledger)
    if (!acceptedEntries.has(entry)) violations.push(`the ledger holds ${entry}, a write that was refused or never made`);
  for (const op of accepted) if (!ledger.includes(op.entry!)) violations.push(`accepted write ${op.entry} is missing from the ledger`);
  if (history.exactOrder) {
    const applied = [...accepted].sort((a, b) => a.apply! - b.apply!).map((op) => op.entry);
    if (applied.join() !== ledger.join())
      violations.push(`ledger order ${ledger.join(', ')} differs from apply order ${applied.join(', ')}`);
  }
  for (let i = 1; i < ledger.length; i += 1) {
    if (tokenOfEntry(ledger[i]!) < tokenOfEntry(ledger[i - 1]!))
      violations.push(`ledger tokens go backwards: ${ledger[i - 1]} then ${ledger[i]}`);
  }
  return violations;
}

/** Whatever the operations returned is what the store holds at the end (invariant 6 for the last grant). */
export function checkFinalState(history: RaceHistory, final: StoreInspection): string[] {
  const violations: string[] = [];
  const stories = grantStories(history);
  const minted = history.ops
    .filter(okOf)
    .flatMap((op) => (op.kind === 'claim' ? [op.outcome!.lease!.token] : op.kind === 'revoke' ? [op.outcome!.token!] : []));
  const highest = minted.reduce((max, token) => (token > max ? token : max), 0n);
  if (minted.length > 0 && final.token !== highest)
    violations.push(`the store's token is ${final.token}, the highest minted was ${highest}`);
  const last = stories.at(-1);
  if (last === undefined) return violations;
  const released = last.uses.some((use) => use.kind === 'release' && okOf(use));
  const ended = released || last.revokes.length > 0;
  if (ended && final.grant !== null)
    violations.push(`token ${last.token} was released or revoked, yet the store still shows grant ${final.grant.token}`);
  if (!ended && final.grant?.token !== last.token)
    violations.push(
      `token ${last.token} never ended, yet the store shows ${final.grant === null ? 'no grant' : `grant ${final.grant.token}`}`,
    );
  if (!ended && final.grant !== null && final.grant.holder !== `w${last.claim.worker}`)
    violations.push(`grant ${last.token} belongs to w${last.claim.worker}, the store says ${final.grant.holder}`);
  return violations;
}

/** Each checker with the invariant it checks, as a failure report names it. */
const CHECKERS: readonly {
  readonly invariant: string;
  readonly check: (history: RaceHistory, ledger: readonly string[], final: StoreInspection) => string[];
}[] = [
  { invariant: 'the store clock never runs backwards', check: checkStoreClock },
  { invariant: 'invariant 2: tokens are never issued twice and grow in the order they are minted', check: checkTokens },
  { invariant: 'invariant 1: at most one live grant per key', check: checkSingleLiveGrant },
  { invariant: 'invariants 3 and 5: only the current grant renews, writes, checkpoints and releases', check: checkAcceptedOperations },
  { invariant: 'a revoke ends the current grant only and burns one token', check: checkRevokes },
  { invariant: 'invariants 3 and 4: the ledger holds exactly the accepted writes, in token order', check: checkLedger },
  {
    invariant: 'invariant 6: what the operations returned is what the store holds',
    check: (history, _ledger, final) => checkFinalState(history, final),
  },
];

/** Runs every checker; throws one error listing every violation under the invariant it breaks, and the history. */
export function assertRaceInvariants(history: RaceHistory, ledger: readonly string[], final: StoreInspection): void {
  const violations = CHECKERS.flatMap(({ invariant, check }) =>
    check(history, ledger, final).map((violation) => `[${invariant}] ${violation}`),
  );
  if (violations.length === 0) return;
  const ops = [...history.ops].sort((a, b) => (a.apply ?? a.complete) - (b.apply ?? b.complete)).map(describeOp);
  throw new Error(`race invariants violated:\n  ${violations.join('\n  ')}\nhistory:\n  ${ops.join('\n  ')}\nledger: ${ledger.join(', ')}`);
}
