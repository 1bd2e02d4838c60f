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
export type ModelEndingKind = 'released' | 'expired' | 'revoked' | 'state-changed';

/** A grant's ending as the model records it; `change` for `state-changed`: the first changed name and its value before. */
export interface ModelEnding {
  readonly kind: ModelEndingKind;
  readonly token: bigint;
  readonly change?: { readonly name: string; readonly from: string | null };
}

/** A submission recorded with a fenced write. */
export interface ModelSubmission {
  readonly runId: string;
  readonly digest: string;
  readonly token: bigint;
  readonly worker: number;
}

/** Submissions a key keeps (the Store contract's retention, written here rather than imported). */
export const MODEL_SUBMISSION_RETENTION = 32;

/** A place in the key's queue: the waiter's id, its worker, and when the place expires (store time). */
export interface ModelWaiter {
  readonly id: string;
  readonly worker: number;
  expiresAt: number;
}

/** The model of one key, and what the workers hold. */
export interface ModelState {
  /** Whether the test controls the store's clock (then `now` is exact). */
  readonly clocked: boolean;
  /** Whether the key is permit 1 of a semaphore (the run acquires it with `acquirePermit` too). */
  readonly permits: boolean;
  /** The store's now (exact only when `clocked`). */
  now: number;
  /** The key has a record: claimed, or its state set, since it was created or last removed. */
  exists: boolean;
  /** The record's token: the highest issued or burned since it was created (0 when its state created it). */
  token: bigint;
  /** The highest token the key ever had, across removals: every later grant's token is above it. */
  highest: bigint;
  grant: ModelGrant | null;
  ending: ModelEnding | null;
  /** The key's state: values set by `setKeyState`. */
  state: Record<string, string>;
  /** Claims are held back until this store time (on stores whose clock the test does not control: until cancelled or granted). */
  heldUntil: number | null;
  /** Submissions recorded, oldest first. */
  submissions: ModelSubmission[];
  /** The key's queue of waiting claims, oldest first (places expire only on a store whose clock the test controls). */
  waiters: ModelWaiter[];
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
  | 'missing'
  | 'not-held'
  | 'state-changed'
  | 'superseded'
  | 'released'
  | 'revoked'
  | 'expired'
  | 'attribute-mismatch'
  | 'wrong-secret'
  | 'holder-mismatch';

/** The model of a key never claimed, at store time `now` (`permits`: the key is permit 1 of a semaphore). */
export function initialModel(clocked: boolean, now: number, workers: number, permits = false): ModelState {
  return {
    clocked,
    permits,
    now,
    exists: false,
    token: 0n,
    highest: 0n,
    grant: null,
    ending: null,
    state: {},
    heldUntil: null,
    submissions: [],
    waiters: [],
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
  if (!model.exists) return 'missing';
  if (grant === null || grant.token !== handle.token) {
    // NOTE: a record re-created by a state change after a removal starts at token 0: older fences were never its.
    if (handle.token > model.token) return 'not-held';
    // NOTE: 'expired' too: a state change records an expired grant's ending without a new grant.
    if (grant === null && ending !== null && ending.token === handle.token) return ending.kind;
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
  const ending = model.grant !== null ? { kind: 'expired' as const, token: model.grant.token } : model.ending;
  return ending === null ? null : { kind: ending.kind, token: ending.token };
}

/** Whether claims are held back now. */
export function isHeldBack(model: ModelState): boolean {
  return model.heldUntil !== null && (!model.clocked || model.now < model.heldUntil);
}

/** Names in code-unit order (`<` on strings), not locale order. */
export function inCodeUnitOrder(names: readonly string[]): string[] {
  return [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The first name (code-unit order) whose value in `wanted` differs from the key's state, or `null`. */
export function firstDifference(model: ModelState, wanted: Readonly<Record<string, string | null>>): string | null {
  return inCodeUnitOrder(Object.keys(wanted)).find((name) => (wanted[name] ?? null) !== (model.state[name] ?? null)) ?? null;
}

/** The model after an operator removed the key's record: nothing kept but the highest token. */
export function removeRecord(model: ModelState): void {
  model.highest = model.token > model.highest ? model.token : model.highest;
  model.exists = false;
  model.token = 0n;
  model.grant = null;
  model.ending = null;
  model.state = {};
  model.heldUntil = null;
  model.submissions = [];
  model.waiters = [];
  model.checkpoint = null;
  model.recoveryRequired = false;
}

/** The live places of the key's queue, in order (on an unclocked store places never expire within a run). */
export function liveModelWaiters(model: ModelState): ModelWaiter[] {
  return model.clocked ? model.waiters.filter((waiter) => model.now < waiter.expiresAt) : model.waiters;
}
