// Rate-limit algorithms, transport-free. Fixed window for the workspace API (CONTRACT.md),
// token bucket for per-actor budgets of the media services.

export interface Decision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix epoch seconds at which the window resets (fixed window) or a token is back (bucket). */
  resetAt: number;
  /** Whole seconds to wait before retrying, when refused. */
  retryAfter: number;
}

export function createFixedWindow(windowMs: number, now: () => number = Date.now) {
  const windows = new Map<string, { start: number; count: number }>();
  let lastSweep = now();

  return {
    hit(key: string, limit: number): Decision {
      const t = now();
      const start = t - (t % windowMs);
      // Drop finished windows now and then, so idle keys do not pile up.
      if (t - lastSweep > windowMs) {
        for (const [k, w] of windows) if (w.start < start) windows.delete(k);
        lastSweep = t;
      }
      let w = windows.get(key);
      if (!w || w.start !== start) {
        w = { start, count: 0 };
        windows.set(key, w);
      }
      w.count++;
      const end = start + windowMs;
      const allowed = w.count <= limit;
      return {
        allowed,
        limit,
        remaining: Math.max(0, limit - w.count),
        resetAt: Math.ceil(end / 1000),
        retryAfter: allowed ? 0 : Math.max(1, Math.ceil((end - t) / 1000)),
      };
    },
    size: () => windows.size,
  };
}
