/**
 * Text from callers and stores (keys, holders, run ids, reasons, `by`) ends up in log lines and terminals.
 * Printed raw, a newline forges a second log line and an ANSI escape rewrites the terminal; so every
 * human-readable message leasefence builds passes through `printable`.
 */

/**
 * C0 and C1 controls, DEL, the Unicode line and paragraph separators, and the bidirectional overrides and
 * isolates (which can make a line read differently from what it says).
 */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const SHORT_ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeOne(character: string): string {
  return SHORT_ESCAPES[character] ?? `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** `text` with every control, line-separator and bidi-override character written as an escape (`\n`, `\u001b`). */
export function printable(text: string): string {
  // NOTE: test first: nearly every message has nothing to escape, and `replace` would copy it anyway.
  UNPRINTABLE.lastIndex = 0;
  return UNPRINTABLE.test(text) ? text.replace(UNPRINTABLE, escapeOne) : text;
}
