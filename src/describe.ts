import { printable } from './printable.js';
import type {
  ClaimHeld,
  ClaimRecoveryRequired,
  ClaimHeldBack,
  ClaimStateMismatch,
  ReplayConflict,
  SubmissionReplayed,
  WriteRefusal,
} from './fence/operations.js';
import type { AddItemsOutcome, ClaimNextIdle } from './fence/claim-next.js';
import type { SemaphoreFull } from './fence/permits.js';
import type { AttributeMismatch, FenceRefusal, StoreTime } from './fence/types.js';
import type { CheckTtlInsufficient, ClaimRefusal } from './refusals.js';

/** An `addItems` refused because a key is an item of another set. */
export type AddItemsRefusal = Extract<AddItemsOutcome, { ok: false }>;

/**
 * Every refusal `describeRefusal` explains: a fence's, a fenced write's own, a submission's, a check's, a claim's,
 * a claim-next's `idle`, an acquire's `full` and an `addItems`'s `in-another-set`.
 */
export type DescribableRefusal =
  | FenceRefusal
  | WriteRefusal
  | SubmissionReplayed
  | ReplayConflict
  | CheckTtlInsufficient
  | ClaimRefusal
  | ClaimNextIdle
  | SemaphoreFull
  | AddItemsRefusal;

function grantLabel(token: bigint | null, holder: string | null, runId: string | null): string {
  if (token === null) return 'no lease record';
  const who = [holder === null ? null : `holder ${holder}`, runId === null ? null : `run ${runId}`].filter((part) => part !== null);
  return who.length === 0 ? `token ${token}` : `token ${token} (${who.join(', ')})`;
}

const WHY: Record<FenceRefusal['reason'], string> = {
  missing: 'the lease record does not exist: never created, or deleted by an operator',
  'not-held': 'the store never issued this grant',
  expired: 'the grant expired',
  superseded: 'a newer grant took over',
  released: 'the grant was released',
  revoked: 'an operator revoked the grant',
  'state-changed': "the key's state changed",
  'wrong-secret': 'the secret does not prove this grant',
  'holder-mismatch': 'the holder or run does not match the grant',
  'attribute-mismatch': 'a bound attribute does not match',
};

const time = (at: StoreTime): string => new Date(at).toISOString();

/** A key-state value as the seeds wrote it: `tier=3`; an absent one as `<absent>`. */
const stateValue = (value: string | null): string => (value === null ? '<absent>' : value);

/** "the tier moved: expected tier=3, found 4" (a state value, expected vs found). */
function stateMoved(field: AttributeMismatch): string {
  return `the ${field.name} moved: expected ${field.name}=${stateValue(field.expected)}, found ${stateValue(field.found)}`;
}

/**
 * One line saying exactly which condition failed, for logs and error messages:
 * `lease lost on ramp:current (superseded: a newer grant took over): expected token 7 (run r1), found token 8 (run r2)`;
 * `lease lost on ramp:current (state-changed: the tier moved: expected tier=3, found 4): ...`;
 * `claim refused on item:9 (held-back: held back until 2026-12-02T06:00:00.000Z)`.
 * Every refusal of the API is accepted (a fence's, a fenced write's own, a submission's, a check's, a claim's).
 * Control characters in keys, holders, runs, reasons and `by` are escaped (see `printable`): one line, always.
 */
export function describeRefusal(refusal: DescribableRefusal): string {
  switch (refusal.reason) {
    case 'write-refused':
      return printable(
        `fenced write refused on ${refusal.key} (write-refused: the write refused itself with ${refusal.code}${refusal.detail === null ? '' : `: ${refusal.detail}`}): nothing applied (token ${refusal.token})`,
      );
    case 'replayed': {
      const { submission } = refusal;
      return printable(
        `submission replayed on ${refusal.key} (replayed: run ${submission.runId} was recorded with this payload under ${grantLabel(submission.token, submission.holder, null)} at ${time(submission.at)}): nothing written now`,
      );
    }
    case 'replay-conflict': {
      const { expected, found } = refusal;
      const what =
        expected.digest === found.digest
          ? `recorded under another grant: expected token ${expected.token}, found ${grantLabel(found.token, found.holder, null)}`
          : `recorded with another payload: expected digest ${expected.digest.slice(0, 12)}, found ${found.digest.slice(0, 12)} under ${grantLabel(found.token, found.holder, null)}`;
      return printable(`submission refused on ${refusal.key} (replay-conflict: run ${expected.runId} was ${what}): nothing written`);
    }
    case 'ttl-insufficient':
      return printable(
        `check refused on ${refusal.key} (ttl-insufficient: ${refusal.remainingMs} ms left, at least ${refusal.minTtlMs} required): token ${refusal.token} expires at ${time(refusal.expiresAt)} (store now ${time(refusal.now)})`,
      );
    case 'idle': {
      const next =
        refusal.nextAt === null
          ? 'none will become claimable by time alone (empty, held without expiry, blocked for recovery or not matching expect)'
          : `the next may be claimable at ${time(refusal.nextAt)}`;
      return printable(`claim-next idle on set ${refusal.set} (idle: no item claimable now; ${next}) (store now ${time(refusal.now)})`);
    }
    case 'full':
      return describeSemaphoreFull(refusal);
    case 'in-another-set':
      return printable(
        `addItems refused on set ${refusal.set} (in-another-set: ${refusal.key} is an item of set ${refusal.otherSet}): nothing added`,
      );
    case 'held':
    case 'recovery-required':
    case 'held-back':
    case 'state-mismatch':
    case 'queued':
    case 'run-already-acquired':
      return describeClaimRefusal(refusal);
    default:
      return describeFenceRefusal(refusal);
  }
}

