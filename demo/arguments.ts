/**
 * The command line of `npm run demo`: `--seed N` (or `DEMO_SEED=N`), `--unfenced`, `--timeline FILE.svg`.
 * Anything else is refused: a misspelt `--unfenced` must not quietly run the fenced fleet and pass.
 */
import { DEFAULT_SEED } from './fleet-run.js';

/** How `npm run demo` was asked to run. */
export interface DemoArguments {
  readonly seed: number;
  readonly unfenced: boolean;
  /** Where to draw the timeline, or `undefined` for no picture. */
  readonly timelineFile: string | undefined;
}

/** The usage line printed (with exit code 2) for a bad command line. */
export const DEMO_USAGE =
  'usage: npm run demo -- [--seed N] [--unfenced] [--timeline FILE.svg]   (N: a non-negative integer; or DEMO_SEED=N)';

const isSeed = (text: string): boolean => /^[0-9]+$/.test(text) && Number.isSafeInteger(Number(text));

/** Parses `argv` (after the script) with `DEMO_SEED` from `env`; `null` when it is not a valid command line. */
export function parseDemoArguments(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): DemoArguments | null {
  let seedText: string | undefined;
  let unfenced = false;
  let timelineFile: string | undefined;
  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index];
    if (argument === '--unfenced') unfenced = true;
    else if (argument === '--seed' || argument === '--timeline') {
      const value = argv[++index];
      if (value === undefined || value === '' || value.startsWith('--')) return null;
      if (argument === '--seed') seedText = value;
      else timelineFile = value;
    } else return null;
  }
  const fromEnv = env['DEMO_SEED'];
  const text = seedText ?? (fromEnv === '' ? undefined : fromEnv);
  if (text !== undefined && !isSeed(text)) return null;
  return { seed: text === undefined ? DEFAULT_SEED : Number(text), unfenced, timelineFile };
}
