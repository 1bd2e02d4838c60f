/**
 * Checks on grants and on what each grant was allowed to do: DESIGN.md invariants 1, 2, 3, 5 and 6 as they
 * show in a history. Pure; every function returns violations and never throws.
 */
import type { FinalKeyState } from './history.js';
import { CompletedGrants, describeOp, type Op, type OpIndex } from './ops.js';

/** A broken guarantee, with the operations that show it. */
export interface Violation {
  /** Which check fired (stable names, listed in RELIABILITY.md). */
  readonly check: string;
  readonly key: string;
  readonly message: string;
  readonly ops: readonly Op[];
}

const violation = (check: string, key: string, message: string, ops: readonly Op[]): Violation => ({ check, key, message, ops });

/** Whether some fault that makes the store forget or cut grants short overlaps `[from, to]`. */
export function faultBetween(index: OpIndex, key: string, kinds: readonly string[], from: bigint, to: bigint): boolean {
  return kinds.some((kind) => index.of(key, kind as Op['op']).some((fault) => fault.start <= to && fault.end >= from));
}

/**
 * The grants of `key` a failover made the store forget, by design (asynchronous replication: the promoted
 * replica never received them). An acknowledged grant is lost only when both hold: a failover ended after
 * the grant was invoked, and the store later showed no trace of it: the store's final token is below it, or a
 * grant that completed after that failover started, is itself on the surviving history (at or below the final
 * token) and names a predecessor (a key the new master knew), reports a predecessor older than it. Without a
 * failover nothing is lost, and the checks below treat every grant as kept.
 */
export function lostToFailover(index: OpIndex, key: string, final: FinalKeyState | undefined): Set<Op> {
  const lost = new Set<Op>();
  const failovers = index.of(key, 'failover');
  if (failovers.length === 0) return lost;
  const grants = index.grants(key);
  const finalToken = final === undefined ? null : BigInt(final.token);
  for (const grant of grants) {
    const token = grant.token ?? 0n;
    const forgotten = failovers.some(
      (failover) =>
        failover.end >= grant.start &&
        ((finalToken !== null && finalToken < token) ||
          grants.some(
            (next) =>
              (next.token ?? 0n) > token &&
              (finalToken === null || (next.token ?? 0n) <= finalToken) &&
              next.end > failover.start &&
              next.done?.previousToken !== undefined &&
              BigInt(next.done.previousToken) < token,
          )),
    );
    if (forgotten) lost.add(grant);
  }
  return lost;
}

/**
 * Invariant 2: tokens are unique per key, and a grant invoked after another completed has a larger token
 * (real-time order). Also: the store's final token is not below any token it granted.
 */
export function checkTokens(index: OpIndex, key: string, final: FinalKeyState | undefined, lost: ReadonlySet<Op> = new Set()): Violation[] {
  const found: Violation[] = [];
  const grants = index.grants(key);
  const byToken = new Map<bigint, Op>();
  for (const grant of grants) {
    const token = grant.token ?? 0n;
    const twin = byToken.get(token);
    if (twin !== undefined)
      found.push(
        violation('token-reused', key, `token ${token} granted twice: ${describeOp(twin)} and ${describeOp(grant)}`, [twin, grant]),
      );
    else byToken.set(token, grant);
  }
  const completed = new CompletedGrants(grants);
  for (const grant of grants) {
    const earlier = completed.newestBefore(grant.start);
    if (earlier !== null && (earlier.token ?? 0n) >= (grant.token ?? 0n)) {
      found.push(
        violation(
          'token-order',
          key,
          `${describeOp(grant)} was invoked after ${describeOp(earlier)} completed, yet its token is not larger`,
          [earlier, grant],
        ),
      );
    }
  }
  // NOTE: token-reused and token-order hold across failovers too (the clock floor); only a grant the store
  // forgot by design may stand above its final token.
  const kept = grants.filter((grant) => !lost.has(grant));
  if (final !== undefined && kept.length > 0) {
    const newest = kept.reduce((a, b) => ((b.token ?? 0n) > (a.token ?? 0n) ? b : a));
    const finalToken = BigInt(final.token);
    const forgotten = faultBetween(index, key, ['amnesia'], newest.start, 2n ** 80n);
    if (finalToken < (newest.token ?? 0n) && !forgotten) {
      found.push(
        violation('token-regressed', key, `the store's final token ${finalToken} is below granted ${describeOp(newest)}`, [newest]),
      );
    }
  }
  return found;
}

/** The latest expiry the history proves for grant `token` on `key` (claim or confirmed renew), or null. */
function knownExpiry(index: OpIndex, key: string, grant: Op): number | null {
  let expiry = grant.done?.expiresAt ?? null;
  if (expiry === null) return null;
  for (const renew of index.of(key, 'renew')) {
    if (renew.status !== 'ok' || renew.token !== grant.token) continue;
    const extended = renew.done?.expiresAt;
    if (typeof extended === 'number' && extended > expiry) expiry = extended;
  }
  return expiry;
}

