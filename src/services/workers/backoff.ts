// When a failed job runs again: doubling from the base, capped, with jitter so retries of many
// jobs do not arrive together. Pure: the random source is passed in.

export function retryDelayMs(attempt: number, opts: { baseMs: number; maxMs: number }, random: () => number = Math.random): number {
  const exp = Math.min(opts.maxMs, opts.baseMs * 2 ** Math.max(0, attempt - 1));
  // Half fixed, half random: never sooner than half the schedule.
  return Math.round(exp / 2 + (exp / 2) * random());
}
