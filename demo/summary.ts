/**
 * What the fleet did, counted as it happens, and the printed summary: grants, takeovers, recoveries,
 * stale operations refused (by reason), example refusal lines, and the final check.
 */
import { describeRefusal, GateRefusedError, type FenceRefusal, type GateRefusal, type Lease, type LeaseError } from '../src/index.js';
import type { CheckLine } from './ledger.js';

type Counts = Map<string, number>;
const bump = (counts: Counts, name: string, by = 1): void => void counts.set(name, (counts.get(name) ?? 0) + by);

/** Formats simulated milliseconds as `mm:ss.s`. */
export function clockLabel(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  const seconds = (ms % 60_000) / 1000;
  return `${String(minutes).padStart(2, '0')}:${seconds.toFixed(1).padStart(4, '0')}`;
}

/** A refusal in one line: which condition failed, with what was expected and found. */
export const refusalLine = (refusal: FenceRefusal | GateRefusal): string =>
  'resource' in refusal ? new GateRefusedError(refusal).message : describeRefusal(refusal);

/** Counters and the timeline of notable events. */
export class Tally {
  /** Grants by how the previous grant ended (`first`: the key's first grant). */
  readonly grants: Counts = new Map();
  readonly claimsRefused: Counts = new Map();
  /** Inherited checkpoints: `resume` or `discard`. */
  readonly recoveries: Counts = new Map();
  readonly faults: Counts = new Map();
  /** withLease abort signals, by reason. */
  readonly aborts: Counts = new Map();
  /** Refused operations by reason, then by operation. */
  readonly refusals: Map<string, Counts> = new Map();
  /** The first refusal line seen for each reason. */
  readonly examples: Map<string, string> = new Map();
  readonly timeline: string[] = [];

  constructor(private readonly elapsed: () => number) {}

  /** Adds a line to the timeline, stamped with simulated time. */
  log(line: string): void {
    this.timeline.push(`${clockLabel(this.elapsed())}  ${line}`);
  }

  granted(lease: Lease): void {
    const { previous } = lease;
    bump(this.grants, previous?.kind ?? 'first');
    const was = previous === null ? 'first grant' : `after ${previous.holder}'s token ${previous.token} ${previous.kind}`;
    this.log(`${lease.holder} claimed ${lease.key}: token ${lease.token} (run ${lease.runId}), ${was}`);
  }

  claimRefused(outcome: { readonly reason: string; readonly key: string }, holder: string): void {
    bump(this.claimsRefused, outcome.reason);
    if (outcome.reason === 'recovery-required') this.log(`${holder} claim of ${outcome.key} refused: recovery-required`);
  }

  recovered(lease: Lease, action: 'resume' | 'discard', what: string): void {
    bump(this.recoveries, action);
    this.log(
      `${lease.holder} ${action === 'resume' ? 'resumed' : 'discarded'} the checkpoint of token ${lease.inherited?.token} on ${lease.key}: ${what}`,
    );
  }

  fault(kind: string, line: string): void {
    bump(this.faults, kind);
    this.log(`FAULT ${line}`);
  }

  /** `withLease` lost its lease: its background renew was refused (or unconfirmed) and the signal fired. */
  aborted(holder: string, error: LeaseError): void {
    const refusal = 'refusal' in error ? (error.refusal as FenceRefusal) : null;
    bump(this.aborts, refusal?.reason ?? error.code);
    if (refusal !== null) this.refused('withLease renew', refusal, holder);
    this.log(`${holder}'s withLease signal aborted, so it stopped before its next write`);
  }

  refused(operation: string, refusal: FenceRefusal | GateRefusal, holder: string): void {
    const gated = 'resource' in refusal;
    const counts = this.refusals.get(refusal.reason) ?? new Map<string, number>();
    bump(counts, operation);
    this.refusals.set(refusal.reason, counts);
    if (!this.examples.has(refusal.reason)) this.examples.set(refusal.reason, refusalLine(refusal));
    this.log(
      `REFUSED ${operation} by ${holder} (token ${refusal.expected.token}) on ${gated ? refusal.resource : refusal.key}: ${refusal.reason}`,
    );
  }
}

const total = (counts: Counts): number => [...counts.values()].reduce((sum, n) => sum + n, 0);
const row = (label: string, value: number | string, note = ''): string =>
  `  ${label.padEnd(34)} ${String(value).padStart(4)}${note === '' ? '' : `   ${note}`}`;
const list = (counts: Counts): string => [...counts.entries()].map(([name, n]) => `${name} ${n}`).join(', ');

/** What the summary prints besides the tally. */
export interface SummaryInput {
  readonly seed: number;
  readonly header: string;
  readonly jobs: readonly string[];
  readonly check: readonly CheckLine[];
}

/** Prints the summary; returns whether the final check passed. */
export function printSummary(tally: Tally, input: SummaryInput, print: (line: string) => void = console.log): boolean {
  print(input.header);
  print('');
  print('Timeline');
  for (const line of tally.timeline) print(`  ${line}`);
  print('');
  print('Jobs');
  for (const line of input.jobs) print(`  ${line}`);
  print('');
  print('Leases');
  print(row('grants', total(tally.grants)));
  print(row('  first grant of a key', tally.grants.get('first') ?? 0));
  print(row('  after a release', tally.grants.get('released') ?? 0));
  print(row('  takeovers after expiry', tally.grants.get('expired') ?? 0));
  print(row('  takeovers after revoke', tally.grants.get('revoked') ?? 0));
  print(row('claims refused', total(tally.claimsRefused), list(tally.claimsRefused)));
  print(row('inherited checkpoints resumed', tally.recoveries.get('resume') ?? 0));
  print(row('inherited checkpoints discarded', tally.recoveries.get('discard') ?? 0));
  print(row('faults injected', total(tally.faults), list(tally.faults)));
  print(row('withLease abort signals', total(tally.aborts), list(tally.aborts)));
  print('');
  print('Stale operations refused (nothing applied)');
  const reasons = [...tally.refusals.entries()].sort(([a], [b]) => a.localeCompare(b));
  if (reasons.length === 0) print('  none');
  for (const [reason, byOperation] of reasons) print(row(reason, total(byOperation), list(byOperation)));
  print('');
  print('Example refusals (one per reason)');
  for (const [, line] of [...tally.examples.entries()].sort(([a], [b]) => a.localeCompare(b))) print(`  ${line}`);
  print('');
  const passed = input.check.every((line) => line.ok);
  print(`FINAL CHECK: ${passed ? 'PASS' : 'FAIL'}`);
  for (const line of input.check) print(`  ${line.ok ? 'ok  ' : 'FAIL'} ${line.text}`);
  print(
    passed
      ? 'The protected data equals exactly the accepted writes, in token order; no refused write landed.'
      : 'The protected data does NOT equal the accepted writes in token order.',
  );
  print(`(seed ${input.seed}: replay with npm run demo -- --seed ${input.seed})`);
  return passed;
}
