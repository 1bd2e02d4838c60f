/**
 * Checks on what the store finally holds (Jepsen's set-full, per key): every acknowledged write is there,
 * nothing refused or unknown-to-anyone is there, no request is applied twice, and the writes accepted for a
 * key carry non-decreasing tokens (DESIGN.md invariant 4). Pure.
 */
import { faultBetween, type Violation } from './check-grants.js';
import type { LedgerEntry } from './history.js';
import { describeOp, type Op, type OpIndex } from './ops.js';

/** What a ledger check found besides violations. */
export interface LedgerTally {
  readonly violations: Violation[];
  /** Request ids found applied (including writes whose outcome was unknown to the worker). */
  readonly applied: Set<string>;
  /** Acknowledged writes missing because the store forgot its data (a restart without persistence). */
  readonly lostToAmnesia: number;
  /** Acknowledged writes missing after a failover to a replica that never received them (by design). */
  readonly lostToFailover: number;
  /** Writes with an unknown outcome that turned out applied / not applied. */
  readonly unknownApplied: number;
  readonly unknownDropped: number;
}

/**
 * Checks one ledger (the fenced-write ledger, kind `write`, or the token gate's, kind `gate`) of `key`
 * against the history's operations of that kind.
 */
export function checkLedger(index: OpIndex, key: string, kind: 'write' | 'gate', ledger: readonly LedgerEntry[]): LedgerTally {
  const found: Violation[] = [];
  const label = kind === 'write' ? 'fenced-write ledger' : 'token-gate ledger';
  const ops = new Map<string, Op>(index.of(key, kind).map((op) => [op.reqId, op]));
  const seen = new Map<string, number>();
  const applied = new Set<string>();
  let unknownApplied = 0;
  ledger.forEach((entry, position) => {
    const op = ops.get(entry.reqId);
    const first = seen.get(entry.reqId);
    if (first !== undefined) {
      found.push({
        check: 'duplicate-application',
        key,
        message: `request ${entry.reqId} appears twice in the ${label} (positions ${first} and ${position})`,
        ops: op === undefined ? [] : [op],
      });
      return;
    }
    seen.set(entry.reqId, position);
    if (op === undefined) {
      found.push({
        check: 'phantom-write',
        key,
        message: `the ${label} holds ${entry.reqId} (token ${entry.token}) that no worker sent`,
        ops: [],
      });
      return;
    }
    applied.add(entry.reqId);
    if (op.status === 'fail')
      found.push({ check: 'refused-write-applied', key, message: `${describeOp(op)} was refused, yet it is in the ${label}`, ops: [op] });
    if (op.status === 'info') unknownApplied += 1;
    if (op.token !== null && op.token.toString() !== entry.token) {
      found.push({ check: 'ledger-token-mismatch', key, message: `${describeOp(op)} is stored with token ${entry.token}`, ops: [op] });
    }
  });
  let lostToAmnesia = 0;
  let lostToFailover = 0;
  let unknownDropped = 0;
  for (const op of ops.values()) {
    if (applied.has(op.reqId)) continue;
    if (op.status === 'info') unknownDropped += 1;
    if (op.status !== 'ok') continue;
    if (faultBetween(index, key, ['amnesia'], op.start, 2n ** 80n)) lostToAmnesia += 1;
    else if (faultBetween(index, key, ['failover'], op.start, 2n ** 80n)) lostToFailover += 1;
    else
      found.push({ check: 'acked-write-lost', key, message: `${describeOp(op)} was acknowledged but is not in the ${label}`, ops: [op] });
  }
  for (let i = 1; i < ledger.length; i += 1) {
    const before = ledger[i - 1] as LedgerEntry;
    const after = ledger[i] as LedgerEntry;
    if (BigInt(after.token) < BigInt(before.token)) {
      const pair = [ops.get(before.reqId), ops.get(after.reqId)].filter((op): op is Op => op !== undefined);
      found.push({
        check: 'ledger-order',
        key,
        message: `the ${label} applied ${after.reqId} (token ${after.token}) after ${before.reqId} (token ${before.token})`,
        ops: pair,
      });
    }
  }
  return { violations: found, applied, lostToAmnesia, lostToFailover, unknownApplied, unknownDropped };
}

/**
 * The token gate's rule in real time: a gated write with token t must not be accepted when it was invoked
 * after a gated write with a larger token to the same resource was acknowledged.
 */
export function checkGateOrder(index: OpIndex, key: string, applied: ReadonlySet<string>): Violation[] {
  const found: Violation[] = [];
  const gated = index.of(key, 'gate').filter((op) => op.token !== null);
  // NOTE: a gate write a failover lost (acknowledged, not in the store, a failover after it) raised nothing
  // the gate still knows; one that survived binds the gate for good.
  const acked = gated
    .filter((op) => op.status === 'ok' && (applied.has(op.reqId) || !faultBetween(index, key, ['failover'], op.start, 2n ** 80n)))
    .sort((a, b) => (a.end < b.end ? -1 : 1));
  for (const op of gated) {
    if (op.status !== 'ok' && !applied.has(op.reqId)) continue;
    // NOTE: a gate write accepted by a master a failover then discarded is lost with it (counted in checkLedger).
    if (!applied.has(op.reqId) && faultBetween(index, key, ['failover'], op.start, 2n ** 80n)) continue;
    const newer = acked.find((other) => other.end < op.start && (other.token ?? 0n) > (op.token ?? 0n));
    if (newer !== undefined) {
      found.push({
        check: 'gate-stale-accepted',
        key,
        message: `${describeOp(op)} passed the token gate after ${describeOp(newer)} had written`,
        ops: [newer, op],
      });
    }
  }
  return found;
}

/** Invariant 7: bad input is refused before any I/O. */
export function checkBadInput(index: OpIndex): Violation[] {
  return index.all
    .filter((op) => op.op === 'bad-input' && (op.status !== 'fail' || (op.done?.storeCalls ?? 0) !== 0))
    .map((op) => ({
      check: 'bad-input-reached-store',
      key: op.key,
      message: `${describeOp(op)}: bad input ${op.invoke.reason ?? ''} was ${op.status === 'fail' ? `refused after ${op.done?.storeCalls} store calls` : 'not refused'}`,
      ops: [op],
    }));
}
