/**
 * The timeline picture of a fleet run, as plain SVG text: data in, string out, nothing else. A lane per
 * worker; each grant a bar in its key's colour, labelled with its fencing token; pauses and crashes shaded;
 * checkpoints as ticks; accepted writes as dots; refused stale writes as red crosses with their reason
 * (a short label, and the full refusal in a `<title>` tooltip); the store clock along the x axis; a legend.
 * Every mark carries `data-kind` so a browser test can count them.
 */
import { clockLabel } from './summary.js';

/** How a grant ended: the `Ending` kinds, or `open` when it outlived the run. */
export type GrantEnding = 'released' | 'expired' | 'revoked' | 'state-changed' | 'open';

/** One grant of a key to a worker, on the store's clock (ms since the run started). */
export interface TimelineGrant {
  readonly lane: string;
  readonly key: string;
  readonly token: bigint;
  readonly fromMs: number;
  readonly toMs: number;
  readonly ending: GrantEnding;
}

/** A stretch when a worker did nothing: paused without noticing, or crashed and restarting. */
export interface TimelineShade {
  readonly lane: string;
  readonly kind: 'pause' | 'crash';
  readonly fromMs: number;
  readonly toMs: number;
  /** What happened, for the tooltip. */
  readonly note: string;
}

/** A checkpoint that landed (alone, or with a fenced write). */
export interface TimelineCheckpoint {
  readonly lane: string;
  readonly key: string;
  readonly token: bigint;
  readonly atMs: number;
  readonly note: string;
}

/** A write a worker attempted on protected data. */
export interface TimelineWrite {
  readonly lane: string;
  readonly target: string;
  readonly via: 'fenced write' | 'token gate';
  readonly token: bigint;
  readonly atMs: number;
  readonly what: string;
  /** `null`: accepted. Otherwise the refusal's reason and its one-line description. */
  readonly refusal: { readonly reason: string; readonly detail: string } | null;
}

/** A lease operation other than a write that the fence refused (a renew, a checkpoint, a recover). */
export interface TimelineRefusedOperation {
  readonly lane: string;
  readonly operation: string;
  readonly reason: string;
  readonly atMs: number;
  readonly detail: string;
}

/** An operator's revoke. */
export interface TimelineRevoke {
  readonly lane: string;
  readonly key: string;
  readonly token: bigint;
  readonly atMs: number;
  readonly reason: string;
}

/** Everything the picture shows. Times are ms since the run started, on the store's clock. */
export interface Timeline {
  readonly title: string;
  readonly subtitle: string;
  /** The run's length; the axis extends to the next tick. */
  readonly durationMs: number;
  /** Top to bottom. */
  readonly lanes: readonly string[];
  /** In legend order; a key's index picks its colour. */
  readonly keys: readonly string[];
  readonly grants: readonly TimelineGrant[];
  readonly shades: readonly TimelineShade[];
  readonly checkpoints: readonly TimelineCheckpoint[];
  readonly writes: readonly TimelineWrite[];
  readonly refusedOperations: readonly TimelineRefusedOperation[];
  readonly revokes: readonly TimelineRevoke[];
}

/** The picture's width in px: the width of a README on a package page. */
export const TIMELINE_WIDTH = 900;
/** The colour of a refused write's mark (`#dc2626`): a browser test looks for it in the screenshot. */
export const REFUSED_RED = '#dc2626';

const LEFT = 104;
const RIGHT = 16;
const PLOT_TOP = 56;
const LANE_HEIGHT = 50;
const BAR_HEIGHT = 12;
// Rows inside a lane, from its top: the bars, then the writes under them, then the refusals' reasons.
const BAR_Y = 14;
const GATE_WRITE_Y = 26;
const LEDGER_WRITE_Y = 33;
const MARK_Y = 30;
const REASON_Y = 46;
const FONT = 'font-family="Helvetica, Arial, sans-serif"';
const KEY_COLOURS = ['#2563eb', '#059669', '#7c3aed', '#c026d3', '#0891b2', '#ca8a04', '#4f46e5', '#be185d'];
/** Axis steps to choose from, in ms: the smallest that gives at most 10 ticks. */
const TICK_STEPS = [1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000];

