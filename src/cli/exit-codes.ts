/**
 * The CLI's exit codes: stable, documented in the README, and the same for every command.
 */
export const EXIT = {
  /** The command did what was asked. */
  ok: 0,
  /** An unexpected failure (a bug, or an error leasefence does not classify). */
  failure: 1,
  /** Bad usage: unknown command or option, missing argument, invalid value (nothing was sent). */
  usage: 2,
  /** The key (or gate resource) does not exist. */
  notFound: 3,
  /** The store refused: a revoke found nothing to revoke, or `--expected-token` was not current. */
  refused: 4,
  /** The store could not be reached, its driver is not installed, or the outcome is unknown. */
  unavailable: 5,
  /** The operator declined the confirmation. */
  aborted: 6,
} as const;

/** One of the CLI's exit codes. */
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/**
 * An error the CLI reports as one line on stderr (escaped: it may quote caller text), followed by the usage
 * when `options.usage`, and exits with `code`.
 */
export class CliError extends Error {
  override name = 'CliError' as const;
  readonly code: ExitCode;
  /** Whether the usage text follows the message. */
  readonly usage: boolean;
  constructor(code: ExitCode, message: string, options: { readonly usage?: boolean } = {}) {
    super(message);
    this.code = code;
    this.usage = options.usage === true;
  }
}
