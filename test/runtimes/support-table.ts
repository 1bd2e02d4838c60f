/**
 * The README's "Runtimes" table as data: for each runtime of test/support/runtimes.ts, what runs there.
 * runtimes.test.ts checks that the README shows exactly this table, and each runtime's tests assert their
 * cell: a `yes` passes there, a `no` fails there the way the README says.
 */
import { RUNTIMES, type Runtime } from '../support/runtimes.js';

export type Cell = 'yes' | 'no';

/** One row: what it is (the README's words) and its cell per runtime name. */
export interface Row {
  readonly what: string;
  readonly cells: Readonly<Record<string, Cell>>;
}

const everywhere = (): Record<string, Cell> => Object.fromEntries(RUNTIMES.map((runtime) => [runtime.name, 'yes']));
const butNode20 = (): Record<string, Cell> => ({ ...everywhere(), 'Node 20': 'no' });

/** The rows, in the README's order. */
export const SUPPORT = {
  package: { what: 'The packed package: every entry through `import` and `require` (smoke test)', cells: everywhere() },
  memory: { what: 'Memory store: conformance, model and race suites, planted bugs caught', cells: everywhere() },
  pg: { what: 'PostgreSQL with `pg`: quick start', cells: everywhere() },
  postgresjs: { what: 'PostgreSQL with postgres.js: quick start', cells: everywhere() },
  ioredis: { what: 'Redis with ioredis: quick start', cells: everywhere() },
  nodeRedis: { what: 'Redis with node-redis 5: quick start', cells: everywhere() },
  frozen: {
    what: 'A worker frozen (SIGSTOP) past its TTL while another took over: its write refused after the thaw (Redis)',
    cells: everywhere(),
  },
  sqliteQuickStart: { what: 'SQLite with `node:sqlite`: quick start', cells: butNode20() },
  sqliteSuites: { what: 'SQLite with `node:sqlite`: conformance, model and race suites', cells: butNode20() },
  tracingChannel: { what: '`node:diagnostics_channel` TracingChannel (events, `leasefence/otel`)', cells: everywhere() },
  asyncLocalStorage: { what: '`AsyncLocalStorage` across `await` (Postgres fenced transactions)', cells: everywhere() },
  abortSignalAny: { what: '`AbortSignal.any` (leasefence does not use it)', cells: everywhere() },
  nodeSqlite: { what: '`node:sqlite`', cells: butNode20() },
  tcp: { what: "TCP sockets (`node:net`): what the server stores' clients need", cells: everywhere() },
} as const satisfies Record<string, Row>;

export type RowName = keyof typeof SUPPORT;

/** The cell of `row` for `runtime`. */
export function cellOf(row: RowName, runtime: Runtime): Cell {
  const cell = (SUPPORT[row].cells as Readonly<Record<string, Cell>>)[runtime.name];
  if (cell === undefined) throw new Error(`support-table.ts: no cell for ${runtime.name} in ${row}`);
  return cell;
}

/** The table as the README shows it (Markdown), with each runtime's pinned version in its heading. */
export function supportTableMarkdown(): string {
  const heading = `| | ${RUNTIMES.map((runtime) => `${runtime.name} (${runtime.version})`).join(' | ')} |`;
  const rule = `| --- | ${RUNTIMES.map(() => ':---:').join(' | ')} |`;
  const rows = Object.values(SUPPORT).map(
    (row: Row) => `| ${row.what} | ${RUNTIMES.map((runtime) => row.cells[runtime.name]).join(' | ')} |`,
  );
  return [heading, rule, ...rows].join('\n');
}
