/**
 * The reference model of one lease key, written from DESIGN.md and independent of `src/fence`: a key has at
 * most one grant; a grant is expired once the store's now reaches its expiry (or a test hook expired it);
 * a fence is judged by "what happened to my grant" (still current? released or revoked last? or did a newer
 * grant come?), then by the proof it carries, then by bound attributes, then by time.
 */

/** A grant as the model knows it. */
export interface ModelGrant {
  readonly token: bigint;
  readonly worker: number;
  readonly runId: string | null;
  readonly attributes: Readonly<Record<string, string>>;
  /** Store time of expiry, `null` for none; only compared with `now` when the clock is controlled. */
  expiresAt: number | null;
  /** Set by the expire-now hook on stores whose clock the test does not control. */
  forcedExpired: boolean;
}

/** A handle a worker got from a granted claim. */
export interface ModelHandle {
  readonly token: bigint;
  readonly runId: string | null;
}

/** How a grant ended, as the model records it. */
export type ModelEndingKind = 'released' | 'expired' | 'revoked';

/** The model of one key, and what the workers hold. */
export interface ModelState {
  /** Whether the test controls the store's clock (then `now` is exact). */
  readonly clocked: boolean;
  /** The store's now (exact only when `clocked`). */
  now: number;
  /** The key has been claimed at least once. */
  exists: boolean;
  /** The highest token issued or burned. */
  token: bigint;
  grant: ModelGrant | null;
  ending: { readonly kind: ModelEndingKind; readonly token: bigint } | null;
  checkpoint: { readonly value: unknown; readonly token: bigint } | null;
  recoveryRequired: boolean;
  /** Entries appended under the fence, in order. */
  readonly ledger: string[];
  /** Per worker, every handle it was ever granted (stale ones included). */
  readonly handles: ModelHandle[][];
  /** Counter for unique ledger entries. */
  writes: number;
}

/** What the model expects a fenced operation to answer. */
export type ModelVerdict =
  | 'ok'
  | 'superseded'
  | 'released'
  | 'revoked'
  | 'expired'
  | 'attribute-mismatch'
  | 'wrong-secret'
  | 'holder-mismatch';

/** The model of a key never claimed, at store time `now`. */
export function initialModel(clocked: boolean, now: number, workers: number): ModelState {
  return {
    clocked,
    now,
    exists: false,
    token: 0n,
    grant: null,
    ending: null,
    checkpoint: null,
    recoveryRequired: false,
    ledger: [],
    handles: Array.from({ length: workers }, () => []),
    writes: 0,
  };
}

/** Whether the model's grant is expired at the model's now. */
export function isExpired(model: ModelState, grant: ModelGrant): boolean {
  if (!model.clocked) return grant.forcedExpired;
  return grant.expiresAt !== null && model.now >= grant.expiresAt;
}

/** Whether someone holds the key right now. */
export function isHeld(model: ModelState): boolean {
  return model.grant !== null && !isExpired(model, model.grant);
}

/**
 * The verdict for a worker presenting `handle` (optionally forged, optionally requiring attributes).
 * First: is it still the key's grant? If not, the last thing that happened to it, or a newer grant.
 */
export function verdictFor(
  model: ModelState,
  worker: number,
  handle: ModelHandle,
  options: { readonly forged?: 'secret' | 'run'; readonly requires?: Readonly<Record<string, string>> } = {},
): ModelVerdict {
  const { grant, ending } = model;
  if (grant === null || grant.token !== handle.token) {
    if (grant === null && ending !== null && ending.token === handle.token && ending.kind !== 'expired') return ending.kind;
    return 'superseded';
  }
  if (options.forged === 'secret') return 'wrong-secret';
  if (options.forged === 'run' || grant.worker !== worker || grant.runId !== handle.runId) return 'holder-mismatch';
  for (const [name, value] of Object.entries(options.requires ?? {})) {
    if (grant.attributes[name] !== value) return 'attribute-mismatch';
  }
  return isExpired(model, grant) ? 'expired' : 'ok';
}

/** The `previous` a claim would report: an expired grant it replaces, or the last ending. */
export function previousEnding(model: ModelState): { kind: ModelEndingKind; token: bigint } | null {
  return model.grant !== null ? { kind: 'expired', token: model.grant.token } : model.ending;
}
