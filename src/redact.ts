/**
 * Log-safe copies of values that may carry a lease secret. A secret is a credential: it must not reach a
 * log through an error's message, its `cause` chain, `util.inspect` or `JSON.stringify`. Driver errors
 * carry the command that failed (ioredis `ReplyError.command.args`, node-redis and pg errors may quote
 * parameters), so leasefence never attaches a driver error as it is: it attaches `loggableCause(error)`.
 */

/** What replaces a secret in text. */
export const REDACTED = '[redacted]';

/** Lease secrets are 32 to 128 lowercase hex digits; anything that looks like one is redacted from text. */
const SECRET_LIKE = /(?<![0-9a-f])[0-9a-f]{32,128}(?![0-9a-f])/g;

/** How deep a `cause` chain is copied. */
const MAX_CAUSE_DEPTH = 4;

/** `text` with every secret-like run of hex digits replaced by `[redacted]`. */
export function redactText(text: string): string {
  return text.replace(SECRET_LIKE, REDACTED);
}

/**
 * A plain `Error` that keeps what helps an operator (the error's name, message and string or number
 * `code`, and the same of its causes) and drops everything else (command arguments, parameters,
 * connection objects), with secret-like text redacted. Never throws, whatever `error` is (a Proxy, an
 * object with throwing getters, a primitive).
 */
export function loggableCause(error: unknown, depth = 0): Error {
  let name = 'Error';
  let message: string;
  let code: string | number | undefined;
  let cause: unknown;
  try {
    if (typeof error === 'object' && error !== null) {
      const candidate = error as { name?: unknown; message?: unknown; code?: unknown; cause?: unknown };
      if (typeof candidate.name === 'string') name = candidate.name;
      message = typeof candidate.message === 'string' ? candidate.message : Object.prototype.toString.call(error);
      if (typeof candidate.code === 'string' || typeof candidate.code === 'number') code = candidate.code;
      cause = candidate.cause;
    } else {
      message = String(error);
    }
  } catch {
    message = 'an error that could not be read';
  }
  const options = cause !== undefined && depth < MAX_CAUSE_DEPTH ? { cause: loggableCause(cause, depth + 1) } : undefined;
  const copy = new Error(redactText(message), options);
  copy.name = redactText(name);
  if (code !== undefined)
    Object.defineProperty(copy, 'code', { value: typeof code === 'string' ? redactText(code) : code, enumerable: true });
  return copy;
}
