/**
 * The confirmation a destructive command asks for on a terminal: the question on stderr (stdout stays
 * the command's output), one line of answer; only `y` or `yes` proceeds.
 */
import { createInterface } from 'node:readline';
import { printable } from '../printable.js';
import type { CliIo } from './io.js';

/** Asks `question` (one line, escaped: it names keys and holders) and resolves whether the answer was yes (end of input: no). */
export function confirm(io: CliIo, question: string): Promise<boolean> {
  const reader = createInterface({ input: io.stdin, output: io.stderr, terminal: false });
  io.stderr.write(printable(question));
  return new Promise((resolve) => {
    let answered = false;
    reader.once('line', (line) => {
      answered = true;
      reader.close();
      resolve(/^\s*y(es)?\s*$/i.test(line));
    });
    reader.once('close', () => {
      if (!answered) resolve(false);
    });
  });
}
