/**
 * Issue 29 item 12: a checkpoint's size is counted while it is copied, so a value whose JSON is far over the
 * limit (a few small arrays reused as a DAG expand to gigabytes) is refused after at most the limit's worth
 * of work, and the early stop changes no answer: a value is accepted exactly when its JSON fits.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { isLeaseError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import { DEFAULT_MAX_CHECKPOINT_BYTES, MAX_CHECKPOINT_BYTES_LIMIT, serializeCheckpoint, utf8Length } from '../../src/validate.js';
import { mustClaim } from '../conformance/context.js';
import { spyOn } from './spy-store.js';

/** `serializeCheckpoint`'s answer: the text, or the code of what it threw. */
function answer(value: unknown, maxBytes: number): { readonly json: string } | { readonly refused: string } {
  try {
    return { json: serializeCheckpoint(value, maxBytes) };
  } catch (error) {
    return { refused: isLeaseError(error) ? error.code : String(error) };
  }
}

/** 23 levels of one small array referenced twice by the next: 2^23 copies of the leaf once expanded. */
function sharedArrays(visits: { count: number }): unknown {
  const leaf = new Proxy([1, 2, 3], {
    ownKeys(target) {
      visits.count += 1;
      return Reflect.ownKeys(target);
    },
  });
  let node: unknown = leaf;
  for (let level = 0; level < 23; level += 1) node = [node, node];
  return node;
}

describe('a checkpoint is sized while it is copied', () => {
  it('23 small arrays reused as a DAG are refused after at most the limit of bytes of work, before any I/O', async () => {
    const visits = { count: 0 };
    const dag = sharedArrays(visits);
    const spy = spyOn(createMemoryStore());
    const leases = createLeases(spy.store, { holder: 'w' });
    const lease = await mustClaim(leases, 'job:dag');
    spy.calls.length = 0;
    const started = performance.now();
    await expect(leases.checkpoint(lease, dag)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const elapsed = performance.now() - started;
    expect(spy.calls).toEqual([]);
    // NOTE: each visit of the leaf adds its 7 bytes of JSON, so the walk stops after limit / 7 visits (not 2^23).
    expect(visits.count).toBeLessThanOrEqual(DEFAULT_MAX_CHECKPOINT_BYTES / 7 + 1);
    expect(elapsed).toBeLessThan(1000);
  });

  it('at the largest limit the DAG is still refused without expanding it', () => {
    const visits = { count: 0 };
    expect(answer(sharedArrays(visits), MAX_CHECKPOINT_BYTES_LIMIT)).toEqual({ refused: 'INVALID_ARGUMENT' });
    expect(visits.count).toBeLessThanOrEqual(MAX_CHECKPOINT_BYTES_LIMIT / 7 + 1);
  });

  it('a JSON value is accepted exactly when its JSON text fits, and stored as JSON.stringify writes it', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.integer({ min: -3, max: 3 }), (value, delta) => {
        const json = JSON.stringify(value);
        const maxBytes = Math.max(1, utf8Length(json) + delta);
        const expected = utf8Length(json) <= maxBytes ? { json } : { refused: 'INVALID_ARGUMENT' };
        expect(answer(value, maxBytes)).toEqual(expected);
      }),
    );
  });

  it('a value that reuses sub-objects gets the answer of its expansion, at every limit and depth', () => {
    // NOTE: the reused part nests `levels` deep and sits `depth` arrays down, first shallow then deep, so a
    // copy reused below the depth limit is refused as its expansion is.
    const nested = (value: unknown, levels: number): unknown => (levels === 0 ? value : [nested(value, levels - 1)]);
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), fc.nat(40), fc.nat(40), fc.integer({ min: -3, max: 3 }), (value, levels, depth, delta) => {
        const shared = nested(value, levels);
        const dag = { first: shared, next: nested(shared, depth), again: [shared, shared] };
        const expansion = JSON.parse(JSON.stringify(dag)) as unknown;
        const unlimited = answer(expansion, MAX_CHECKPOINT_BYTES_LIMIT);
        expect(answer(dag, MAX_CHECKPOINT_BYTES_LIMIT)).toEqual(unlimited);
        const maxBytes = 'json' in unlimited ? Math.max(1, utf8Length(unlimited.json) + delta) : 1;
        expect(answer(dag, maxBytes)).toEqual(answer(expansion, maxBytes));
      }),
    );
  });

  it('any value: a limit changes the answer only by the size of the accepted text', () => {
    const values = fc.anything({
      withBigInt: true,
      withNullPrototype: true,
      withSparseArray: true,
      withBoxedValues: true,
      withMap: true,
      withSet: true,
      withDate: true,
      withTypedArray: true,
      withObjectString: true,
      maxDepth: 4,
    });
    fc.assert(
      fc.property(values, fc.integer({ min: -3, max: 3 }), (value, delta) => {
        const unlimited = answer(value, MAX_CHECKPOINT_BYTES_LIMIT);
        const maxBytes = 'json' in unlimited ? Math.max(1, utf8Length(unlimited.json) + delta) : 1 + Math.abs(delta);
        const limited = answer(value, maxBytes);
        if ('json' in unlimited && utf8Length(unlimited.json) <= maxBytes) expect(limited).toEqual(unlimited);
        else expect(limited).toEqual({ refused: 'INVALID_ARGUMENT' });
      }),
    );
  });
});
