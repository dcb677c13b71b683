// The workers' pure parts: the job map checked at start-up and the retry schedule (backoff.ts).
// tests/workers/jobs.test.ts runs jobs for real.
import { describe, expect, test } from 'bun:test';
import { checkJobHandlers } from '../../../src/services/workers/jobs';
import { retryDelayMs } from '../../../src/services/workers/backoff';

describe('the job map and the retry schedule', () => {
  test('a job type without a handler, or with two, stops start-up naming it', () => {
    expect(() => checkJobHandlers([])).toThrow('job type library.scan, playback.segment, playback.thumbnails, playback.subtitles has no handler');
    const h = { type: 'library.scan' as const, run: async () => {} };
    expect(() => checkJobHandlers([h, h])).toThrow('job type library.scan has two handlers');
    const segment = { type: 'playback.segment' as const, run: async () => {} };
    expect(() => checkJobHandlers([h, segment])).toThrow('job type playback.thumbnails, playback.subtitles has no handler');
    const thumbnails = { type: 'playback.thumbnails' as const, run: async () => {} };
    const subtitles = { type: 'playback.subtitles' as const, run: async () => {} };
    expect(Object.keys(checkJobHandlers([h, segment, thumbnails, subtitles]))).toEqual(['library.scan', 'playback.segment', 'playback.thumbnails', 'playback.subtitles']);
  });

  test('retries wait twice as long each time, with jitter, up to the cap', () => {
    const opts = { baseMs: 1000, maxMs: 10_000 };
    expect([1, 2, 3, 4, 5].map((n) => retryDelayMs(n, opts, () => 1))).toEqual([1000, 2000, 4000, 8000, 10_000]);
    expect(retryDelayMs(3, opts, () => 0)).toBe(2000);
  });
});
