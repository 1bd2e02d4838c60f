/**
 * The fenced code blocks of a Markdown file, as the docs tests read them: language, flags and text, with the
 * line they start on and the output block that follows a runnable one.
 *
 * A block's info string is its language and then flags: ```ts no-run is type-checked but not run, ```ts
 * no-check is neither (an excerpt of a file, not a program), and ```text output is the expected standard
 * output of the runnable block just before it.
 */
import { readFileSync } from 'node:fs';

/** The languages the docs tests type-check (and, unless `no-run`, run). */
export const CHECKED_LANGUAGES = ['ts', 'js', 'cjs'] as const;
/** One of `CHECKED_LANGUAGES`. */
export type CheckedLanguage = (typeof CHECKED_LANGUAGES)[number];

/** A fenced code block of a Markdown file. */
export interface CodeBlock {
  /** The Markdown file, relative to the repository root. */
  readonly file: string;
  /** The 1-based line of the opening fence. */
  readonly line: number;
  readonly language: string;
  readonly flags: readonly string[];
  readonly code: string;
}

/** A block that the docs tests type-check, with what they need to run it. */
export interface CheckedBlock extends CodeBlock {
  readonly language: CheckedLanguage;
  /** Whether the block runs as a program (a `js` or `cjs` block without `no-run`). */
  readonly runnable: boolean;
  /** The `text output` block right after it: what the program must print. */
  readonly output: string | null;
}

const FENCE = /^```(\S*)(.*)$/;

/** Every fenced block of `markdown` (text of `file`), in order. */
export function codeBlocks(file: string, markdown: string): CodeBlock[] {
  const lines = markdown.split('\n');
  const blocks: CodeBlock[] = [];
  for (let index = 0; index < lines.length; index++) {
    const open = FENCE.exec(lines[index] ?? '');
    if (open === null) continue;
    const start = index;
    const body: string[] = [];
    for (index++; index < lines.length && lines[index] !== '```'; index++) body.push(lines[index] ?? '');
    if (index >= lines.length) throw new Error(`${file}:${start + 1}: a code block is never closed`);
    const flags = (open[2] ?? '')
      .trim()
      .split(/\s+/)
      .filter((flag) => flag !== '');
    blocks.push({ file, line: start + 1, language: open[1] ?? '', flags, code: `${body.join('\n')}\n` });
  }
  return blocks;
}

const isChecked = (block: CodeBlock): block is CodeBlock & { language: CheckedLanguage } =>
  (CHECKED_LANGUAGES as readonly string[]).includes(block.language) && !block.flags.includes('no-check');

/** The blocks of `file` (relative to `root`) that the docs tests type-check, with their expected output. */
export function checkedBlocks(root: string, file: string): CheckedBlock[] {
  const blocks = codeBlocks(file, readFileSync(`${root}/${file}`, 'utf8'));
  return blocks.flatMap((block, index) => {
    if (!isChecked(block)) return [];
    const next = blocks[index + 1];
    const output = next !== undefined && next.language === 'text' && next.flags.includes('output') ? next.code : null;
    const runnable = block.language !== 'ts' && !block.flags.includes('no-run');
    return [{ ...block, runnable, output }];
  });
}
