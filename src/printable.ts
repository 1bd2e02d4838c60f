/**
 * Text from callers and stores (keys, holders, run ids, reasons, `by`) ends up in log lines and terminals.
 * Printed raw, a newline forges a second log line and an ANSI escape rewrites the terminal; so every
 * human-readable message leasefence builds passes through `printable`.
 *
 * The escaping is injective: the backslash itself is escaped (`\\`), so two different texts never print
 * the same (a key with a real newline prints `a\nb`, a key with a backslash and an `n` prints `a\\nb`), and
 * `parsePrintable` turns what was printed back into the text exactly.
 */

/**
 * The backslash (the escape character), C0 and C1 controls, DEL, the Unicode line and paragraph separators,
 * and the bidirectional overrides and isolates (which can make a line read differently from what it says).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is what this pattern is for
const UNPRINTABLE = /[\\\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const SHORT_ESCAPES: Readonly<Record<string, string>> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
const SHORT_UNESCAPES: Readonly<Record<string, string>> = { '\\': '\\', n: '\n', r: '\r', t: '\t' };

function escapeOne(character: string): string {
  return SHORT_ESCAPES[character] ?? `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/**
 * `text` with the backslash and every control, line-separator and bidi-override character written as an
 * escape (`\\`, `\n`, `\u001b`).
 */
export function printable(text: string): string {
  // NOTE: test first: nearly every message has nothing to escape, and `replace` would copy it anyway.
  UNPRINTABLE.lastIndex = 0;
  return UNPRINTABLE.test(text) ? text.replace(UNPRINTABLE, escapeOne) : text;
}

/** An escape `parsePrintable` reads: `\\`, `\n`, `\r`, `\t`, `\uXXXX` (four hex digits), or anything else after `\` (refused). */
const ESCAPE = /\\(u[0-9a-fA-F]{4}|.|$)/gs;

/**
 * The text that `printed` is the `printable` form of: `parsePrintable(printable(text)) === text` for every
 * text. Reads `\\`, `\n`, `\r`, `\t` and `\uXXXX`; returns `null` for any other backslash sequence (a lone
 * trailing `\` included), which `printable` never writes.
 */
export function parsePrintable(printed: string): string | null {
  if (!printed.includes('\\')) return printed;
  let invalid = false;
  const text = printed.replace(ESCAPE, (_, sequence: string) => {
    if (sequence.length === 5) return String.fromCharCode(Number.parseInt(sequence.slice(1), 16));
    const character = SHORT_UNESCAPES[sequence];
    if (character === undefined) invalid = true;
    return character ?? '';
  });
  return invalid ? null : text;
}
