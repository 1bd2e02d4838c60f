/**
 * The abort of one `withLease` run, with its AbortSignal made only when someone reads it: on Node 20 an
 * AbortSignal (its EventTarget) costs as much CPU as a whole claim + release on the memory store, and most
 * runs end without anybody listening. An abort before the first read is kept: the signal made later is
 * already aborted, with the same reason.
 */
export class LazyAbort {
  #controller: AbortController | null = null;
  #aborted = false;
  #reason: unknown = undefined;

  /** Whether `abort` was called. */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** The reason `abort` was called with (as the signal reports it); `undefined` until then. */
  get reason(): unknown {
    return this.#reason;
  }

  /** The run's signal, made on first read (already aborted, with the reason, if the run was). */
  get signal(): AbortSignal {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Aborts once (later calls do nothing); returns whether this call aborted. */
  abort(reason: unknown): boolean {
    if (this.#aborted) return false;
    // NOTE: `abort(undefined)` gives the signal a DOMException AbortError as its reason: made now, so that
    // `reason` and the signal read later agree.
    if (reason === undefined && this.#controller === null) this.#controller = new AbortController();
    this.#aborted = true;
    if (this.#controller === null) {
      this.#reason = reason;
    } else {
      this.#controller.abort(reason);
      this.#reason = this.#controller.signal.reason;
    }
    return true;
  }
}
