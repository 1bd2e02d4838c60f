/**
 * The next fencing token for a key: one more than the last, or the store's floor when that is higher.
 * A floor lets a store that may lose its records (Redis without persistence) stay above every token it ever
 * issued, for example by deriving the floor from its clock.
 */
export function mintToken(previous: bigint, floor: bigint = 0n): bigint {
  const next = previous + 1n;
  return next > floor ? next : floor;
}
