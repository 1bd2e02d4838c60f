/**
 * The timeline picture without a browser: the pure renderer (escaping, one mark per write, every
 * coordinate inside the picture, well-formed tags), the recording behind it (over many seeds, the picture
 * tells the truth about grants and writes), the committed `docs/timeline.svg`, and the `--timeline` flag.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SEED, runFleet, timelineSvgOf } from '../../demo/fleet-run.js';
import { timelineOf } from '../../demo/recording.js';
import { escapeXml, renderTimelineSvg, TIMELINE_WIDTH, type Timeline, type TimelineWrite } from '../../demo/timeline-svg.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const COMMITTED = join(ROOT, 'docs', 'timeline.svg');
const REGENERATE = 'npm run demo -- --timeline docs/timeline.svg';

/** The elements the renderer writes; any other `<` would be unescaped text. */
const ELEMENTS = new Set(['svg', 'title', 'defs', 'pattern', 'rect', 'line', 'text', 'g', 'path', 'circle']);

/** Checks that tags nest properly and are all known; returns the problem, or `null`. */
function tagProblem(svg: string): string | null {
  const open: string[] = [];
  for (const [, closing, name, selfClosing] of svg.matchAll(/<(\/?)([^\s/>]*)[^>]*?(\/?)>/g)) {
    if (!ELEMENTS.has(name!)) return `unknown element <${name}>`;
    if (closing === '/') {
      if (open.pop() !== name) return `</${name}> closes nothing open`;
    } else if (selfClosing !== '/') open.push(name!);
  }
  return open.length === 0 ? null : `unclosed <${open.join('>, <')}>`;
}

const count = (svg: string, kind: string): number => svg.split(`data-kind="${kind}"`).length - 1;

const nameArb = fc.string({
  minLength: 1,
  maxLength: 16,
  unit: fc.constantFrom('a', 'z', '-', ':', ' ', '<', '>', '&', '"', "'", 'é', '1'),
});

const timelineArb: fc.Arbitrary<Timeline> = fc
  .record({
    lanes: fc.uniqueArray(nameArb, { minLength: 1, maxLength: 10 }),
    keys: fc.uniqueArray(nameArb, { minLength: 1, maxLength: 5 }),
    durationMs: fc.integer({ min: 1, max: 3_600_000 }),
  })
  .chain(({ lanes, keys, durationMs }) => {
    const lane = fc.constantFrom(...lanes);
    const at = fc.integer({ min: 0, max: durationMs });
    const token = fc.bigInt({ min: 1n, max: 2n ** 63n - 1n });
    const span = fc.tuple(at, at).map(([a, b]) => [Math.min(a, b), Math.max(a, b)] as const);
    const write: fc.Arbitrary<TimelineWrite> = fc.record({
      lane,
      target: nameArb,
      via: fc.constantFrom('fenced write' as const, 'token gate' as const),
      token,
      atMs: at,
      what: nameArb,
      refusal: fc.option(fc.record({ reason: nameArb, detail: nameArb })),
    });
    return fc.record({
      title: nameArb,
      subtitle: nameArb,
      durationMs: fc.constant(durationMs),
      lanes: fc.constant(lanes),
      keys: fc.constant(keys),
      grants: fc
        .array(
          fc.record({
            lane,
            key: fc.constantFrom(...keys),
            token,
            span,
            ending: fc.constantFrom('released' as const, 'expired' as const, 'revoked' as const, 'open' as const),
          }),
          { maxLength: 12 },
        )
        .map((grants) => grants.map(({ span: [fromMs, toMs], ...grant }) => ({ ...grant, fromMs, toMs }))),
      shades: fc
        .array(fc.record({ lane, kind: fc.constantFrom('pause' as const, 'crash' as const), span, note: nameArb }), { maxLength: 6 })
        .map((shades) => shades.map(({ span: [fromMs, toMs], ...shade }) => ({ ...shade, fromMs, toMs }))),
      checkpoints: fc.array(fc.record({ lane, key: fc.constantFrom(...keys), token, atMs: at, note: nameArb }), { maxLength: 8 }),
      writes: fc.array(write, { maxLength: 20 }),
      refusedOperations: fc.array(fc.record({ lane, operation: nameArb, reason: nameArb, atMs: at, detail: nameArb }), { maxLength: 4 }),
      revokes: fc.array(fc.record({ lane, key: fc.constantFrom(...keys), token, atMs: at, reason: nameArb }), { maxLength: 3 }),
    });
  });