/** A claim's refusal in one line (also the message of `claimOrThrow`'s errors for the newer reasons). */
export function describeClaimRefusal(refusal: ClaimRefusal): string {
  const until = (expiresAt: StoreTime | null): string => (expiresAt === null ? 'until revoked' : `until ${time(expiresAt)}`);
  let why: string;
  switch (refusal.reason) {
    case 'held': {
      const held: ClaimHeld = refusal;
      why = `held by ${grantLabel(held.token, held.holder, held.runId)} ${until(held.expiresAt)}`;
      break;
    }
    case 'run-already-acquired':
      why = `this holder and run hold it already: ${grantLabel(refusal.token, refusal.holder, refusal.runId)} ${until(refusal.expiresAt)}`;
      break;
    case 'queued': {
      const { first, position, waiting } = refusal;
      const place = position === null ? 'this claim does not wait (jumpQueue: true takes it first)' : `this claim is number ${position}`;
      why = `${waiting} claim${waiting === 1 ? '' : 's'} wait${waiting === 1 ? 's' : ''} first, ${place}; the first waiter is ${first.holder}, queued at ${time(first.arrivedAt)}, its place lasts until ${time(first.expiresAt)}`;
      break;
    }
    case 'held-back': {
      const back: ClaimHeldBack = refusal;
      why = `held back until ${time(back.heldUntil)} (store now ${time(back.now)})`;
      break;
    }
    case 'state-mismatch': {
      const mismatch: ClaimStateMismatch = refusal;
      why = `the key's state differs from the claim's expect: ${stateMoved(mismatch.field)}`;
      break;
    }
    default: {
      const recovery: ClaimRecoveryRequired = refusal;
      why = `revoked with a checkpoint (token ${recovery.checkpoint?.token ?? '?'}) to recover: claim with { recovering: true }`;
    }
  }
  return printable(`claim refused on ${refusal.key} (${refusal.reason}: ${why})`);
}

function describeFenceRefusal(refusal: FenceRefusal): string {
  const { key, reason, expected, found, attribute, now } = refusal;
  const why = reason === 'state-changed' && attribute !== null ? stateMoved(attribute) : WHY[reason];
  let line = `lease lost on ${key} (${reason}: ${why}): expected ${grantLabel(expected.token, expected.holder, expected.runId)}, found ${grantLabel(found.token, found.holder, found.runId)}`;
  if (reason === 'expired' && found.expiresAt !== null) line += `, expired at ${time(found.expiresAt)} (store now ${time(now)})`;
  if (attribute !== null && reason !== 'state-changed')
    line += `; attribute ${attribute.name}: expected ${JSON.stringify(attribute.expected)}, found ${JSON.stringify(attribute.found)}`;
  const { ending } = found;
  if ((reason === 'revoked' || reason === 'released' || reason === 'state-changed') && ending !== null) {
    line += `; ${ending.kind} at ${time(ending.at)}`;
    if (ending.by !== null) line += ` by ${ending.by}`;
    if (ending.reason !== null) line += `: ${ending.reason}`;
  }
  return printable(line);
}

/**
 * "semaphore pool full (full: 3 of limit 3 live: permit 1 token 7 (holder w1) until ..., ...; a permit may free at ...)":
 * the live holders (the first 5), the indexes not grantable, and when one may free.
 */
export function describeSemaphoreFull(refusal: SemaphoreFull): string {
  const shown = refusal.live.slice(0, 5).map((permit) => {
    const until = permit.expiresAt === null ? 'until revoked' : `until ${time(permit.expiresAt)}`;
    return `permit ${permit.index} ${grantLabel(permit.token, permit.holder, permit.runId)} ${until}`;
  });
  const more = refusal.live.length > shown.length ? [`${refusal.live.length - shown.length} more`] : [];
  const unavailable =
    refusal.unavailable.length === 0 ? '' : `; permits ${refusal.unavailable.join(', ')} blocked for recovery, held back or busy`;
  const next = refusal.nextAt === null ? 'no permit frees by time alone' : `a permit may free at ${time(refusal.nextAt)}`;
  const live = [...shown, ...more].join(', ');
  return printable(
    `semaphore ${refusal.semaphore} full (full: ${refusal.live.length} of limit ${refusal.limit} live${live === '' ? '' : `: ${live}`}${unavailable}; ${next}) (store now ${time(refusal.now)})`,
  );
}
