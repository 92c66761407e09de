/** Times `fn` `runs` times after `warmup` runs; returns milliseconds per run, sorted. */
export async function sample(fn: () => Promise<unknown>, runs: number, warmup = 3): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b);
}

export const median = (sorted: number[]) => sorted[Math.floor(sorted.length / 2)]!;
export const p95 = (sorted: number[]) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))]!;

/** Prints one subject against its baseline as a ratio of medians. */
export function report(subject: string, times: number[], baseline: string, baseTimes: number[]): void {
  const ratio = median(times) / median(baseTimes);
  console.log(
    `${subject}: median ${median(times).toFixed(2)} ms, p95 ${p95(times).toFixed(2)} ms | ` +
      `${baseline}: median ${median(baseTimes).toFixed(2)} ms, p95 ${p95(baseTimes).toFixed(2)} ms | ratio ${ratio.toFixed(2)}x`,
  );
}
