/** Counts `watchFreed` wake-ups and hands out a promise for the next one (tests wait for it, not for a duration). */
export interface WakeCounter {
  readonly onFreed: () => void;
  readonly count: () => number;
  next(): Promise<void>;
}

export function wakeCounter(): WakeCounter {
  let count = 0;
  let waiting: Array<() => void> = [];
  return {
    onFreed: () => {
      count += 1;
      const resolve = waiting;
      waiting = [];
      for (const done of resolve) done();
    },
    count: () => count,
    next: () => new Promise((resolve) => waiting.push(resolve)),
  };
}
