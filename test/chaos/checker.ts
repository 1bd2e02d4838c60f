/**
 * The independent history checker. It knows nothing of the adapters: it reads the merged history of all
 * workers and faults plus a final read of the store, and reports every broken guarantee (see
 * RELIABILITY.md for the list of checks) together with the figures of the run. Pure.
 */
import { checkInheritance, checkSingleHolder, checkStaleAccepted, checkTokens, lostToFailover, type Violation } from './check-grants.js';
import { checkBadInput, checkGateOrder, checkLedger } from './check-ledgers.js';
import type { FinalKeyState, HistoryEvent } from './history.js';
import { assembleOps, msBetween, OpIndex } from './ops.js';

export type { Violation } from './check-grants.js';

/** How strict the liveness part of the check is. */
export interface CheckOptions {
  /**
   * A takeover slower than this (ms from a holder's death or pause to the next grant of its key) is a
   * violation of liveness; `null` only reports the latencies.
   */
  readonly takeoverBoundMs: number | null;
}

/** The figures of one run. */
export interface RunFigures {
  /** Worker operations (faults excluded). */
  readonly operations: number;
  readonly grants: number;
  /** Grants that took over from an expired or revoked grant. */
  readonly takeovers: number;
  /** Refused fenced operations (write, gate, checkpoint, renew, release) by reason. */
  readonly refusals: Readonly<Record<string, number>>;
  /** Operations whose outcome the worker could not know. */
  readonly unknown: number;
  readonly writesAcked: number;
  readonly unknownApplied: number;
  readonly lostToAmnesia: number;
  /** Acknowledged grants a failover made the store forget (by design, not violations). */
  readonly grantsLostToFailover: number;
  /** Acknowledged fenced and gated writes a failover lost (by design, not violations). */
  readonly writesLostToFailover: number;
  /** Grant pairs the single-holder check could compare on the store's clock. */
  readonly pairsChecked: number;
  /** Latency (ms) from a holder's death or pause to the next grant of its key. */
  readonly takeoverLatencies: readonly number[];
  readonly faults: Readonly<Record<string, number>>;
}

/** The verdict on one run: every violation, and the run's figures. */
export interface CheckReport {
  readonly ok: boolean;
  readonly violations: readonly Violation[];
  readonly figures: RunFigures;
}

const FAULT_PROC = 'nemesis';

/** Checks a history and the final store state. */
export function checkHistory(history: readonly HistoryEvent[], final: readonly FinalKeyState[], options: CheckOptions): CheckReport {
  const index = new OpIndex(assembleOps(history));
  const finalByKey = new Map(final.map((state) => [state.key, state]));
  const keys = [...new Set([...index.keys(), ...finalByKey.keys()])];
  const violations: Violation[] = [...checkBadInput(index)];
  let pairsChecked = 0;
  let unknownApplied = 0;
  let lostToAmnesia = 0;
  let grantsLostToFailover = 0;
  let writesLostToFailover = 0;
  for (const key of keys) {
    const state = finalByKey.get(key);
    const lost = lostToFailover(index, key, state);
    const writes = checkLedger(index, key, 'write', state?.ledger ?? []);
    const gated = checkLedger(index, key, 'gate', state?.gateLedger ?? []);
    const single = checkSingleHolder(index, key, lost);
    violations.push(
      ...checkTokens(index, key, state, lost),
      ...single.violations,
      ...checkStaleAccepted(index, key, writes.applied, lost),
      ...checkInheritance(index, key, state),
      ...writes.violations,
      ...gated.violations,
      ...checkGateOrder(index, key, gated.applied),
    );
    pairsChecked += single.pairsChecked;
    unknownApplied += writes.unknownApplied + gated.unknownApplied;
    lostToAmnesia += writes.lostToAmnesia + gated.lostToAmnesia;
    grantsLostToFailover += lost.size;
    writesLostToFailover += writes.lostToFailover + gated.lostToFailover;
  }
  const takeover = takeoverLatencies(index, options.takeoverBoundMs);
  violations.push(...takeover.violations);
  const figures = tally(index, {
    pairsChecked,
    unknownApplied,
    lostToAmnesia,
    grantsLostToFailover,
    writesLostToFailover,
    takeoverLatencies: takeover.latencies,
  });
  return { ok: violations.length === 0, violations, figures };
}

