/**
 * Store-level helpers of the record-level specs: they claim through `Store.claim` (not `Leases`) and keep the
 * fence, so the specs of key state, holds, removal and submissions hold every store to the Store contract
 * whatever the lease API offers on top of it.
 */
import type { ClaimCommand, StoreClaimOutcome, SubmissionCommand } from '../fence/operations.js';
import type { Fence } from '../fence/types.js';
import { newSecret } from '../secret.js';
import type { Store } from '../store.js';
import { SPEC_TTL_MS } from './context.js';

/** A grant a spec holds: its fence and what the store answered. */
export interface HeldGrant {
  readonly fence: Fence;
  readonly granted: Extract<StoreClaimOutcome, { ok: true }>;
}

/** Claims `key` on the store for `holder`; `extra` overrides the command (`expect`, `runId`, `ttlMs`). */
export async function claimOnStore(
  store: Store,
  key: string,
  holder: string,
  extra: Partial<ClaimCommand> = {},
): Promise<StoreClaimOutcome> {
  const command: ClaimCommand = {
    key,
    holder,
    runId: null,
    secret: newSecret(),
    ttlMs: SPEC_TTL_MS,
    attributes: {},
    recovering: false,
    ...extra,
  };
  return store.claim(command);
}

/** Claims `key` and returns the grant's fence; fails the spec when the claim is refused. */
export async function mustClaimOnStore(store: Store, key: string, holder: string, extra: Partial<ClaimCommand> = {}): Promise<HeldGrant> {
  const secret = newSecret();
  const outcome = await claimOnStore(store, key, holder, { ...extra, secret });
  if (!outcome.ok) throw new Error(`expected ${holder} to claim ${key}, got ${outcome.reason}`);
  const fence: Fence = { key, token: outcome.token, secret, holder, runId: extra.runId ?? null };
  return { fence, granted: outcome };
}

/** A 64-hex-digit digest (what the lease API computes from a payload's canonical JSON), one per `label`. */
export function digestOf(label: 'a' | 'b' | 'c'): string {
  return label.repeat(64);
}

/** A submission command for `runId` with the payload digest `label`. */
export function submissionOf(runId: string, label: 'a' | 'b' | 'c' = 'a', bindToGrant = false): SubmissionCommand {
  return { runId, digest: digestOf(label), receiptJson: JSON.stringify({ runId, label }), bindToGrant };
}
