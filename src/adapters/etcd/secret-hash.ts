/**
 * Secrets at rest: an etcd lease record keeps the SHA-256 of a grant's secret, never the secret (anyone
 * with read access to etcd, a snapshot or a member's data dir cannot act as a holder). The store hashes
 * the secret a claim brings and the one every fence presents; the pure core compares the hashes.
 */
import type { ClaimCommand } from '../../fence/operations.js';
import type { Fence } from '../../fence/types.js';
import { hashSecret } from '../../secret-hash.js';

/** The fence with its secret replaced by the secret's hash, to judge against a stored record. */
export function hashedFence(fence: Fence): Fence {
  return { ...fence, secret: hashSecret(fence.secret) };
}

/** The claim with its secret replaced by the secret's hash: the grant the core builds stores only the hash. */
export function hashedClaim(command: ClaimCommand): ClaimCommand {
  return { ...command, secret: hashSecret(command.secret) };
}