function tally(
  index: OpIndex,
  extra: Pick<
    RunFigures,
    'pairsChecked' | 'unknownApplied' | 'lostToAmnesia' | 'grantsLostToFailover' | 'writesLostToFailover' | 'takeoverLatencies'
  >,
): RunFigures {
  const refusals: Record<string, number> = {};
  const faults: Record<string, number> = {};
  let operations = 0;
  let grants = 0;
  let takeovers = 0;
  let unknown = 0;
  let writesAcked = 0;
  for (const op of index.all) {
    if (op.proc === FAULT_PROC) {
      const name = op.invoke.reason ?? op.op;
      faults[name] = (faults[name] ?? 0) + 1;
      continue;
    }
    operations += 1;
    if (op.status === 'info') unknown += 1;
    if (op.op === 'claim' && op.status === 'ok') {
      grants += 1;
      const previous = op.done?.reason;
      if (previous === 'expired' || previous === 'revoked') takeovers += 1;
    }
    if ((op.op === 'write' || op.op === 'gate') && op.status === 'ok') writesAcked += 1;
    if (op.status === 'fail' && ['write', 'gate', 'checkpoint', 'renew', 'release'].includes(op.op)) {
      const name = `${op.op}:${op.done?.reason ?? 'unknown'}`;
      refusals[name] = (refusals[name] ?? 0) + 1;
    }
  }
  return { operations, grants, takeovers, refusals, unknown, writesAcked, faults, ...extra };
}

/**
 * Takeover latency: for every kill or pause of a worker, each key it held (its latest grant of the key, not
 * released before the fault) and the first grant of that key to another worker after the fault.
 */
function takeoverLatencies(index: OpIndex, boundMs: number | null): { latencies: number[]; violations: Violation[] } {
  const latencies: number[] = [];
  const violations: Violation[] = [];
  const runEnd = index.all.reduce((latest, op) => (op.done !== null && op.end > latest ? op.end : latest), 0n);
  const faults = index.all.filter(
    (op) => op.proc === FAULT_PROC && (op.op === 'kill' || op.op === 'pause') && op.invoke.target !== undefined,
  );
  for (const fault of faults) {
    const victim = fault.invoke.target ?? '';
    for (const key of index.keys()) {
      const grants = index.grants(key);
      const held = grants.filter((grant) => grant.proc === victim && grant.end < fault.start).pop();
      if (held === undefined) continue;
      const released = index
        .of(key, 'release')
        .some((release) => release.token === held.token && release.status === 'ok' && release.end < fault.start);
      const superseded = grants.some((grant) => (grant.token ?? 0n) > (held.token ?? 0n) && grant.end < fault.start);
      if (released || superseded) continue;
      // NOTE: any newer grant ends the wait, the paused holder's own new claim after its grant expired included.
      const next = grants
        .filter((grant) => (grant.token ?? 0n) > (held.token ?? 0n) && grant.end > fault.start)
        .sort((a, b) => (a.end < b.end ? -1 : 1))[0];
      if (next === undefined) {
        if (boundMs !== null && msBetween(fault.start, runEnd) > boundMs) {
          violations.push({
            check: 'slow-takeover',
            key,
            message: `no takeover of ${key} within ${boundMs} ms after ${fault.op} of ${victim}`,
            ops: [fault, held],
          });
        }
        continue;
      }
      const latency = msBetween(fault.start, next.end);
      latencies.push(latency);
      // NOTE: the bound is on how long a worker that wants the key waits for it once the victim's grant has
      // run out, so it runs from the first claim of the key by another worker sent one TTL after the fault (a
      // dead or stopped holder renews nothing after it). A claim refused before that is right to be refused;
      // a key nobody asks for (the other workers killed, respawning or busy on other keys, as on a starved
      // 2-core machine) is not held up by the store.
      const ttlNs = BigInt(Math.max(0, (held.done?.expiresAt ?? 0) - (held.done?.acquiredAt ?? 0))) * 1_000_000n;
      const demand = index
        .of(key, 'claim')
        .filter((claim) => claim.proc !== victim && claim.start > fault.start + ttlNs)
        .sort((a, b) => (a.start < b.start ? -1 : 1))[0];
      const waited = msBetween(demand === undefined ? fault.start : demand.start, next.end);
      if (boundMs !== null && waited > boundMs) {
        violations.push({
          check: 'slow-takeover',
          key,
          message: `takeover of ${key} took ${waited.toFixed(0)} ms after the first claim that followed the ${fault.op} of ${victim} (bound ${boundMs} ms)`,
          ops: [fault, held, next],
        });
      }
    }
  }
  latencies.push(...freezeTakeovers(index), ...failoverTakeovers(index));
  return { latencies, violations };
}

