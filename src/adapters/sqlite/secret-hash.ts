/**
 * Secrets at rest: the lease table keeps the SHA-256 of a grant's secret, never the secret. The store hashes
 * the secret a claim brings and the one every fence presents, and the pure core compares the hashes exactly
 * as it would compare the secrets (a secret is 128 random bits: its hash needs no salt or stretching).
 */
import { hashSecret, type Fence } from '../../store-entry.js';

/** How many secrets' hashes `hashOf` remembers: the grants a process works under at once, with room to spare. */
const REMEMBERED = 256;
const remembered = new Map<string, string>();

/**
 * The hash of `secret`, remembered for the grant's next operation. NOTE: a grant's secret is hashed by its claim and
 * again by every renew, checkpoint, fenced write and release: SHA-256 through `createHash` costs 1-2 µs a call
 * (measured), the remembered hash a Map lookup. The process holds the plain secret in the lease handle anyway, so its
 * hash kept beside it tells nothing new; only the hash ever reaches the file. The oldest is forgotten first.
 */
export function hashOf(secret: string): string {
  let hash = remembered.get(secret);
  if (hash === undefined) {
    hash = hashSecret(secret);
    if (remembered.size >= REMEMBERED) remembered.delete(remembered.keys().next().value as string);
    remembered.set(secret, hash);
  }
  return hash;
}

/** The fence with its secret replaced by the secret's hash, to judge against a stored record. */
export function hashedFence(fence: Fence): Fence {
  return { ...fence, secret: hashOf(fence.secret) };
}

/**
 * The claim (or claim-next) with its secret replaced by the secret's hash: the grant the core builds stores only
 * the hash.
 */
export function hashedClaim<C extends { readonly secret: string }>(command: C): C {
  return { ...command, secret: hashOf(command.secret) };
}
