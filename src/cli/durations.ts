/**
 * Relative times for humans, in whole units rounded down: `12 s`, `4 min`, `6 h`, `3 d`.
 */

/** A duration in ms as the largest whole unit that fits (never negative). */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 120) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 120) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h`;
  return `${Math.floor(hours / 24)} d`;
}

/** `in 12 s` for a time after `now`, `12 s ago` for one before it. */
export function formatRelative(at: number, now: number): string {
  return at > now ? `in ${formatDuration(at - now)}` : `${formatDuration(now - at)} ago`;
}
