/**
 * The grants this process holds as far as it knows, for `leasefence.lease.held`. Bounded: a grant that
 * expires, is handed to another process or is revoked elsewhere is never heard of again here, so each is
 * kept only until the expiry its grant (or last renewal) announced, and at most `max` are kept (past it, the
 * oldest go first).
 */

/** The default `maxHeldLeases`. */
export const DEFAULT_MAX_HELD_LEASES = 10_000;

export interface HeldGrants {
  /** Counts a grant as held until `expiresAt` (store time, `now` its store's clock; `null`: no expiry). */
  hold(key: string, token: bigint, expiresAt: number | null, now: number): void;
  /** Stops counting a grant (`null`: no token presented, nothing to drop). */
  drop(key: string, token: bigint | null): void;
  /** How many grants are held, once those past their expiry are dropped. */
  count(): number;
}

export function heldGrants(max: number): HeldGrants {
  /** `key NUL token` -> when the grant ends, in `performance.now()` time (the store's clock may differ). */
  const held = new Map<string, number>();
  const dropExpired = (): void => {
    const now = performance.now();
    for (const [id, endsAt] of held) if (endsAt <= now) held.delete(id);
  };
  return {
    hold(key, token, expiresAt, now) {
      const id = `${key}\u0000${token}`;
      // NOTE: deleted first, so that a renewal moves the grant to the young end of the eviction order.
      held.delete(id);
      held.set(id, expiresAt === null ? Number.POSITIVE_INFINITY : performance.now() + (expiresAt - now));
      if (held.size > max) {
        dropExpired();
        // NOTE: down to nine tenths of `max`, so the next scan is at least max/10 claims away (O(1) a claim).
        const keep = Math.max(1, Math.floor(max * 0.9));
        for (const oldest of held.keys()) {
          if (held.size <= keep) break;
          held.delete(oldest);
        }
      }
    },
    drop(key, token) {
      if (token !== null) held.delete(`${key}\u0000${token}`);
    },
    count() {
      dropExpired();
      return held.size;
    },
  };
}