/**
 * Takeover after a whole-server freeze: for each key whose latest grant before the freeze was still held
 * (not released, not superseded), the ms from the SIGCONT (the freeze's end) to the next grant of the key.
 * Its holder's TTL ran out on the store's clock during the freeze, so this is how fast a claim succeeds once
 * the server answers again. Reported, not bounded.
 */
function freezeTakeovers(index: OpIndex): number[] {
  const latencies: number[] = [];
  const freezes = index.all.filter((op) => op.proc === FAULT_PROC && op.invoke.reason === 'freeze' && op.done !== null);
  for (const freeze of freezes) {
    for (const key of index.keys()) {
      const grants = index.grants(key);
      const held = grants
        .filter((grant) => grant.end < freeze.start)
        .sort((a, b) => ((a.token ?? 0n) < (b.token ?? 0n) ? -1 : 1))
        .pop();
      if (held === undefined) continue;
      const released = index
        .of(key, 'release')
        .some((release) => release.token === held.token && release.status === 'ok' && release.end < freeze.start);
      if (released) continue;
      const next = grants
        .filter((grant) => (grant.token ?? 0n) > (held.token ?? 0n) && grant.end > freeze.end)
        .sort((a, b) => (a.end < b.end ? -1 : 1))[0];
      if (next !== undefined) latencies.push(msBetween(freeze.end, next.end));
    }
  }
  return latencies;
}

/**
 * Takeover after a failover: for the key whose master was killed (the fault's target), the ms from the kill
 * to the first grant of that key claimed after it (on the promoted replica). Reported, not bounded.
 */
function failoverTakeovers(index: OpIndex): number[] {
  const latencies: number[] = [];
  for (const failover of index.all.filter((op) => op.proc === FAULT_PROC && op.op === 'failover' && op.invoke.target !== undefined)) {
    const next = index
      .grants(failover.invoke.target ?? '')
      .filter((grant) => grant.start > failover.start)
      .sort((a, b) => (a.end < b.end ? -1 : 1))[0];
    if (next !== undefined) latencies.push(msBetween(failover.start, next.end));
  }
  return latencies;
}

/** The p-th percentile (0..100) of `values`, or `null` when empty. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? null;
}

/** One violation per line with its operations, for failure messages. */
export function formatViolations(violations: readonly Violation[], limit = 10): string {
  const lines = violations
    .slice(0, limit)
    .map(
      (v) =>
        `[${v.check}] ${v.key}: ${v.message}\n${v.ops.map((op) => `    ${JSON.stringify(op.invoke)}${op.done === null ? '' : `\n    ${JSON.stringify(op.done)}`}`).join('\n')}`,
    );
  if (violations.length > limit) lines.push(`... and ${violations.length - limit} more`);
  return lines.join('\n');
}
