// When the next attempt of a delivery goes out: pure policy over the configured schedule, with the
// random source passed in so tests can pin the jitter.

/** Share of a delay that jitter may add or remove (±20 %), so receivers coming back are not hit all at once. */
export const JITTER = 0.2;

/**
 * Delay before attempt number `attemptsDone + 1` of a round, or null when the schedule is spent
 * (the delivery then fails for good). `random` returns a number in [0, 1).
 */
export function nextDelayMs(schedule: readonly number[], attemptsDone: number, random: () => number): number | null {
  if (attemptsDone >= schedule.length) return null;
  const base = schedule[attemptsDone]!;
  if (base === 0) return 0;
  return Math.max(0, Math.round(base * (1 + JITTER * (2 * random() - 1))));
}

/** Upper bound on what a receiver may ask for with Retry-After (the longest step of the default schedule). */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/**
 * A `Retry-After` header as milliseconds from `nowMs`: delay-seconds or an HTTP date. Null when
 * absent or unreadable; capped so a receiver cannot park a delivery forever.
 */
export function retryAfterMs(header: string | null | undefined, nowMs: number): number | null {
  if (!header) return null;
  const text = header.trim();
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return null;
    ms = at - nowMs;
  }
  return Math.min(Math.max(0, ms), MAX_RETRY_AFTER_MS);
}
