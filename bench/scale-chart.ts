/**
 * The scale benchmark's picture, as plain SVG text (data in, string out, as demo/timeline-svg.ts draws the
 * demo's timeline): panels side by side, each a log-log chart of one figure against the number of keys, a
 * line per store. Every mark carries `data-store`.
 */
import { escapeXml } from '../demo/timeline-svg.js';

/** One store's line: a value per key count (`null`: not measured there). */
export interface ChartSeries {
  readonly store: string;
  readonly points: readonly { readonly keys: number; readonly value: number }[];
}

/** One panel: a title, the unit of its axis, its lines. */
export interface ChartPanel {
  readonly title: string;
  readonly unit: string;
  readonly series: readonly ChartSeries[];
}

const WIDTH = 900;
const PANEL_HEIGHT = 260;
const TOP = 68;
const LEFT = 56;
const GAP = 64;
const BOTTOM = 40;
const FONT = 'font-family="Helvetica, Arial, sans-serif"';
const COLOURS: Readonly<Record<string, string>> = {
  memory: '#059669',
  sqlite: '#7c3aed',
  redis: '#dc2626',
  postgres: '#2563eb',
  etcd: '#ca8a04',
};

const num = (value: number): string => String(Math.round(value * 10) / 10);
const log10 = Math.log10;

/** A round label of a power of ten: 1k, 1M, 10 µs, 1 KB... */
function label(power: number, unit: string): string {
  const value = 10 ** power;
  if (unit === 'keys') return value >= 1e6 ? `${value / 1e6}M` : value >= 1e3 ? `${value / 1e3}k` : String(value);
  if (unit === 'µs') return value >= 1e3 ? `${value / 1e3} ms` : `${value} µs`;
  if (unit === 'bytes') return value >= 1e3 ? `${value / 1e3} kB` : `${value} B`;
  return String(value);
}

/** The SVG text of `panels`, titled `title` with `subtitle` under it. */
export function scaleChart(title: string, subtitle: string, panels: readonly ChartPanel[]): string {
  const panelWidth = (WIDTH - LEFT - GAP * (panels.length - 1) - 16) / panels.length;
  const height = TOP + PANEL_HEIGHT + BOTTOM + 24;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" ${FONT}>`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${LEFT}" y="20" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
    `<text x="${LEFT}" y="37" font-size="11" fill="#4b5563">${escapeXml(subtitle)}</text>`,
  ];
  const allKeys = panels.flatMap((panel) => panel.series.flatMap((series) => series.points.map((point) => point.keys)));
  const xLow = Math.floor(log10(Math.min(...allKeys)));
  const xHigh = Math.ceil(log10(Math.max(...allKeys)));
  panels.forEach((panel, index) => {
    const left = LEFT + index * (panelWidth + GAP);
    const values = panel.series.flatMap((series) => series.points.map((point) => point.value)).filter((value) => value > 0);
    const yLow = Math.floor(log10(Math.min(...values)));
    const yHigh = Math.max(yLow + 1, Math.ceil(log10(Math.max(...values))));
    const x = (keys: number): number => left + ((log10(keys) - xLow) / Math.max(1, xHigh - xLow)) * panelWidth;
    const y = (value: number): number => TOP + PANEL_HEIGHT - ((log10(value) - yLow) / (yHigh - yLow)) * PANEL_HEIGHT;
    parts.push(`<text x="${num(left)}" y="${TOP - 8}" font-size="12" font-weight="bold">${escapeXml(panel.title)}</text>`);
    for (let power = yLow; power <= yHigh; power += 1) {
      const at = y(10 ** power);
      parts.push(
        `<line x1="${num(left)}" x2="${num(left + panelWidth)}" y1="${num(at)}" y2="${num(at)}" stroke="#e5e7eb"/>`,
        `<text x="${num(left - 6)}" y="${num(at + 4)}" font-size="10" text-anchor="end" fill="#374151">${escapeXml(label(power, panel.unit))}</text>`,
      );
    }
    for (let power = xLow; power <= xHigh; power += 1) {
      const at = x(10 ** power);
      parts.push(
        `<line x1="${num(at)}" x2="${num(at)}" y1="${TOP}" y2="${TOP + PANEL_HEIGHT}" stroke="#f3f4f6"/>`,
        `<text x="${num(at)}" y="${TOP + PANEL_HEIGHT + 16}" font-size="10" text-anchor="middle" fill="#374151">${label(power, 'keys')}</text>`,
      );
    }
    parts.push(
      `<text x="${num(left + panelWidth / 2)}" y="${TOP + PANEL_HEIGHT + 32}" font-size="10" text-anchor="middle" fill="#374151">keys in the store</text>`,
    );
    for (const series of panel.series) {
      const colour = COLOURS[series.store] ?? '#111827';
      const points = series.points.filter((point) => point.value > 0);
      if (points.length === 0) continue;
      parts.push(
        `<polyline data-store="${escapeXml(series.store)}" fill="none" stroke="${colour}" stroke-width="2" points="${points.map((point) => `${num(x(point.keys))},${num(y(point.value))}`).join(' ')}"/>`,
      );
      for (const point of points) {
        parts.push(
          `<circle data-store="${escapeXml(series.store)}" cx="${num(x(point.keys))}" cy="${num(y(point.value))}" r="3" fill="${colour}"><title>${escapeXml(`${series.store}, ${point.keys} keys: ${point.value.toFixed(1)} ${panel.unit}`)}</title></circle>`,
        );
      }
    }
  });
  const stores = [...new Set(panels.flatMap((panel) => panel.series.map((series) => series.store)))];
  stores.forEach((store, index) => {
    const at = LEFT + index * 110;
    const colour = COLOURS[store] ?? '#111827';
    parts.push(
      `<line x1="${at}" x2="${at + 18}" y1="${height - 12}" y2="${height - 12}" stroke="${colour}" stroke-width="3"/>`,
      `<text x="${at + 24}" y="${height - 8}" font-size="11">${escapeXml(store)}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
