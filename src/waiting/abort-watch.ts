/**
 * One `abort` listener per signal, however many waiting claims share it: a shutdown signal passed to many
 * waiting claims would otherwise add one listener each (and pass Node's 10-listener leak warning).
 */

interface AbortWatch {
  readonly callbacks: Set<() => void>;
  readonly dispatch: () => void;
}

const watches = new WeakMap<AbortSignal, AbortWatch>();

/** Calls `callback` once when `signal` aborts; the returned function stops that (idempotent). */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let watch = watches.get(signal);
  if (watch === undefined) {
    const callbacks = new Set<() => void>();
    const dispatch = (): void => {
      watches.delete(signal);
      for (const waiting of [...callbacks]) waiting();
    };
    watch = { callbacks, dispatch };
    watches.set(signal, watch);
    signal.addEventListener('abort', dispatch, { once: true });
  }
  // NOTE: a wrapper per call, so one callback registered twice is two registrations.
  const entry = (): void => callback();
  const { callbacks, dispatch } = watch;
  callbacks.add(entry);
  return () => {
    if (!callbacks.delete(entry) || callbacks.size > 0) return;
    signal.removeEventListener('abort', dispatch);
    if (watches.get(signal)?.callbacks === callbacks) watches.delete(signal);
  };
}
