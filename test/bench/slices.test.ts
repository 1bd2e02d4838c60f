/**
 * bench/slices.ts: every pass runs each contender once, and no contender always follows the same one (a
 * slice's garbage is collected in the next slice, so a fixed neighbour biased a row: see slices.ts).
 */
import { expect, it } from 'vitest';
import { runGroup, type Contender } from '../../bench/slices.js';

it('each pass runs every contender once, in orders that change their neighbours', async () => {
  const names = ['a', 'b', 'c', 'd', 'e'];
  const probes: string[] = [];
  // NOTE: serverCpuUs is read before and after every slice: the "before" reads give the slice order.
  const contenders: Contender[] = names.map((name) => ({
    name,
    prepare: async () => async () => undefined,
    serverCpuUs: async () => {
      probes.push(name);
      return 0;
    },
  }));
  const [rounds, passes] = [2, 6];
  await runGroup({ title: 'order', workers: 1, contenders }, { rounds, passes, sliceMs: 1 });
  const order = probes.filter((_, index) => index % 2 === 0).slice(names.length); // NOTE: after the warm-up slices
  expect(order).toHaveLength(rounds * passes * names.length);
  const predecessors = new Map(names.map((name) => [name, new Set<string>()]));
  for (let start = 0; start < order.length; start += names.length) {
    const pass = order.slice(start, start + names.length);
    expect([...pass].sort()).toEqual(names);
    for (const [index, name] of pass.entries()) if (index > 0) predecessors.get(name)?.add(pass[index - 1] as string);
  }
  for (const name of names) expect(predecessors.get(name)?.size, `${name} always follows the same contender`).toBeGreaterThan(1);
});
