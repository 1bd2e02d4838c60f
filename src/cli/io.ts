/**
 * What the CLI runs with: its streams and environment. Its own module so that the commands (`main.ts`)
 * and the parts they use (`confirm.ts`, `watch.ts`) import it without importing each other.
 */

/** The streams and environment the CLI runs with. */
export interface CliIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly stdin: NodeJS.ReadableStream & { readonly isTTY?: boolean };
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Resolves when the user interrupts (Ctrl-C): `watch` stops then. */
  readonly interrupted?: Promise<void>;
}