/** Escapes text for SVG content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/** A coordinate with at most one decimal, so the output is stable and short. */
const num = (value: number): string => String(Math.round(value * 10) / 10);

/** `mm:ss` of ms since the start: the axis labels (tooltips use the demo's `mm:ss.s`). */
const axisLabel = (ms: number): string => clockLabel(ms).replace(/\.[0-9]$/, '');

/** A rough text width in px for Helvetica at `size` px: enough to keep labels inside the picture. */
const textWidth = (text: string, size: number): number => text.length * size * 0.56;

const title = (text: string): string => `<title>${escapeXml(text)}</title>`;

interface Layout {
  readonly x: (ms: number) => number;
  /** The top of a lane. */
  readonly top: (lane: string) => number;
  readonly plotBottom: number;
  readonly axisEndMs: number;
  readonly tickMs: number;
}

function layoutOf(timeline: Timeline): Layout {
  const tickMs = TICK_STEPS.find((step) => timeline.durationMs / step <= 10) ?? TICK_STEPS[TICK_STEPS.length - 1]!;
  const axisEndMs = Math.max(tickMs, Math.ceil(timeline.durationMs / tickMs) * tickMs);
  const scale = (TIMELINE_WIDTH - LEFT - RIGHT) / axisEndMs;
  const laneIndex = new Map(timeline.lanes.map((lane, i) => [lane, i]));
  return {
    x: (ms) => LEFT + ms * scale,
    top: (lane) => PLOT_TOP + (laneIndex.get(lane) ?? 0) * LANE_HEIGHT,
    plotBottom: PLOT_TOP + timeline.lanes.length * LANE_HEIGHT,
    axisEndMs,
    tickMs,
  };
}

/** A label centred on `x`, moved inside the plot when it would stick out. */
function clampedLabel(x: number, y: number, text: string, size: number, attributes: string): string {
  const half = textWidth(text, size) / 2;
  const centre = Math.min(Math.max(x, LEFT + half), TIMELINE_WIDTH - RIGHT - half);
  return `<text x="${num(centre)}" y="${num(y)}" text-anchor="middle" font-size="${size}" ${attributes}>${escapeXml(text)}</text>`;
}

function lanesSvg(timeline: Timeline): string[] {
  return timeline.lanes.map((lane, i) => {
    const top = PLOT_TOP + i * LANE_HEIGHT;
    const band = i % 2 === 0 ? `<rect x="0" y="${top}" width="${TIMELINE_WIDTH}" height="${LANE_HEIGHT}" fill="#f8fafc"/>` : '';
    return `${band}<text x="${LEFT - 8}" y="${top + BAR_Y + 4}" text-anchor="end" font-size="12" fill="#111827">${escapeXml(lane)}</text>`;
  });
}

function axisSvg(layout: Layout): string[] {
  const parts = [
    `<line x1="${LEFT}" y1="${layout.plotBottom}" x2="${TIMELINE_WIDTH - RIGHT}" y2="${layout.plotBottom}" stroke="#374151"/>`,
  ];
  for (let ms = 0; ms <= layout.axisEndMs; ms += layout.tickMs) {
    const x = num(layout.x(ms));
    parts.push(
      `<line x1="${x}" y1="${PLOT_TOP}" x2="${x}" y2="${layout.plotBottom}" stroke="#e5e7eb"/>`,
      `<line x1="${x}" y1="${layout.plotBottom}" x2="${x}" y2="${layout.plotBottom + 5}" stroke="#374151"/>`,
      `<text x="${x}" y="${layout.plotBottom + 17}" text-anchor="middle" font-size="11" fill="#374151">${axisLabel(ms)}</text>`,
    );
  }
  parts.push(
    `<text x="${TIMELINE_WIDTH - RIGHT}" y="${layout.plotBottom + 32}" text-anchor="end" font-size="11" fill="#374151">store clock (mm:ss since the run started)</text>`,
  );
  return parts;
}

