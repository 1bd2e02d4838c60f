/**
 * A fenced write's callback that refuses itself: after reading other data in the fenced step (for example
 * "the owner account became inactive"), it throws this, through its write context's `refuse(code, detail)`.
 * The store rolls the step back (nothing applies: not the write, not the checkpoint, not the submission) and
 * answers `{ ok: false, reason: 'write-refused', code, detail }`.
 */
import { InvalidArgumentError } from './errors.js';
import type { WriteRefusal } from './fence/operations.js';
import type { Fence, StoreTime } from './fence/types.js';

/** A refusal code: a short machine-readable name. */
const CODE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$/;

/** Longest `detail`, in UTF-16 code units. */
const MAX_DETAIL = 1_000;

/** Thrown by a write context's `refuse`; stores catch it and answer `write-refused`. */
export class WriteRefusedSignal extends Error {
  override readonly name = 'WriteRefusedSignal';
  constructor(
    readonly code: string,
    readonly detail: string | null,
  ) {
    super(detail === null ? `the fenced write refused itself: ${code}` : `the fenced write refused itself: ${code}: ${detail}`);
  }
}

/**
 * Throws the refusal of a fenced write from inside its callback. `code` is 1-100 characters of letters,
 * digits, `_ . : -` (starting with a letter or digit); `detail` at most 1,000 characters. A bad argument is
 * an `InvalidArgumentError`, which fails the write like any other throw (nothing applies).
 */
export function refuseWrite(code: unknown, detail?: unknown): never {
  if (typeof code !== 'string' || !CODE.test(code))
    throw new InvalidArgumentError(
      'refuse(code): code must be 1-100 characters of letters, digits, _ . : - (starting with a letter or digit)',
    );
  if (detail !== undefined && detail !== null && (typeof detail !== 'string' || detail.length > MAX_DETAIL))
    throw new InvalidArgumentError(`refuse(code, detail): detail must be a string of at most ${MAX_DETAIL} characters`);
  throw new WriteRefusedSignal(code, (detail as string | null | undefined) ?? null);
}

/** What a store answers for a refused write: the refusal's code and detail, under the fence's grant, at the store's now. */
export function writeRefused(
  fence: Pick<Fence, 'key' | 'token'>,
  refusal: { readonly code: string; readonly detail: string | null },
  now: StoreTime,
): WriteRefusal {
  return { ok: false, reason: 'write-refused', key: fence.key, code: refusal.code, detail: refusal.detail, token: fence.token, now };
}
