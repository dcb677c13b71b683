// Rate-limit algorithms: fixed window for the workspace API (CONTRACT.md), token bucket for the
// budgets of the media services, and the media services' 429 refusal. Time comes from the Clock.
import type { Clock } from '../runtime';
import { ProblemErrors } from '../platform.errors';

/** 429 rate-limited (problem+json) with Retry-After. */
export const rateLimited = (retryAfter: number, limit: number) =>
  ProblemErrors['rate-limited']('Rate limit exceeded', { limit, retryAfter }, { retryAfter });

export interface Decision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix epoch seconds at which the window resets (fixed window) or a token is back (bucket). */
  resetAt: number;
  /** Whole seconds to wait before retrying, when refused. */
  retryAfter: number;
}

export function createFixedWindow(windowMs: number, clock: Clock) {
  const now = () => clock.now();
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

export interface BucketSpec {
  /** Tokens added per second. */
  ratePerSec: number;
  /** Bucket size: how many requests may arrive at once after a quiet period. */
  burst: number;
}

/**
 * Token bucket per key: `burst` tokens, refilled continuously at `ratePerSec`. Idle keys whose
 * bucket is full again are dropped, so memory follows the number of recently active keys.
 */
export function createTokenBucket(spec: BucketSpec, clock: Clock) {
  const now = () => clock.now();
  const buckets = new Map<string, { tokens: number; at: number }>();
  const fullAfterMs = (spec.burst / spec.ratePerSec) * 1000;
  let lastSweep = now();

  const level = (key: string, t: number) => {
    const b = buckets.get(key);
    if (!b) return { tokens: spec.burst, at: t };
    return { tokens: Math.min(spec.burst, b.tokens + ((t - b.at) / 1000) * spec.ratePerSec), at: t };
  };

  return {
    take(key: string, cost = 1): Decision {
      const t = now();
      if (t - lastSweep > fullAfterMs) {
        for (const [k, b] of buckets) if (t - b.at >= fullAfterMs) buckets.delete(k);
        lastSweep = t;
      }
      const b = level(key, t);
      const allowed = b.tokens >= cost;
      if (allowed) b.tokens -= cost;
      buckets.set(key, b);
      const missing = Math.max(0, cost - b.tokens);
      return {
        allowed,
        limit: spec.burst,
        remaining: Math.floor(b.tokens),
        resetAt: Math.ceil((t + ((spec.burst - b.tokens) / spec.ratePerSec) * 1000) / 1000),
        // Whole seconds, rounded up: retrying after this many seconds finds `cost` tokens.
        retryAfter: allowed ? 0 : Math.max(1, Math.ceil(missing / spec.ratePerSec)),
      };
    },
    /** Gives back what `take` consumed, when a later check refuses the same request. */
    refund(key: string, cost = 1) {
      const b = buckets.get(key);
      if (b) b.tokens = Math.min(spec.burst, b.tokens + cost);
    },
    size: () => buckets.size,
  };
}