/**
 * Invariant 1: at most one live grant per key at any instant of the store's clock. For consecutive known
 * grants p < n (by token), n must be granted at or after p's latest known expiry, unless p was released
 * or revoked, or a fault cut its life short (forced expiry, a store that forgot everything) in between.
 * Returns the violations and how many pairs could be checked.
 */
export function checkSingleHolder(
  index: OpIndex,
  key: string,
  lost: ReadonlySet<Op> = new Set(),
): { violations: Violation[]; pairsChecked: number } {
  const found: Violation[] = [];
  let pairsChecked = 0;
  const grants = index.grants(key).sort((a, b) => ((a.token ?? 0n) < (b.token ?? 0n) ? -1 : 1));
  for (let i = 1; i < grants.length; i += 1) {
    const previous = grants[i - 1] as Op;
    const next = grants[i] as Op;
    const ended = index
      .of(key, 'release')
      .some((release) => release.token === previous.token && release.status !== 'fail' && release.start <= next.end);
    // NOTE: a grant a failover forgot may overlap the next one, and one a discarded master made (a split brain)
    // the one before it: two workers believe they hold the key, by design.
    if (
      ended ||
      lost.has(previous) ||
      lost.has(next) ||
      faultBetween(index, key, ['revoke', 'force-expire', 'amnesia'], previous.start, next.end)
    )
      continue;
    const expiry = knownExpiry(index, key, previous);
    const acquiredAt = next.done?.acquiredAt;
    if (expiry === null || typeof acquiredAt !== 'number') continue;
    pairsChecked += 1;
    if (acquiredAt < expiry) {
      found.push(
        violation(
          'two-live-grants',
          key,
          `${describeOp(next)} was granted at store time ${acquiredAt}, before ${describeOp(previous)} expired at ${expiry} (${expiry - acquiredAt} ms overlap)`,
          [previous, next],
        ),
      );
    }
  }
  return { violations: found, pairsChecked };
}

/** Operations that act under a grant and must be refused once a newer grant exists. */
const FENCED_KINDS = ['renew', 'release', 'checkpoint', 'write'] as const;

/**
 * Invariants 3 and 5: an operation under grant t that the store accepted (ok, or a write found applied in
 * the ledger) must not have been invoked after a grant t' > t completed (real time), nor applied at a store
 * time at or after such a grant's acquiredAt (store clock), nor after its own grant was released, nor (for
 * ok outcomes with a store time) at or after its grant's latest known expiry.
 */
export function checkStaleAccepted(
  index: OpIndex,
  key: string,
  appliedWrites: ReadonlySet<string>,
  lost: ReadonlySet<Op> = new Set(),
): Violation[] {
  const found: Violation[] = [];
  // NOTE: a grant a failover forgot supersedes nothing in the store: the rolled-back grant before it is current
  // again there (until it expires or a newer grant is made above both), so its holder's writes may land.
  const grants = index.grants(key).filter((grant) => !lost.has(grant));
  const completed = new CompletedGrants(grants);
  const grantOf = new Map(grants.map((grant) => [grant.token, grant]));
  const lostTokens = new Set([...lost].map((grant) => grant.token));
  const releases = index.of(key, 'release').filter((release) => release.status === 'ok');
  const renewUnknown = new Set(
    index
      .of(key, 'renew')
      .filter((renew) => renew.status === 'info')
      .map((renew) => renew.token),
  );
  for (const kind of FENCED_KINDS) {
    for (const op of index.of(key, kind)) {
      const accepted = op.status === 'ok' || (kind === 'write' && appliedWrites.has(op.reqId));
      if (!accepted || op.token === null) continue;
      // NOTE: under a grant a failover forgot, an operation applied to the master that was discarded (a split
      // brain: the killed master back, empty, taking writes until it is made a replica) is lost with it; a
      // write of such a grant that is in the final store is checked like any other.
      if (lostTokens.has(op.token) && !(kind === 'write' && appliedWrites.has(op.reqId))) continue;
      const newer = completed.newestBefore(op.start);
      if (newer !== null && (newer.token ?? 0n) > op.token) {
        found.push(
          violation('stale-accepted', key, `${describeOp(op)} was accepted although ${describeOp(newer)} completed before it was invoked`, [
            newer,
            op,
          ]),
        );
        continue;
      }
      // NOTE: a release answered `alreadyReleased` (a re-delivery) took effect earlier, not at its reply's store time.
      const appliedAt = op.status === 'ok' && op.done?.alreadyReleased !== true ? op.done?.storeNow : undefined;
      if (typeof appliedAt === 'number') {
        const overtaken = grants.find(
          (grant) =>
            (grant.token ?? 0n) > (op.token ?? 0n) && typeof grant.done?.acquiredAt === 'number' && grant.done.acquiredAt < appliedAt,
        );
        if (overtaken !== undefined) {
          found.push(
            violation(
              'stale-accepted',
              key,
              `${describeOp(op)} applied at store time ${appliedAt}, after ${describeOp(overtaken)} was granted at ${overtaken.done?.acquiredAt}`,
              [overtaken, op],
            ),
          );
          continue;
        }
        const own = grantOf.get(op.token);
        const expiry = own === undefined ? null : knownExpiry(index, key, own);
        if (kind !== 'release' && expiry !== null && appliedAt >= expiry && !renewUnknown.has(op.token)) {
          found.push(
            violation(
              'expired-accepted',
              key,
              `${describeOp(op)} applied at store time ${appliedAt}, at or after its grant's expiry ${expiry}`,
              [op],
            ),
          );
          continue;
        }
      }
      if (kind === 'release') continue;
      const released = releases.find((release) => release.token === op.token && release.end < op.start);
      if (released !== undefined) {
        found.push(violation('released-accepted', key, `${describeOp(op)} was accepted after ${describeOp(released)}`, [released, op]));
      }
    }
  }
  return found;
}

