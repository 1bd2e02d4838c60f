/** A fenced write a worker made (the same in the multi-process and the key-state races). */
export interface WriteEvent {
  readonly kind: 'write';
  readonly key: string;
  readonly token: string;
  readonly entry: string;
  readonly ok: boolean;
  readonly reason: string | null;
  readonly now: number;
}

/** What a worker process of the multi-process race reports (tokens as decimal text: IPC is JSON). */
export type ProcessEvent =
  | {
      readonly kind: 'grant';
      readonly key: string;
      readonly token: string;
      readonly acquiredAt: number;
      readonly expiresAt: number;
      readonly worker: number;
    }
  | { readonly kind: 'renew'; readonly key: string; readonly token: string; readonly expiresAt: number | null; readonly now: number }
  | WriteEvent
  | { readonly kind: 'release'; readonly key: string; readonly token: string; readonly now: number }
  | { readonly kind: 'revoke'; readonly key: string; readonly token: string; readonly now: number };

/** What a worker process of the key-state race reports (`sqlite-process-key-state-worker.ts`). */
export type KeyStateEvent =
  | {
      readonly kind: 'claim';
      readonly key: string;
      readonly ok: boolean;
      readonly reason: string | null;
      readonly token: string | null;
      readonly acquiredAt: number;
    }
  | WriteEvent
  | {
      readonly kind: 'set';
      readonly key: string;
      readonly changed: boolean;
      readonly ended: { readonly kind: string; readonly token: string } | null;
      readonly now: number;
    }
  | { readonly kind: 'remove'; readonly key: string; readonly token: string; readonly now: number };

/** What a worker process of the claim-next race reports (`sqlite-process-claim-next-worker.ts`). */
export type ClaimNextEvent =
  | { readonly kind: 'grant'; readonly key: string; readonly token: string; readonly acquiredAt: number; readonly expiresAt: number }
  | { readonly kind: 'idle'; readonly nextAt: number | null; readonly now: number }
  | { readonly kind: 'write'; readonly key: string; readonly token: string; readonly ok: boolean; readonly now: number }
  | { readonly kind: 'renew'; readonly key: string; readonly token: string; readonly expiresAt: number; readonly now: number }
  | { readonly kind: 'release'; readonly key: string; readonly token: string; readonly now: number };

/** What a worker process of the semaphore race reports (`sqlite-process-permits-worker.ts`). */
export type PermitEvent =
  | {
      readonly kind: 'grant';
      readonly key: string;
      readonly index: number;
      readonly token: string;
      readonly acquiredAt: number;
      readonly expiresAt: number;
      readonly live: number;
    }
  | { readonly kind: 'full'; readonly live: number; readonly nextAt: number | null; readonly now: number }
  | {
      readonly kind: 'write';
      readonly key: string;
      readonly token: string;
      readonly ok: boolean;
      readonly stale: boolean;
      readonly now: number;
    }
  | { readonly kind: 'renew'; readonly key: string; readonly token: string; readonly expiresAt: number; readonly now: number }
  | { readonly kind: 'release'; readonly key: string; readonly token: string; readonly now: number };