function shadesSvg(timeline: Timeline, layout: Layout): string[] {
  return timeline.shades.map((shade) => {
    const top = layout.top(shade.lane);
    const [x1, x2] = [layout.x(shade.fromMs), layout.x(shade.toMs)];
    const fill = shade.kind === 'pause' ? 'fill="#fde68a" fill-opacity="0.7"' : 'fill="url(#crash)"';
    const word = shade.kind === 'pause' ? 'paused' : 'crashed';
    // NOTE: the word goes bottom left; a stale write's reason, if any, is centred on the right edge.
    const label = x2 - x1 > 80 ? `<text x="${num(x1 + 3)}" y="${top + REASON_Y}" font-size="9" fill="#6b7280">${word}</text>` : '';
    const tooltip = `${shade.lane} ${word} ${clockLabel(shade.fromMs)} to ${clockLabel(shade.toMs)}: ${shade.note}`;
    return `<g data-kind="${shade.kind}">${title(tooltip)}<rect x="${num(x1)}" y="${num(top)}" width="${num(x2 - x1)}" height="${LANE_HEIGHT}" ${fill}/>${label}</g>`;
  });
}

function grantsSvg(timeline: Timeline, layout: Layout): string[] {
  return timeline.grants.map((grant) => {
    const colour = KEY_COLOURS[Math.max(0, timeline.keys.indexOf(grant.key)) % KEY_COLOURS.length]!;
    const [x1, x2, y] = [layout.x(grant.fromMs), layout.x(grant.toMs), layout.top(grant.lane) + BAR_Y];
    const width = Math.max(2, x2 - x1);
    const long = `${grant.key} · token ${grant.token}`;
    const text = [long, `token ${grant.token}`, `${grant.token}`].find((candidate) => textWidth(candidate, 10) + 6 <= width);
    const label =
      text === undefined
        ? ''
        : `<text x="${num(x1 + width / 2)}" y="${num(y + 3.5)}" text-anchor="middle" font-size="10" fill="#ffffff">${escapeXml(text)}</text>`;
    const end =
      grant.ending === 'revoked'
        ? `<rect x="${num(x1 + width - 3)}" y="${num(y - BAR_HEIGHT / 2 - 2)}" width="3" height="${BAR_HEIGHT + 4}" fill="#111827"/>`
        : '';
    const tooltip = `${grant.lane}: ${grant.key} token ${grant.token}, granted ${clockLabel(grant.fromMs)}, ${grant.ending === 'open' ? 'still held at the end' : `${grant.ending} ${clockLabel(grant.toMs)}`}`;
    return `<g data-kind="grant" data-token="${grant.token}">${title(tooltip)}<rect x="${num(x1)}" y="${num(y - BAR_HEIGHT / 2)}" width="${num(width)}" height="${BAR_HEIGHT}" rx="3" fill="${colour}"/>${label}${end}</g>`;
  });
}

function checkpointsSvg(timeline: Timeline, layout: Layout): string[] {
  return timeline.checkpoints.map((checkpoint) => {
    const [x, y] = [num(layout.x(checkpoint.atMs)), layout.top(checkpoint.lane) + BAR_Y];
    const tooltip = `${checkpoint.lane}: checkpoint on ${checkpoint.key} under token ${checkpoint.token} at ${clockLabel(checkpoint.atMs)}: ${checkpoint.note}`;
    return `<g data-kind="checkpoint">${title(tooltip)}<line x1="${x}" y1="${num(y - BAR_HEIGHT / 2 - 6)}" x2="${x}" y2="${num(y - BAR_HEIGHT / 2)}" stroke="#111827" stroke-width="1.5"/></g>`;
  });
}

/** A cross centred on (x, y). */
const cross = (x: number, y: number, size: number, stroke: string, width: number): string =>
  `<path d="M${num(x - size)} ${num(y - size)}L${num(x + size)} ${num(y + size)}M${num(x - size)} ${num(y + size)}L${num(x + size)} ${num(y - size)}" stroke="${stroke}" stroke-width="${width}" stroke-linecap="round"/>`;

