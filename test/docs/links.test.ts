/**
 * The README and the guides link to each other with real relative Markdown links that resolve: every
 * `[text](path#anchor)` that is not an absolute URL names a file of the repository, and an anchor names a
 * heading of its target (GitHub's slugs). A guide is named by a link, not by a backticked path.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const GUIDES = readdirSync(join(ROOT, 'docs'))
  .filter((file) => file.endsWith('.md'))
  .sort()
  .map((file) => `docs/${file}`);
const HISTORY = existsSync(join(ROOT, 'docs', 'history'))
  ? readdirSync(join(ROOT, 'docs', 'history'))
      .filter((file) => file.endsWith('.md'))
      .map((file) => `docs/history/${file}`)
  : [];
/** Every Markdown file a reader moves between. */
const FILES = ['README.md', 'BENCHMARKS.md', 'RELIABILITY.md', 'SECURITY.md', 'CONTRIBUTING.md', ...GUIDES, ...HISTORY].filter((file) =>
  existsSync(join(ROOT, file)),
);

/** `markdown` without its fenced code blocks (their `#` lines are no headings, their brackets no links). */
const prose = (markdown: string): string => markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of prose(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = (match[1] ?? '')
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** The relative link targets of `file`: `[text](target)`, not `https://`. */
function relativeLinks(file: string): string[] {
  const markdown = prose(readFileSync(join(ROOT, file), 'utf8'));
  return [...markdown.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1] ?? '').filter((target) => !/^https:\/\//.test(target));
}

test('every relative link of the README and the guides names a file of the repository and a heading in it', () => {
  const broken: string[] = [];
  for (const file of FILES) {
    for (const target of relativeLinks(file)) {
      const [path = '', anchor] = target.split('#');
      const resolved = path === '' ? file : relative(ROOT, normalize(join(ROOT, dirname(file), path)));
      if (!existsSync(join(ROOT, resolved))) {
        broken.push(`${file}: ${target} (no file ${resolved})`);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(readFileSync(join(ROOT, resolved), 'utf8')).has(anchor)) {
        broken.push(`${file}: ${target} (no heading #${anchor} in ${resolved})`);
      }
    }
  }
  expect(broken).toEqual([]);
});

test('the README and the guides name a guide with a link, not a backticked path', () => {
  const backticked = FILES.flatMap((file) =>
    [...prose(readFileSync(join(ROOT, file), 'utf8')).matchAll(/`(?:\.\.\/)?docs\/[\w/-]+\.md`/g)].map((match) => `${file}: ${match[0]}`),
  );
  expect(backticked).toEqual([]);
});

test("the README's pictures and HTML links are absolute URLs, which a package page can show", () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  expect(readme.match(/(?:src|href)="(?!https:\/\/)[^"]*"/g)).toBeNull();
});
