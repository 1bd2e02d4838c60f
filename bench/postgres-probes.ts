/**
 * What a Postgres benchmark measurement cost, besides its throughput, in numbers that depend on machine
 * load far less than throughput does:
 * - the server's execution and planning time per statement (`pg_stat_statements`, loaded by the bench's own
 *   cluster with `track = all`, so a plpgsql function's inner statements are listed too, and
 *   `track_planning`), with shared buffers hit and WAL bytes per statement (what EXPLAIN (ANALYZE, BUFFERS,
 *   WAL) reports for one execution, averaged over all of them);
 * - the CPU time the server backends of the measured connections ran (`se.sum_exec_runtime` of
 *   `/proc/<pid>/sched`, nanosecond resolution; not available when the server runs on another host);
 * - this process's CPU time (`process.cpuUsage()`: the library, the driver, syscalls).
 */
import { readFileSync } from 'node:fs';
import type pg from 'pg';

/** The server settings the probes need (to pass to startPostgres). */
export const PROBE_SETTINGS: Readonly<Record<string, string>> = {
  shared_preload_libraries: 'pg_stat_statements',
  'pg_stat_statements.track': 'all',
  'pg_stat_statements.track_planning': 'on',
};

/** One statement text's share of a measurement, per call. */
export interface StatementCost {
  readonly query: string;
  readonly toplevel: boolean;
  readonly calls: number;
  readonly execUs: number;
  readonly planUs: number;
  readonly sharedHit: number;
  readonly walBytes: number;
}

/** The cost of one measurement, per operation (one claim + release cycle, one fenced write). */
export interface Cost {
  /** Top-level statements the server ran per operation. */
  readonly statements: number;
  /** Server execution time per top-level statement, µs (pg_stat_statements mean_exec_time). */
  readonly execUsPerStatement: number;
  /** Server planning time per top-level statement, µs (0 when the statement was prepared with a generic plan). */
  readonly planUsPerStatement: number;
  /** Server execution + planning time per operation, µs. */
  readonly serverUs: number;
  /** CPU time of the measured backends per operation, µs (NaN when /proc is not readable). */
  readonly backendCpuUs: number;
  /** This process's CPU time per operation, µs. */
  readonly clientCpuUs: number;
  /** WAL bytes per operation. */
  readonly walBytes: number;
  /** Shared buffers hit per operation. */
  readonly sharedHit: number;
  /** Every statement text the measurement ran, top-level and nested. */
  readonly perStatement: readonly StatementCost[];
}

/** Nanoseconds a process has run on a CPU, from `/proc/<pid>/sched` (ms with µs decimals). */
export function runtimeNs(pid: number): number {
  try {
    const match = /se\.sum_exec_runtime\s*:\s*([0-9.]+)/.exec(readFileSync(`/proc/${pid}/sched`, 'utf8'));
    return match === null ? Number.NaN : Number(match[1]) * 1e6;
  } catch {
    return Number.NaN;
  }
}

const STATEMENTS_SQL = `SELECT query, toplevel, calls::float8 AS calls, total_exec_time AS exec_ms, total_plan_time AS plan_ms,
  shared_blks_hit::float8 AS hit, wal_bytes::float8 AS wal
FROM pg_stat_statements WHERE calls > 0 AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_backend_pid%' ORDER BY toplevel DESC, calls DESC`;

interface StatementRow {
  query: string;
  toplevel: boolean;
  calls: number;
  exec_ms: number;
  plan_ms: number;
  hit: number;
  wal: number;
}

/** Starts probing: resets the statistics and snapshots CPU counters; `finish(operations)` returns the cost. */
export async function startProbe(admin: pg.Client, backendPids: readonly number[]): Promise<{ finish(operations: number): Promise<Cost> }> {
  await admin.query('SELECT pg_stat_statements_reset()');
  const backendBefore = backendPids.reduce((sum, pid) => sum + runtimeNs(pid), 0);
  const clientBefore = process.cpuUsage();
  return {
    async finish(operations) {
      const client = process.cpuUsage(clientBefore);
      const backendNs = backendPids.reduce((sum, pid) => sum + runtimeNs(pid), 0) - backendBefore;
      const rows = (await admin.query<StatementRow>(STATEMENTS_SQL)).rows;
      const top = rows.filter((row) => row.toplevel);
      const sum = (pick: (row: StatementRow) => number): number => top.reduce((total, row) => total + pick(row), 0);
      const calls = sum((row) => row.calls);
      return {
        statements: calls / operations,
        execUsPerStatement: (sum((row) => row.exec_ms) * 1000) / calls,
        planUsPerStatement: (sum((row) => row.plan_ms) * 1000) / calls,
        serverUs: (sum((row) => row.exec_ms + row.plan_ms) * 1000) / operations,
        backendCpuUs: backendNs / 1000 / operations,
        clientCpuUs: (client.user + client.system) / operations,
        walBytes: sum((row) => row.wal) / operations,
        sharedHit: sum((row) => row.hit) / operations,
        perStatement: rows.map((row) => ({
          query: row.query.replace(/\s+/g, ' ').trim(),
          toplevel: row.toplevel,
          calls: row.calls,
          execUs: (row.exec_ms * 1000) / row.calls,
          planUs: (row.plan_ms * 1000) / row.calls,
          sharedHit: row.hit / row.calls,
          walBytes: row.wal / row.calls,
        })),
      };
    },
  };
}

/** Updates and HOT updates (no index entry written) of a table so far. */
export async function hotUpdates(admin: pg.Client, table: string): Promise<{ updates: number; hot: number }> {
  // NOTE: backends flush their table counters when idle for a second; wait for that before reading.
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  const { rows } = await admin.query<{ upd: string; hot: string }>(
    'SELECT n_tup_upd::text AS upd, n_tup_hot_upd::text AS hot FROM pg_stat_user_tables WHERE relname = $1',
    [table],
  );
  return { updates: Number(rows[0]?.upd ?? 0), hot: Number(rows[0]?.hot ?? 0) };
}