/** An accepted write under the bar: a dot (ledger) or, just above it, a diamond (token gate). */
function acceptedSvg(write: TimelineWrite, x: number, top: number): string {
  const tooltip = `${write.lane}: ${write.via} "${write.what}" on ${write.target} under token ${write.token} at ${clockLabel(write.atMs)}: accepted`;
  const shape =
    write.via === 'token gate'
      ? `<path d="M${num(x)} ${top + GATE_WRITE_Y - 3}l3 3l-3 3l-3 -3z" fill="#ffffff" stroke="#111827"/>`
      : `<circle cx="${num(x)}" cy="${top + LEDGER_WRITE_Y}" r="2.8" fill="#ffffff" stroke="#111827"/>`;
  return `<g data-kind="accepted">${title(tooltip)}${shape}</g>`;
}

/** A refused stale write: a red cross on a white disc, its reason below. */
function refusedSvg(write: TimelineWrite, refusal: { readonly reason: string; readonly detail: string }, x: number, top: number): string {
  const y = top + MARK_Y;
  const tooltip = `${write.lane}: stale ${write.via} "${write.what}" on ${write.target} under token ${write.token} at ${clockLabel(write.atMs)} REFUSED, nothing applied: ${refusal.detail}`;
  const label = clampedLabel(x, top + REASON_Y, refusal.reason, 10, `font-weight="bold" fill="${REFUSED_RED}"`);
  return `<g data-kind="refused" data-reason="${escapeXml(refusal.reason)}">${title(tooltip)}<circle cx="${num(x)}" cy="${num(y)}" r="7" fill="#ffffff"/>${cross(x, y, 5, REFUSED_RED, 2.5)}${label}</g>`;
}

/** The writes that were accepted, or those that were refused. */
function writesSvg(timeline: Timeline, layout: Layout, verdict: 'accepted' | 'refused'): string[] {
  return timeline.writes.flatMap((write) => {
    const [x, top] = [layout.x(write.atMs), layout.top(write.lane)];
    if (write.refusal === null) return verdict === 'accepted' ? [acceptedSvg(write, x, top)] : [];
    return verdict === 'refused' ? [refusedSvg(write, write.refusal, x, top)] : [];
  });
}

function refusedOperationsSvg(timeline: Timeline, layout: Layout): string[] {
  return timeline.refusedOperations.map((refused) => {
    const [x, top] = [layout.x(refused.atMs), layout.top(refused.lane)];
    const y = top + MARK_Y;
    const tooltip = `${refused.lane}: ${refused.operation} at ${clockLabel(refused.atMs)} refused: ${refused.detail}`;
    const label = clampedLabel(x, top + REASON_Y, `${refused.operation}: ${refused.reason}`, 9, 'fill="#4b5563"');
    return `<g data-kind="refused-operation">${title(tooltip)}${cross(x, y, 3.5, '#4b5563', 1.8)}${label}</g>`;
  });
}

function revokesSvg(timeline: Timeline, layout: Layout): string[] {
  return timeline.revokes.map((revoke) => {
    const [x, top] = [layout.x(revoke.atMs), layout.top(revoke.lane)];
    const y = top + BAR_Y;
    const tooltip = `${revoke.lane} revoked ${revoke.key} token ${revoke.token} at ${clockLabel(revoke.atMs)}: "${revoke.reason}"`;
    const label = clampedLabel(x, top + REASON_Y, `revoked ${revoke.key} token ${revoke.token}`, 9, 'fill="#111827"');
    return `<g data-kind="revoke">${title(tooltip)}<path d="M${num(x)} ${num(y - 7)}l6 7l-6 7l-6 -7z" fill="#111827"/>${label}</g>`;
  });
}

/** One legend entry: a small symbol (drawn at 0,0, 16 px wide) and its words. */
interface LegendEntry {
  readonly symbol: string;
  readonly text: string;
}

