/**
 * The data the fleet protects, the journal of every write any worker attempted, and the final check that
 * compares the two: the protected data must equal exactly the accepted writes, in token order.
 */

/** One write a worker attempted on protected data. */
export interface WriteAttempt {
  readonly id: number;
  /** Where it goes: a lease key's ledger (fenced write) or a resource behind the token gate. */
  readonly target: string;
  readonly via: 'fenced write' | 'token gate';
  readonly token: bigint;
  readonly holder: string;
  readonly runId: string | null;
  /** What the write says, e.g. `batch 3`. */
  readonly what: string;
  /** When it was attempted, in ms since the run started (the store's clock). */
  readonly atMs: number;
  /** `accepted`, the refusal reason, or `null` while in flight. */
  verdict: string | null;
  /** For a refused write: the refusal in one line (which condition failed, expected and found). */
  detail: string | null;
}

/** The protected data: per target, the writes that landed, in the order they landed. */
export class ProtectedData {
  readonly #rows = new Map<string, WriteAttempt[]>();

  /** Applies a write. Called only from inside a fenced write or a token gate (or by the unfenced straw man). */
  append(write: WriteAttempt): void {
    const rows = this.#rows.get(write.target) ?? [];
    rows.push(write);
    this.#rows.set(write.target, rows);
  }

  /** Every target with its rows. */
  entries(): [string, readonly WriteAttempt[]][] {
    return [...this.#rows.entries()];
  }
}

/** Every write attempted, accepted or refused. */
export class Journal {
  readonly attempts: WriteAttempt[] = [];

  /** Records a write about to be attempted. */
  propose(fields: Omit<WriteAttempt, 'id' | 'verdict' | 'detail'>): WriteAttempt {
    const attempt: WriteAttempt = { ...fields, id: this.attempts.length + 1, verdict: null, detail: null };
    this.attempts.push(attempt);
    return attempt;
  }
}

const plural = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** One line of the final check. */
export interface CheckLine {
  readonly ok: boolean;
  readonly text: string;
}

/**
 * The final check. For every target: tokens never go down, every accepted write is present, no refused
 * write is present, and the rows are exactly the accepted writes sorted by token (stable).
 */
export function finalCheck(data: ProtectedData, journal: Journal): CheckLine[] {
  const lines: CheckLine[] = [];
  const stored = new Map(data.entries());
  const targets = [...new Set([...stored.keys(), ...journal.attempts.map((attempt) => attempt.target)])].sort();
  for (const target of targets) {
    const rows = stored.get(target) ?? [];
    const attempts = journal.attempts.filter((attempt) => attempt.target === target);
    const accepted = attempts.filter((attempt) => attempt.verdict === 'accepted');
    const refused = attempts.filter((attempt) => attempt.verdict !== 'accepted');
    const rowIds = new Set(rows.map((row) => row.id));
    const drops = rows.findIndex((row, i) => i > 0 && row.token < rows[i - 1]!.token);
    const missing = accepted.filter((attempt) => !rowIds.has(attempt.id));
    const leaked = refused.filter((attempt) => rowIds.has(attempt.id));
    const inTokenOrder = [...accepted].sort((a, b) => (a.token < b.token ? -1 : a.token > b.token ? 1 : 0));
    const equal = rows.length === inTokenOrder.length && rows.every((row, i) => row.id === inTokenOrder[i]!.id);
    const problems = [
      drops >= 0 ? `token went down at row ${drops + 1} (${rows[drops - 1]!.token} -> ${rows[drops]!.token})` : null,
      missing.length > 0 ? `${missing.length} accepted write(s) missing` : null,
      leaked.length > 0 ? `${leaked.length} refused write(s) present` : null,
      !equal && drops < 0 && missing.length === 0 && leaked.length === 0 ? 'rows differ from the accepted writes' : null,
    ].filter((problem) => problem !== null);
    const head = `${target.padEnd(25)} ${plural(rows.length, 'row')}, tokens [${rows.map((row) => row.token).join(',')}]`;
    lines.push(
      problems.length === 0
        ? {
            ok: true,
            text: `${head} = the ${plural(accepted.length, 'accepted write')} in token order; ${refused.length} refused, none present`,
          }
        : { ok: false, text: `${head}: ${problems.join('; ')}` },
    );
  }
  return lines;
}
