/**
 * Tokens from etcd's revision: a claim mints `max(previous + 1, R + 1)` where R is the store revision its
 * read saw, so each grant's token lies in (R, the revision its transaction committed at]. Any later claim
 * reads after that commit, hence every token of a key exceeds every earlier one, also after the record
 * is deleted by hand (no stored token left to count from), across clients, and whatever else is written.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { Lease } from '../../src/lease.js';
import { openEtcdRig, type EtcdRig } from './etcd-rig.js';

let rig: EtcdRig | null = null;
const open = async (): Promise<EtcdRig> => (rig = await openEtcdRig());
afterEach(() => {
  rig?.close();
  rig = null;
});

type Step =
  | { readonly kind: 'claim'; readonly via: 0 | 1 }
  | { readonly kind: 'release' }
  | { readonly kind: 'revoke' }
  | { readonly kind: 'expire' }
  | { readonly kind: 'delete-record' }
  | { readonly kind: 'other-write' };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('claim' as const), via: fc.constantFrom(0 as const, 1 as const) }),
  fc.constant({ kind: 'release' as const }),
  fc.constant({ kind: 'revoke' as const }),
  fc.constant({ kind: 'expire' as const }),
  fc.constant({ kind: 'delete-record' as const }),
  fc.constant({ kind: 'other-write' as const }),
);

describe('tokens from the etcd revision', () => {
  it('strictly increase per key, each within (revision read, revision committed], across release, revoke, expiry, a deleted record and two clients', async () => {
    const r = await open();
    const second = r.storeWith({});
    const via = [r.leasesFor('w0', 1_000), r.leasesFor('w1', 1_000, second)] as const;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 20 }), async (steps) => {
        const key = `tokens:${++runs}`;
        const recordKey = `${r.prefix}lease/${key}`;
        let highest = 0n;
        let current: Lease | null = null;
        const issued = (token: bigint): void => {
          expect(token > highest, `token ${token} after ${highest}`).toBe(true);
          highest = token;
        };
        for (const step of steps) {
          switch (step.kind) {
            case 'claim': {
              const before = BigInt((await r.client.kv.range({ key: Buffer.from(recordKey) })).header.revision);
              const claimed = await via[step.via].claim(key);
              if (!claimed.ok) break;
              const committed = await r.modRevision(key);
              issued(claimed.lease.token);
              expect(claimed.lease.token > before).toBe(true);
              expect(claimed.lease.token <= committed).toBe(true);
              current = claimed.lease;
              break;
            }
            case 'release':
              if (current !== null) await via[0].release(current);
              break;
            case 'revoke': {
              const revoked = await r.store.revoke({ key, reason: 'test', by: 'ops', requireRecovery: false, expectedToken: null });
              if (revoked.ok) issued(revoked.token);
              break;
            }
            case 'expire':
              r.clock.advance(1_000);
              break;
            case 'delete-record':
              await r.client.delete().key(recordKey);
              current = null;
              break;
            case 'other-write':
              await r.client.put(`${r.prefix.slice(0, -1)}-other/${key}`).value(String(highest));
              break;
          }
        }
      }),
      { numRuns: 40 },
    );
  });
});
