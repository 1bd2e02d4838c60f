/**
 * The summary table printed after every chaos run: one row per store and scenario.
 */
import { percentile } from './checker.js';
import type { RunResult } from './run.js';

interface Row {
  store: string;
  scenario: string;
  runs: number;
  seconds: number;
  operations: number;
  grants: number;
  takeovers: number;
  refusals: Record<string, number>;
  faults: Record<string, number>;
  diedInWrite: { died: number; applied: number };
  unknown: number;
  unknownApplied: number;
  lostToAmnesia: number;
  lostToFailover: { grants: number; writes: number };
  latencies: number[];
  kleppmann: { rounds: number; refused: number; accepted: number; unknown: number };
  violations: number;
  crashes: number;
  driverCrashes: number;
  seeds: number[];
}

/** Stale writes refused: fenced writes, gated writes and checkpoints, by reason. */
function staleRefusals(refusals: Readonly<Record<string, number>>): Record<string, number> {
  const byReason: Record<string, number> = {};
  for (const [name, count] of Object.entries(refusals)) {
    const [op, reason] = name.split(':');
    // NOTE: `unavailable` is a request that never reached the store, not a refusal by the fence.
    if ((op !== 'write' && op !== 'gate' && op !== 'checkpoint') || reason === 'unavailable') continue;
    byReason[reason ?? '?'] = (byReason[reason ?? '?'] ?? 0) + count;
  }
  return byReason;
}

/** Aggregates results per store and scenario (a long run repeats each scenario). */
export function summarize(results: readonly RunResult[]): Row[] {
  const rows = new Map<string, Row>();
  for (const result of results) {
    const id = `${result.store}\u0000${result.scenario}${result.variant === null ? '' : `[${result.variant}]`}`;
    const row = rows.get(id) ?? {
      store: result.store,
      scenario: result.scenario + (result.variant === null ? '' : ` [${result.variant}]`),
      runs: 0,
      seconds: 0,
      operations: 0,
      grants: 0,
      takeovers: 0,
      refusals: {},
      faults: {},
      diedInWrite: { died: 0, applied: 0 },
      unknown: 0,
      unknownApplied: 0,
      lostToAmnesia: 0,
      lostToFailover: { grants: 0, writes: 0 },
      latencies: [],
      kleppmann: { rounds: 0, refused: 0, accepted: 0, unknown: 0 },
      violations: 0,
      crashes: 0,
      driverCrashes: 0,
      seeds: [],
    };
    const figures = result.report.figures;
    row.runs += 1;
    row.seconds += result.durationMs / 1000;
    row.operations += figures.operations;
    row.grants += figures.grants;
    row.takeovers += figures.takeovers;
    for (const [reason, count] of Object.entries(staleRefusals(figures.refusals)))
      row.refusals[reason] = (row.refusals[reason] ?? 0) + count;
    for (const [fault, count] of Object.entries(figures.faults)) row.faults[fault] = (row.faults[fault] ?? 0) + count;
    row.diedInWrite.died += result.diedInWrite.died;
    row.diedInWrite.applied += result.diedInWrite.applied;
    row.unknown += figures.unknown;
    row.unknownApplied += figures.unknownApplied;
    row.lostToAmnesia += figures.lostToAmnesia;
    row.lostToFailover.grants += figures.grantsLostToFailover;
    row.lostToFailover.writes += figures.writesLostToFailover;
    row.latencies.push(...figures.takeoverLatencies);
    row.kleppmann.rounds += result.kleppmann.rounds;
    row.kleppmann.refused += result.kleppmann.refused;
    row.kleppmann.accepted += result.kleppmann.accepted;
    row.kleppmann.unknown += result.kleppmann.unknown;
    row.violations += result.report.violations.length;
    row.crashes += result.crashes.length;
    row.driverCrashes += result.driverCrashes.length;
    row.seeds.push(result.seed);
    rows.set(id, row);
  }
  return [...rows.values()];
}

function kleppmannCell(k: Row['kleppmann']): string {
  if (k.rounds === 0) return '-';
  return `${k.refused}/${k.rounds} refused${k.accepted > 0 ? `, ${k.accepted} ACCEPTED` : ''}${k.unknown > 0 ? `, ${k.unknown} unknown` : ''}`;
}

const ms = (value: number | null): string => (value === null ? '-' : `${Math.round(value)}`);

/** The table as text. */
export function formatSummary(results: readonly RunResult[]): string {
  const header = [
    'store',
    'scenario',
    'runs',
    's',
    'ops',
    'grants',
    'takeovers',
    'faults (by kind)',
    'killed in write (applied)',
    'stale writes refused (by reason)',
    'unknown (applied)',
    'lost to amnesia',
    'lost to failover (grants/writes)',
    'takeover p50/p99 ms',
    'kleppmann',
    'violations',
    'crashes (driver bug)',
    'seed',
  ];
  const lines = summarize(results).map((row) => [
    row.store,
    row.scenario,
    String(row.runs),
    row.seconds.toFixed(0),
    String(row.operations),
    String(row.grants),
    String(row.takeovers),
    Object.entries(row.faults)
      .sort((a, b) => b[1] - a[1])
      .map(([fault, count]) => `${fault} ${count}`)
      .join(', ') || '-',
    row.diedInWrite.died === 0 ? '-' : `${row.diedInWrite.died} (${row.diedInWrite.applied})`,
    Object.entries(row.refusals)
      .sort((a, b) => b[1] - a[1])
      .map(([reason, count]) => `${reason} ${count}`)
      .join(', ') || '-',
    `${row.unknown} (${row.unknownApplied})`,
    String(row.lostToAmnesia),
    row.lostToFailover.grants + row.lostToFailover.writes === 0 ? '-' : `${row.lostToFailover.grants}/${row.lostToFailover.writes}`,
    `${ms(percentile(row.latencies, 50))}/${ms(percentile(row.latencies, 99))}`,
    kleppmannCell(row.kleppmann),
    String(row.violations),
    `${row.crashes} (${row.driverCrashes})`,
    row.seeds.length === 1 ? String(row.seeds[0]) : `${row.seeds[0]}..(${row.seeds.length})`,
  ]);
  const table = [header, ...lines];
  const widths = header.map((_, column) => Math.max(...table.map((line) => (line[column] ?? '').length)));
  const render = (line: string[]): string => `| ${line.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(' | ')} |`;
  return [render(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(render)].join('\n');
}
