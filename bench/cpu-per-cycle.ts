/** CPU µs per call of `cycle`: a warm-up of `count` calls, then the median of 9 rounds of `count` calls. */
export async function cpuPerCycleUs(cycle: () => Promise<unknown>, count: number): Promise<number> {
  const run = async (): Promise<void> => {
    for (let i = 0; i < count; i += 1) await cycle();
  };
  await run();
  const samples: number[] = [];
  for (let round = 0; round < 9; round += 1) {
    const before = process.cpuUsage();
    await run();
    const used = process.cpuUsage(before);
    samples.push((used.user + used.system) / count);
  }
  return samples.sort((a, b) => a - b)[4] ?? Number.NaN;
}