/**
 * Invariant 6 for claims: what a grant reports about its predecessor is true. The previous ending and the
 * inherited checkpoint carry older tokens; the checkpoint was written by a checkpoint operation that was not
 * refused, with that token; and it is at least as new as every checkpoint acknowledged before the claim.
 */
export function checkInheritance(index: OpIndex, key: string, final: FinalKeyState | undefined): Violation[] {
  const found: Violation[] = [];
  const checkpoints = new Map(index.of(key, 'checkpoint').map((op) => [op.reqId, op]));
  const acked = index.of(key, 'checkpoint').filter((op) => op.status === 'ok');
  const verifyWritten = (id: string, token: string, by: Op | null, where: string): void => {
    const writer = checkpoints.get(id);
    const ops = by === null ? [] : [by];
    if (writer === undefined) found.push(violation('phantom-checkpoint', key, `${where} holds checkpoint ${id} that no worker wrote`, ops));
    else if (writer.status === 'fail')
      found.push(
        violation('refused-checkpoint-kept', key, `${where} holds checkpoint ${id} although ${describeOp(writer)} was refused`, [
          writer,
          ...ops,
        ]),
      );
    else if (writer.token?.toString() !== token)
      found.push(
        violation('checkpoint-token', key, `${where} stamps checkpoint ${id} with token ${token}, but ${describeOp(writer)} wrote it`, [
          writer,
          ...ops,
        ]),
      );
  };
  for (const grant of index.grants(key)) {
    const done = grant.done;
    if (done === null) continue;
    if (done.previousToken !== undefined && BigInt(done.previousToken) >= (grant.token ?? 0n)) {
      found.push(
        violation('inheritance-order', key, `${describeOp(grant)} reports a previous grant with token ${done.previousToken}`, [grant]),
      );
    }
    const inheritedToken = done.checkpointToken === undefined ? 0n : BigInt(done.checkpointToken);
    const newestAcked = acked
      .filter((op) => op.end < grant.start)
      .reduce<Op | null>((a, b) => (a === null || (b.token ?? 0n) > (a.token ?? 0n) ? b : a), null);
    const forgotten = newestAcked !== null && faultBetween(index, key, ['amnesia', 'failover'], newestAcked.start, grant.end);
    if (newestAcked !== null && !forgotten && inheritedToken < (newestAcked.token ?? 0n)) {
      const what = done.checkpointToken === undefined ? 'no checkpoint' : `checkpoint token ${done.checkpointToken}`;
      found.push(
        violation(
          'acked-checkpoint-lost',
          key,
          `${describeOp(grant)} inherits ${what}, older than acknowledged ${describeOp(newestAcked)}`,
          [newestAcked, grant],
        ),
      );
    }
    if (done.checkpointId === undefined || done.checkpointToken === undefined) continue;
    if (inheritedToken >= (grant.token ?? 0n)) {
      found.push(
        violation('inheritance-order', key, `${describeOp(grant)} inherits a checkpoint stamped with token ${done.checkpointToken}`, [
          grant,
        ]),
      );
    }
    verifyWritten(done.checkpointId, done.checkpointToken, grant, describeOp(grant));
  }
  if (final?.checkpoint !== null && final?.checkpoint !== undefined)
    verifyWritten(final.checkpoint.id, final.checkpoint.token, null, 'the final store state');
  return found;
}