describe('renderTimelineSvg (pure)', () => {
  it('escapes text for content and attributes', () => {
    expect(escapeXml(`<a href="x">&'`)).toBe('&#60;a href=&#34;x&#34;&#62;&#38;&#39;');
  });

  test.prop([timelineArb], { numRuns: 60 })(
    'draws one mark per write, grant and shade, with well-formed tags and every name escaped',
    (timeline) => {
      const svg = renderTimelineSvg(timeline);
      expect(tagProblem(svg)).toBeNull();
      const refused = timeline.writes.filter((write) => write.refusal !== null).length;
      expect(count(svg, 'refused')).toBe(refused);
      expect(count(svg, 'accepted')).toBe(timeline.writes.length - refused);
      expect(count(svg, 'grant')).toBe(timeline.grants.length);
      expect(count(svg, 'pause') + count(svg, 'crash')).toBe(timeline.shades.length);
      expect(count(svg, 'checkpoint')).toBe(timeline.checkpoints.length);
      expect(count(svg, 'revoke')).toBe(timeline.revokes.length);
      expect(renderTimelineSvg(timeline)).toBe(svg);
    },
  );

  test.prop([timelineArb], { numRuns: 60 })('keeps every x coordinate inside the picture, README width', (timeline) => {
    const svg = renderTimelineSvg(timeline);
    expect(svg).toContain(`<svg xmlns="http://www.w3.org/2000/svg" width="${TIMELINE_WIDTH}"`);
    for (const [, name, value] of svg.matchAll(/ (x|x1|x2|cx)="(-?[0-9.]+)"/g)) {
      expect(Number(value), name).toBeGreaterThanOrEqual(0);
      expect(Number(value), name).toBeLessThanOrEqual(TIMELINE_WIDTH);
    }
    for (const [, x, width] of svg.matchAll(/<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"/g))
      expect(Number(x) + Number(width)).toBeLessThanOrEqual(TIMELINE_WIDTH + 0.1);
  });

  it('labels a refused write with its reason and puts the whole refusal in its tooltip', () => {
    const write: TimelineWrite = {
      lane: 'w<1>',
      target: 'job:1',
      via: 'fenced write',
      token: 7n,
      atMs: 1_500,
      what: 'batch 2',
      refusal: { reason: 'superseded', detail: 'lease lost on job:1 (superseded: a newer grant took over)' },
    };
    const svg = renderTimelineSvg({
      title: 't',
      subtitle: 's',
      durationMs: 10_000,
      lanes: ['w<1>'],
      keys: ['job:1'],
      grants: [],
      shades: [],
      checkpoints: [],
      writes: [write],
      refusedOperations: [],
      revokes: [],
    });
    const mark = /<g data-kind="refused" data-reason="superseded">(.*?)<\/g>/.exec(svg)?.[1] ?? '';
    expect(mark).toContain(
      '<title>w&#60;1&#62;: stale fenced write &#34;batch 2&#34; on job:1 under token 7 at 00:01.5 REFUSED, nothing applied: lease lost on job:1 (superseded: a newer grant took over)</title>',
    );
    expect(mark).toMatch(/<text [^>]*fill="#dc2626">superseded<\/text>/);
    expect(svg).not.toContain('w<1>');
  });
});

describe('the recording behind the picture', () => {
  it('tells the truth over 40 seeds: one grant of a key at a time, fenced writes accepted inside their grant and refused after it, gate writes refused only once a newer token wrote', async () => {
    for (let seed = 0; seed < 40; seed++) {
      const run = await runFleet(seed, false);
      const timeline = timelineOf(run.fleet.recording, run.fleet.journal, {
        seed,
        lanes: [...run.workers, run.operator],
        durationMs: run.fleet.sim.elapsed(),
      });
      const where = `seed ${seed} (replay: npm run demo -- --seed ${seed} --timeline /tmp/t.svg)`;
      for (const key of timeline.keys) {
        const grants = timeline.grants.filter((grant) => grant.key === key).sort((a, b) => a.fromMs - b.fromMs);
        grants.forEach((grant, i) => {
          expect(grant.fromMs, `${where}: ${key} token ${grant.token} ends before it starts`).toBeLessThanOrEqual(grant.toMs);
          if (i > 0)
            expect(grants[i - 1]!.toMs, `${where}: ${key} tokens ${grants[i - 1]!.token} and ${grant.token} overlap`).toBeLessThanOrEqual(
              grant.fromMs,
            );
          if (i > 0) expect(grants[i - 1]!.token, `${where}: ${key} tokens go down`).toBeLessThan(grant.token);
        });
      }
      const refused = run.fleet.journal.attempts.filter((attempt) => attempt.verdict !== 'accepted');
      expect(timeline.writes.filter((write) => write.refusal !== null)).toHaveLength(refused.length);
      for (const write of timeline.writes) {
        const grant = timeline.grants.find(
          (candidate) =>
            candidate.lane === write.lane &&
            candidate.token === write.token &&
            candidate.fromMs <= write.atMs &&
            (write.via === 'token gate' || candidate.key === write.target),
        );
        expect(grant, `${where}: ${write.lane}'s ${write.what} has no grant`).toBeDefined();
        if (write.via === 'token gate') {
          // NOTE: a token gate refuses only tokens older than one the resource has seen: a stale holder's upload lands if no newer one came first.
          const newerFirst = timeline.writes.some(
            (other) =>
              other.via === 'token gate' &&
              other.target === write.target &&
              other.refusal === null &&
              other.atMs <= write.atMs &&
              other.token > write.token,
          );
          expect(
            newerFirst,
            `${where}: ${write.what} under token ${write.token} ${write.refusal === null ? 'accepted after' : 'refused without'} a newer token's write`,
          ).toBe(write.refusal !== null);
          continue;
        }
        // NOTE: a release (or revoke) can follow a write in the same simulated millisecond; an expiry cannot (expiry is strict).
        if (write.refusal === null)
          expect(
            write.atMs < grant!.toMs || (write.atMs === grant!.toMs && grant!.ending !== 'expired'),
            `${where}: accepted ${write.what} after its grant ended`,
          ).toBe(true);
        // NOTE: a bound attribute's mismatch is refused while the grant is live; every other refusal comes after the grant ended.
        else if (write.refusal.reason !== 'attribute-mismatch')
          expect(write.atMs, `${where}: refused ${write.what} inside its grant`).toBeGreaterThanOrEqual(grant!.toMs);
      }
    }
  });
});

describe('docs/timeline.svg', () => {
  it('is what the default seed renders today', async () => {
    const rendered = timelineSvgOf(await runFleet(DEFAULT_SEED, false));
    const committed = readFileSync(COMMITTED, 'utf8');
    expect(committed === rendered, `docs/timeline.svg is stale: regenerate it with \`${REGENERATE}\` and commit it`).toBe(true);
  });
});

describe('npm run demo -- --timeline FILE', () => {
  const run = promisify(execFile);
  const demo = (...args: string[]): Promise<{ stdout: string }> =>
    run(process.execPath, ['--import', 'tsx', join(ROOT, 'demo', 'fleet.ts'), ...args], { cwd: ROOT, timeout: 60_000 });

  it('writes the picture of the run it printed, and says where', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasefence-timeline-'));
    try {
      const file = join(dir, 'run.svg');
      const { stdout } = await demo('--seed', String(DEFAULT_SEED), '--timeline', file);
      expect(stdout).toContain('FINAL CHECK: PASS');
      expect(stdout.trimEnd().endsWith(`timeline: ${file}`)).toBe(true);
      expect(readFileSync(file, 'utf8')).toBe(readFileSync(COMMITTED, 'utf8'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exits 2 with the usage when the file is missing', async () => {
    const failed = await demo('--timeline').then(
      () => null,
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toContain('--timeline FILE.svg');
  });
});
