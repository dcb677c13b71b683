// The rate-limit algorithms (platform/http/rate-limit.ts) on a clock the test moves, and the
// media services' 429 refusal.
import { describe, expect, test } from 'bun:test';
import { headersOf, meaningOf } from '../../../../src/platform/errors';
import { createFixedWindow, createTokenBucket, rateLimited } from '../../../../src/platform/http/rate-limit';
import { problemErrorTable } from '../../../../src/platform/platform.errors';

const clockAt = (start: number) => {
  const c = { t: start, now: () => c.t };
  return c;
};

describe('token bucket', () => {
  test('allows a burst, then refuses with the seconds until a token is back', () => {
    const clock = clockAt(0);
    const bucket = createTokenBucket({ ratePerSec: 5, burst: 20 }, clock);
    for (let i = 0; i < 20; i++) expect(bucket.take('a').allowed).toBe(true);
    const refused = bucket.take('a');
    expect(refused).toMatchObject({ allowed: false, limit: 20, remaining: 0, retryAfter: 1 });
  });

  test('refills at its rate: one token every 200 ms at 5/s', () => {
    const clock = clockAt(0);
    const bucket = createTokenBucket({ ratePerSec: 5, burst: 2 }, clock);
    bucket.take('a');
    bucket.take('a');
    expect(bucket.take('a').allowed).toBe(false);
    clock.t += 199;
    expect(bucket.take('a').allowed).toBe(false);
    clock.t += 1;
    expect(bucket.take('a').allowed).toBe(true);
  });

  test('keys are apart, and a refund gives back what a later check refused', () => {
    const bucket = createTokenBucket({ ratePerSec: 1, burst: 1 }, clockAt(0));
    expect(bucket.take('a').allowed).toBe(true);
    expect(bucket.take('b').allowed).toBe(true);
    expect(bucket.take('a').allowed).toBe(false);
    bucket.refund('a');
    expect(bucket.take('a').allowed).toBe(true);
  });

  test('idle keys whose bucket is full again are forgotten', () => {
    const clock = clockAt(0);
    const bucket = createTokenBucket({ ratePerSec: 10, burst: 10 }, clock);
    for (let i = 0; i < 100; i++) bucket.take(`k${i}`);
    clock.t += 2000;
    bucket.take('fresh');
    expect(bucket.size()).toBe(1);
  });
});

describe('fixed window', () => {
  test('counts per key within the window and starts again in the next', () => {
    const clock = clockAt(60_000 * 100 + 5_000);
    const window = createFixedWindow(60_000, clock);
    expect(window.hit('ip:1', 2)).toMatchObject({ allowed: true, remaining: 1 });
    expect(window.hit('ip:1', 2)).toMatchObject({ allowed: true, remaining: 0 });
    expect(window.hit('ip:1', 2)).toMatchObject({ allowed: false, retryAfter: 55, resetAt: 6060 });
    clock.t += 55_000;
    expect(window.hit('ip:1', 2).allowed).toBe(true);
  });
});

test('rateLimited is a retryable 429 rate-limited with Retry-After', () => {
  const e = rateLimited(3, 20);
  expect(e).toMatchObject({ code: 'rate-limited', details: { limit: 20, retryAfter: 3 } });
  const meaning = meaningOf(e, problemErrorTable);
  expect(meaning).toMatchObject({ status: 429, retryable: true });
  expect(headersOf(e, meaning)).toEqual({ 'retry-after': '3' });
});
