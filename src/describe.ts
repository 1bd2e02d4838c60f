import { printable } from './printable.js';
import type { FenceRefusal } from './fence/types.js';

function grantLabel(token: bigint | null, holder: string | null, runId: string | null): string {
  if (token === null) return 'no lease record';
  const who = [holder === null ? null : `holder ${holder}`, runId === null ? null : `run ${runId}`].filter((part) => part !== null);
  return who.length === 0 ? `token ${token}` : `token ${token} (${who.join(', ')})`;
}

const WHY: Record<FenceRefusal['reason'], string> = {
  missing: 'the lease record does not exist',
  'not-held': 'the store never issued this grant',
  expired: 'the grant expired',
  superseded: 'a newer grant took over',
  released: 'the grant was released',
  revoked: 'an operator revoked the grant',
  'wrong-secret': 'the secret does not prove this grant',
  'holder-mismatch': 'the holder or run does not match the grant',
  'attribute-mismatch': 'a bound attribute does not match',
};

/**
 * One line saying exactly which condition failed, for logs and error messages:
 * `lease lost on ramp:current (superseded: a newer grant took over): expected token 7 (run r1), found token 8 (run r2)`.
 * Control characters in keys, holders, runs, reasons and `by` are escaped (see `printable`): one line, always.
 */
export function describeRefusal(refusal: FenceRefusal): string {
  const { key, reason, expected, found, attribute, now } = refusal;
  let line = `lease lost on ${key} (${reason}: ${WHY[reason]}): expected ${grantLabel(expected.token, expected.holder, expected.runId)}, found ${grantLabel(found.token, found.holder, found.runId)}`;
  if (reason === 'expired' && found.expiresAt !== null)
    line += `, expired at ${new Date(found.expiresAt).toISOString()} (store now ${new Date(now).toISOString()})`;
  if (attribute !== null)
    line += `; attribute ${attribute.name}: expected ${JSON.stringify(attribute.expected)}, found ${JSON.stringify(attribute.found)}`;
  const { ending } = found;
  if ((reason === 'revoked' || reason === 'released') && ending !== null) {
    line += `; ${ending.kind} at ${new Date(ending.at).toISOString()}`;
    if (ending.by !== null) line += ` by ${ending.by}`;
    if (ending.reason !== null) line += `: ${ending.reason}`;
  }
  return printable(line);
}