function legendEntries(timeline: Timeline): LegendEntry[] {
  const keys = timeline.keys.map((key, i) => ({
    symbol: `<rect x="0" y="-5" width="16" height="10" rx="2" fill="${KEY_COLOURS[i % KEY_COLOURS.length]}"/>`,
    text: `grant of ${key}`,
  }));
  return [
    ...keys,
    { symbol: '<line x1="8" y1="-6" x2="8" y2="0" stroke="#111827" stroke-width="1.5"/>', text: 'checkpoint' },
    { symbol: '<circle cx="8" cy="0" r="2.8" fill="#ffffff" stroke="#111827"/>', text: 'write accepted' },
    { symbol: '<path d="M8 -3l3 3l-3 3l-3 -3z" fill="#ffffff" stroke="#111827"/>', text: 'token-gate write accepted' },
    { symbol: cross(8, 0, 5, REFUSED_RED, 2.5), text: 'stale write refused (reason)' },
    { symbol: cross(8, 0, 3.5, '#4b5563', 1.8), text: 'renew / checkpoint refused' },
    { symbol: '<rect x="0" y="-6" width="16" height="12" fill="#fde68a"/>', text: 'paused' },
    { symbol: '<rect x="0" y="-6" width="16" height="12" fill="url(#crash)"/>', text: 'crashed' },
    { symbol: '<path d="M8 -6l5 6l-5 6l-5 -6z" fill="#111827"/>', text: 'operator revoke' },
  ];
}

/** The legend, flowed left to right and wrapped at the picture's width; returns its svg and height. */
function legendSvg(timeline: Timeline, top: number): { svg: string; height: number } {
  const parts: string[] = [];
  let [x, y] = [LEFT, top];
  for (const entry of legendEntries(timeline)) {
    const width = 16 + 5 + textWidth(entry.text, 11) + 16;
    if (x + width > TIMELINE_WIDTH - RIGHT && x > LEFT) [x, y] = [LEFT, y + 20];
    parts.push(
      `<g data-kind="legend" transform="translate(${num(x)} ${y})">${entry.symbol}<text x="21" y="4" font-size="11" fill="#111827">${escapeXml(entry.text)}</text></g>`,
    );
    x += width;
  }
  return { svg: parts.join(''), height: y - top + 20 };
}

/** Renders the timeline as a standalone SVG document, `TIMELINE_WIDTH` px wide. */
export function renderTimelineSvg(timeline: Timeline): string {
  const layout = layoutOf(timeline);
  const legendTop = layout.plotBottom + 54;
  const legend = legendSvg(timeline, legendTop);
  const height = legendTop + legend.height;
  const defs =
    '<defs><pattern id="crash" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">' +
    '<rect width="6" height="6" fill="#e5e7eb"/><line x1="0" y1="0" x2="0" y2="6" stroke="#9ca3af" stroke-width="2"/></pattern></defs>';
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${TIMELINE_WIDTH}" height="${height}" viewBox="0 0 ${TIMELINE_WIDTH} ${height}" role="img" ${FONT}>`,
    title(timeline.title),
    defs,
    `<rect width="${TIMELINE_WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="16" y="22" font-size="15" font-weight="bold" fill="#111827">${escapeXml(timeline.title)}</text>`,
    `<text x="16" y="41" font-size="11" fill="#374151">${escapeXml(timeline.subtitle)}</text>`,
    ...lanesSvg(timeline),
    ...axisSvg(layout),
    ...shadesSvg(timeline, layout),
    ...grantsSvg(timeline, layout),
    ...checkpointsSvg(timeline, layout),
    ...writesSvg(timeline, layout, 'accepted'),
    ...revokesSvg(timeline, layout),
    ...refusedOperationsSvg(timeline, layout),
    // NOTE: refused writes last, so nothing is drawn over a red cross.
    ...writesSvg(timeline, layout, 'refused'),
    legend.svg,
    '</svg>',
    '',
  ].join('\n');
}
