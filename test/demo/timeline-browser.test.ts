/**
 * The timeline picture in a real browser (headless Chromium, see test/support/chromium.ts): the default
 * seed's SVG is laid out in a page whose script reports what the browser drew (every refused write's
 * mark, reason and tooltip; text outside the picture; overlapping labels), and a screenshot of the SVG
 * as a README shows it (an `<img>`) is decoded and checked: the expected size, not blank, and red where
 * each refusal mark is.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SEED, runFleet, timelineSvgOf } from '../../demo/fleet-run.js';
import { TIMELINE_WIDTH } from '../../demo/timeline-svg.js';
import { findChromium, runChromium } from '../support/chromium.js';
import { countPixels, decodePng, type Pixels } from './png.js';

interface Box {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

/** What the page's script found in the laid-out SVG. */
interface LayoutReport {
  readonly width: number;
  readonly height: number;
  readonly refused: readonly { readonly reason: string; readonly label: string; readonly tooltip: string; readonly cross: Box }[];
  readonly accepted: number;
  readonly grants: number;
  readonly textOutside: readonly string[];
  readonly overlappingText: readonly string[];
}

/**
 * The page: the SVG inline, and a script that measures it once laid out and writes the report, URI-encoded
 * (so no HTML escaping gets in the way), into `#report` for `--dump-dom`.
 */
const pageFor = (svg: string): string => `<!doctype html>
<html><head><meta charset="utf-8"><style>html, body { margin: 0; }</style></head><body>
${svg}
<pre id="report"></pre>
<script>
const svg = document.querySelector('svg');
const origin = svg.getBoundingClientRect();
const boxOf = (element) => {
  const r = element.getBoundingClientRect();
  return { x: r.x - origin.x, y: r.y - origin.y, width: r.width, height: r.height };
};
const texts = [...svg.querySelectorAll('text')].map((text) => ({ text: text.textContent, box: boxOf(text) }));
const overlaps = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
const overlappingText = [];
texts.forEach((a, i) => texts.slice(i + 1).forEach((b) => { if (overlaps(a.box, b.box)) overlappingText.push(a.text + ' / ' + b.text); }));
const report = {
  width: origin.width,
  height: origin.height,
  refused: [...svg.querySelectorAll('[data-kind=refused]')].map((mark) => ({
    reason: mark.getAttribute('data-reason'),
    label: mark.querySelector('text')?.textContent ?? '',
    tooltip: mark.querySelector('title')?.textContent ?? '',
    cross: boxOf(mark.querySelector('path')),
  })),
  accepted: svg.querySelectorAll('[data-kind=accepted]').length,
  grants: svg.querySelectorAll('[data-kind=grant]').length,
  textOutside: texts.filter(({ box }) => box.x < 0 || box.y < 0 || box.x + box.width > origin.width || box.y + box.height > origin.height).map(({ text }) => text),
  overlappingText,
};
document.getElementById('report').textContent = encodeURIComponent(JSON.stringify(report));
</script>
</body></html>
`;

const isRed = ([r, g, b]: readonly number[]): boolean => r! > 180 && g! < 90 && b! < 90;
const isInk = ([r, g, b]: readonly number[]): boolean => Math.min(r!, g!, b!) < 235;

describe('the timeline picture in headless Chromium (default seed)', () => {
  let dir = '';
  let refusedWrites: { readonly verdict: string | null }[] = [];
  let acceptedWrites = 0;
  let grants = 0;
  let height = 0;
  let report: LayoutReport;
  let screenshot: Pixels;

  beforeAll(async () => {
    // NOTE: as root, the first run on a fresh machine installs the Debian package: give it time.
    findChromium();
    dir = mkdtempSync(join(tmpdir(), 'leasefence-timeline-'));
    const run = await runFleet(DEFAULT_SEED, false);
    const { attempts } = run.fleet.journal;
    refusedWrites = attempts.filter((attempt) => attempt.verdict !== 'accepted');
    acceptedWrites = attempts.length - refusedWrites.length;
    grants = run.fleet.recording.grants.length;
    const svg = timelineSvgOf(run);
    height = Number(/<svg [^>]*height="(\d+)"/.exec(svg)?.[1]);
    const [svgFile, pageFile, imageFile, pngFile] = ['timeline.svg', 'page.html', 'image.html', 'timeline.png'].map((name) =>
      join(dir, name),
    ) as [string, string, string, string];
    writeFileSync(svgFile, svg);
    writeFileSync(pageFile, pageFor(svg));
    const { stdout } = await runChromium(['--dump-dom', pathToFileURL(pageFile).href]);
    const encoded = /<pre id="report">([^<]*)<\/pre>/.exec(stdout)?.[1] ?? '';
    expect(encoded, `the page's script wrote no report; chromium printed:\n${stdout.slice(0, 2000)}`).not.toBe('');
    report = JSON.parse(decodeURIComponent(encoded)) as LayoutReport;
    // NOTE: shown as a README shows it, in an <img>.
    writeFileSync(imageFile, `<!doctype html><html><body style="margin: 0"><img src="timeline.svg" alt="timeline"></body></html>`);
    await runChromium([`--screenshot=${pngFile}`, `--window-size=${TIMELINE_WIDTH},${height}`, pathToFileURL(imageFile).href]);
    screenshot = decodePng(readFileSync(pngFile));
  }, 600_000);

  afterAll(() => {
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it('the run has stale writes to show (else this test would prove nothing)', () => {
    expect(refusedWrites.length).toBeGreaterThan(0);
  });

  it('every refused write of the run has exactly one mark, with its reason as label and the refusal as tooltip', () => {
    expect(report.refused).toHaveLength(refusedWrites.length);
    const reasons = (list: readonly (string | null)[]): (string | null)[] => [...list].sort();
    expect(reasons(report.refused.map((mark) => mark.reason))).toEqual(reasons(refusedWrites.map((write) => write.verdict)));
    for (const mark of report.refused) {
      expect(mark.label).toBe(mark.reason);
      expect(mark.tooltip).toContain('REFUSED, nothing applied');
      expect(mark.tooltip).toContain(`(${mark.reason}`);
    }
  });

  it('every accepted write is a dot and every grant a bar', () => {
    expect(report.accepted).toBe(acceptedWrites);
    expect(report.grants).toBe(grants);
  });

  it('lays out at README width, with every text inside the picture and no two texts overlapping', () => {
    expect({ width: report.width, height: report.height }).toEqual({ width: TIMELINE_WIDTH, height });
    expect(report.textOutside).toEqual([]);
    expect(report.overlappingText).toEqual([]);
  });

  it('screenshots at the expected size, and the picture is not blank', () => {
    expect({ width: screenshot.width, height: screenshot.height }).toEqual({ width: TIMELINE_WIDTH, height });
    const ink = countPixels(screenshot, isInk) / (screenshot.width * screenshot.height);
    expect(ink, 'share of non-white pixels').toBeGreaterThan(0.1);
  });

  it('each refusal mark shows red where the browser laid it out', () => {
    expect(report.refused).toHaveLength(refusedWrites.length);
    for (const mark of report.refused) {
      const red = countPixels(screenshot, isRed, mark.cross);
      expect(red, `red pixels of the ${mark.reason} mark at ${JSON.stringify(mark.cross)}`).toBeGreaterThanOrEqual(20);
    }
  });
});
