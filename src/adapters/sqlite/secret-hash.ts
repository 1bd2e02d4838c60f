/**
 * Secrets at rest: the lease table keeps the SHA-256 of a grant's secret, never the secret. The store hashes
 * the secret a claim brings and the one every fence presents, and the pure core compares the hashes exactly
 * as it would compare the secrets (a secret is 128 random bits: its hash needs no salt or stretching).
 */
import { hashSecret, type Fence } from '../../store-entry.js';

/** The fence with its secret replaced by the secret's hash, to judge against a stored record. */
export function hashedFence(fence: Fence): Fence {
  return { ...fence, secret: hashSecret(fence.secret) };
}

/**
 * The claim (or claim-next) with its secret replaced by the secret's hash: the grant the core builds stores only
 * the hash.
 */
export function hashedClaim<C extends { readonly secret: string }>(command: C): C {
  return { ...command, secret: hashSecret(command.secret) };
}
