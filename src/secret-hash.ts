/**
 * Secrets at rest: a durable store keeps a hash of each grant's secret, never the secret, so whoever can
 * read the store (a replica, a backup, a statement log) cannot act as a holder. A secret is 128 random
 * bits, so a plain SHA-256 needs no salt or stretching.
 */
import { createHash } from 'node:crypto';
import { InvalidArgumentError } from './errors.js';
import { describe } from './validate.js';

/** Lowercase hex SHA-256 of the secret's UTF-8 bytes: what a store keeps and compares instead of the secret. */
export function hashSecret(secret: string): string {
  if (typeof secret !== 'string') throw new InvalidArgumentError(`hashSecret needs the secret as a string, got ${describe(secret)}`);
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}
