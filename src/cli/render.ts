/**
 * How the CLI shows leases: table cells with relative times for people, JSON (tokens as decimal
 * strings, times as epoch ms of the store's clock) for scripts. Keys, holders, run ids, reasons, `by`
 * and resources are caller text: tables escape every cell, the other views escape them with `printable`,
 * JSON with its own `\uXXXX` escapes.
 */
import { printable } from '../printable.js';
import type { Ending } from '../fence/types.js';
import type { LeaseInspection } from '../leases-types.js';
import type { ListedLease } from '../operator.js';
import type { GateRecord } from '../fence/operations.js';
import { formatDuration, formatRelative } from './durations.js';
import { formatTable } from './table.js';

/**
 * The characters `printable` escapes that `JSON.stringify` leaves raw (it escapes only U+0000-U+001F): DEL,
 * the C1 controls (U+009B is CSI), the line separators and the bidi overrides.
 */
const RAW_IN_JSON = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** JSON text with bigints as decimal strings, indented by `indent` spaces (0: one line), safe for a terminal. */
export function toJson(value: unknown, indent = 2): string {
  const text = JSON.stringify(value, (_, field: unknown) => (typeof field === 'bigint' ? field.toString() : field), indent);
  // NOTE: outside strings JSON text is ASCII, so these occur only inside strings, where `\uXXXX` is the same character.
  return text.replace(RAW_IN_JSON, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const runOf = (runId: string | null): string => (runId === null ? '' : `, run ${runId}`);

/** `held 6 h by ramp-cron, run r5`, or `-` when nothing is held. */
export function describeHolder(lease: Pick<ListedLease, 'grant' | 'now'>): string {
  const { grant, now } = lease;
  return grant === null ? '-' : `held ${formatDuration(now - grant.acquiredAt)} by ${grant.holder}${runOf(grant.runId)}`;
}

/** `expires in 12 s`, `expired 3 s ago`, `never`, or `-` when nothing is held. */
export function describeExpiry(lease: Pick<ListedLease, 'grant' | 'now'>): string {
  const { grant, now } = lease;
  if (grant === null) return '-';
  if (grant.expiresAt === null) return 'never';
  return grant.live ? `expires ${formatRelative(grant.expiresAt, now)}` : `expired ${formatRelative(grant.expiresAt, now)}`;
}

/**
 * `revoked 2 min ago by ops: stuck (token 7, ramp-cron, run r5)`,
 * `state-changed 1 min ago by rescan: tier 3 -> 4 (token 7, ...)`, or `-`.
 */
export function describeEnding(ending: Ending | null, now: number): string {
  if (ending === null) return '-';
  const by = (ending.kind === 'revoked' || ending.kind === 'state-changed') && ending.by !== null ? ` by ${ending.by}` : '';
  const { change } = ending;
  const reason =
    change !== undefined
      ? `: ${change.name} ${change.from ?? '<absent>'} -> ${change.to ?? '<absent>'}`
      : ending.reason === null
        ? ''
        : `: ${ending.reason}`;
  return `${ending.kind} ${formatRelative(ending.at, now)}${by}${reason} (token ${ending.token}, ${ending.holder}${runOf(ending.runId)})`;
}

/** A size for people: `812 B`, `3.1 KiB`, `4.0 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** `held back 6 h (until 2026-12-02T06:00:00.000Z)`: claims are refused until then. */
export function describeHold(heldUntil: number, now: number): string {
  return `held back ${formatRelative(heldUntil, now).replace(/^in /, '')} (until ${new Date(heldUntil).toISOString()})`;
}

/** A key's state as `revision=r7, tier=3` (names in code-unit order), or `-`. */
export function describeKeyState(state: Readonly<Record<string, string>> | undefined): string {
  const names = Object.keys(state ?? {}).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return names.length === 0 ? '-' : names.map((name) => `${name}=${(state as Record<string, string>)[name]}`).join(', ');
}

/** The state, with a pending recovery and a hold spelled out. */
const stateOf = (lease: ListedLease): string => {
  let text = lease.recoveryRequired ? `${lease.state}, recovery required` : lease.state;
  if (lease.heldUntil != null) text += `, ${describeHold(lease.heldUntil, lease.now)}`;
  return text;
};

/** The `list` / `watch` table; a KEY STATE column when any listed key has state. */
export function formatLeaseTable(leases: readonly ListedLease[]): string {
  const withState = leases.some((lease) => Object.keys(lease.keyState ?? {}).length > 0);
  const table = formatTable(
    ['KEY', 'STATE', 'TOKEN', 'HOLDER', 'EXPIRES', 'CHECKPOINT', 'LAST ENDING', ...(withState ? ['KEY STATE'] : [])],
    leases.map((lease) => [
      lease.key,
      stateOf(lease),
      lease.token.toString(),
      describeHolder(lease),
      describeExpiry(lease),
      lease.checkpoint === null
        ? '-'
        : `token ${lease.checkpoint.token}, ${formatRelative(lease.checkpoint.writtenAt, lease.now)}, ${formatBytes(lease.checkpoint.bytes)}`,
      describeEnding(lease.ending, lease.now),
      ...(withState ? [describeKeyState(lease.keyState)] : []),
    ]),
  );
  return table;
}

/** The key's queue in one line: how many wait, then each holder in order with when it came (at most five shown). */
function describeWaiters(waiters: LeaseInspection['waiters'], now: number): string {
  const shown = waiters.slice(0, 5).map((waiter, i) => `${i + 1}. ${waiter.holder} (queued ${formatRelative(waiter.arrivedAt, now)})`);
  const more = waiters.length > shown.length ? `, ${waiters.length - shown.length} more` : '';
  return `${waiters.length}: ${shown.join(', ')}${more}`;
}

/** The `inspect` view: one field per line, then the checkpoint as JSON. */
export function formatInspection(inspection: LeaseInspection): string {
  const { grant, now } = inspection;
  const rows: string[][] = [
    ['key', inspection.key],
    ['token', inspection.token.toString()],
    ['holder', describeHolder(inspection)],
    // NOTE: who leads since when, for an election's key: a term is a grant, its start the grant's.
    ['since', grant === null ? '-' : `${new Date(grant.acquiredAt).toISOString()} (${formatRelative(grant.acquiredAt, now)})`],
    ['expires', describeExpiry(inspection)],
  ];
  if (grant !== null && Object.keys(grant.attributes).length > 0) rows.push(['attributes', toJson(grant.attributes, 0)]);
  rows.push(['last ending', describeEnding(inspection.ending, now)]);
  rows.push(['recovery', inspection.recoveryRequired ? 'required: the next claim must say `recovering`' : 'none pending']);
  if (Object.keys(inspection.state ?? {}).length > 0) rows.push(['key state', describeKeyState(inspection.state)]);
  if (inspection.heldUntil != null) rows.push(['held back', describeHold(inspection.heldUntil, now)]);
  if (inspection.waiters.length > 0) rows.push(['waiting', describeWaiters(inspection.waiters, now)]);
  const { checkpoint } = inspection;
  rows.push(['checkpoint', checkpoint === null ? '-' : `token ${checkpoint.token}, written ${formatRelative(checkpoint.writtenAt, now)}`]);
  rows.push(['store time', new Date(now).toISOString()]);
  const table = formatTable(['FIELD', 'VALUE'], rows);
  return checkpoint === null ? table : `${table}\n\n${toJson(checkpoint.value)}`;
}

/** The `gate inspect|reset` view: one line, the resource and key escaped. */
export function formatGate(inspection: GateRecord, verb: 'holds' | 'forgot'): string {
  const { found } = inspection;
  const resource = printable(inspection.resource);
  if (found === null) return verb === 'holds' ? `gate ${resource}: no token recorded` : `gate ${resource}: nothing to forget`;
  return `gate ${resource}: ${verb} token ${found.token} of lease ${printable(found.key)}`;
}
