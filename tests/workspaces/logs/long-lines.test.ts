// Log lines of any length through HTTP against a real `minimal` workspace: a 100 MB line comes back,
// read and followed, as consecutive entries of at most 64 KiB whose messages join to the line, while
// every service's /health keeps answering within a second; and a follow across json-file rotations
// sends each line once.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { sseReader } from '../../helpers/sse';
import { closeAndClean, createRunning } from '../../helpers/workspaces';
import { waitFor } from '../../helpers/docker';
import type { ServiceName } from '../../../src/platform/config';

requireTestEnv('DOCKER_HOST');

const CAP = 64 * 1024;
const SERVICES: ServiceName[] = ['workspaces', 'catalog', 'sources', 'workers', 'identity'];
const utf8 = new TextEncoder();

interface Entry {
  timestamp: string;
  service: string;
  level: string;
  message: string;
}

let p: TestPlatform;

async function sh(id: string, command: string, timeout = 60_000) {
  const res = await p.api('workspaces', `/api/workspaces/${id}/exec`, { method: 'POST', json: { command, timeout } });
  expect(res.status).toBe(200);
  const out = (await res.json()) as { exitCode: number; stderr: string };
  expect(out).toMatchObject({ exitCode: 0, stderr: '' });
}

/** Polls every service's /health, all at once, every 100 ms until stopped: the slowest answer seen. */
function watchHealth() {
  let stop = false;
  let slowest = 0;
  let rounds = 0;
  let peakRss = 0;
  const failures: string[] = [];
  const loop = (async () => {
    while (!stop) {
      await Promise.all(
        SERVICES.map(async (s) => {
          const t0 = performance.now();
          try {
            const res = await fetch(`${p.url(s)}/health`, { signal: AbortSignal.timeout(5000) });
            await res.arrayBuffer();
            if (res.status !== 200) failures.push(`${s}: ${res.status}`);
          } catch (e) {
            failures.push(`${s}: ${(e as Error).message}`);
          }
          slowest = Math.max(slowest, performance.now() - t0);
        }),
      );
      rounds++;
      peakRss = Math.max(peakRss, process.memoryUsage.rss());
      await Bun.sleep(100);
    }
  })();
  return {
    /** The largest resident set seen so far (Keel and this test share the process). */
    peakRss: () => peakRss,
    async stop() {
      stop = true;
      await loop;
      return { slowest, rounds, failures, peakRss };
    },
  };
}

/** Feeds each message's UTF-8 to a SHA-256, so a 100 MB line is compared without being held. */
function digest() {
  const h = new Bun.CryptoHasher('sha256');
  let bytes = 0;
  return {
    add(text: string) {
      const b = utf8.encode(text);
      bytes += b.byteLength;
      h.update(b);
    },
    get bytes() {
      return bytes;
    },
    hex: () => h.digest('hex'),
  };
}

beforeAll(async () => {
  p = await startTestPlatform({
    services: SERVICES,
    env: { APP_WORKSPACE_LOG_MAX_SIZE: '400m', APP_WORKSPACE_LOG_MAX_FILES: '2', APP_RATE_LIMIT_ANONYMOUS: '1000000' },
  });
}, 60_000);

afterAll(() => closeAndClean(p), 120_000);

describe('long log lines', () => {
  test('a 100 MB line is read and followed as consecutive 64 KiB entries that join to the line, and every service stays responsive', async () => {
    const { id } = await createRunning(p, 'long-line', { timeoutMs: 90_000 });
    // The line: a pattern with 2-, 3- and 4-byte characters, repeated to 100 MB, from inside the
    // container (yes | head | tr), then a short line that marks its end. The pattern is 32 bytes:
    // the engine cuts lines every 16 KiB and json-file turns a character cut there into U+FFFD
    // (engine data Keel cannot mend), so no character may cross those cuts.
    const pattern = 'keel-é€😀-0123456789abcdefg';
    const unit = utf8.encode(pattern).byteLength;
    expect(unit).toBe(32);
    const repeats = 10_000 * Math.ceil(100_000_000 / unit / 10_000);
    const want = digest();
    const block = pattern.repeat(10_000);
    for (let i = 0; i < repeats / 10_000; i++) want.add(block);
    const wantHex = want.hex();

    const abort = new AbortController();
    const res = await p.api('workspaces', `/api/workspaces/${id}/logs?follow=true&tail=0&service=main`, { signal: abort.signal });
    expect(res.status).toBe(200);
    const reader = sseReader(res);
    expect((await reader.next())?.comment).toBe('connected');

    const health = watchHealth();
    const rssBefore = process.memoryUsage.rss();
    // Read while it is written: a follower that leaves more than 1 MiB unread is dropped.
    const written = sh(id, `yes '${pattern}' | head -c ${(unit + 1) * repeats} | tr -d '\\n' > /proc/1/fd/1; printf '\\nafter-the-long-line\\n' > /proc/1/fd/1`, 300_000);

    // Followed: entries of at most 64 KiB, one timestamp, in order, until the line after it.
    const followed = digest();
    const sizes: number[] = [];
    let stamp = '';
    for (;;) {
      const f = await reader.nextEvent(60_000);
      expect(f?.event).toBeUndefined();
      const e = JSON.parse(f!.data!) as Entry;
      if (e.message === 'after-the-long-line') break;
      stamp ||= e.timestamp;
      expect(e.timestamp).toBe(stamp);
      expect(e.service).toBe('main');
      followed.add(e.message);
      sizes.push(utf8.encode(e.message).byteLength);
    }
    abort.abort();
    await written;
    const rssFollowed = health.peakRss();
    expect(followed.bytes).toBe(want.bytes);
    expect(followed.hex()).toBe(wantHex);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(CAP);
    // Cut only where the next character would not fit: every entry but the last is nearly full.
    expect(Math.min(...sizes.slice(0, -1))).toBeGreaterThan(CAP - 4);

    // Read: the same entries, cut at the same places.
    const got = await p.api('workspaces', `/api/workspaces/${id}/logs?tail=${sizes.length + 1}&service=main`);
    expect(got.status).toBe(200);
    const logs = ((await got.json()) as { logs: Entry[] }).logs;
    expect(logs.at(-1)!.message).toBe('after-the-long-line');
    const pieces = logs.slice(0, -1);
    expect(pieces.map((e) => utf8.encode(e.message).byteLength)).toEqual(sizes);
    const read = digest();
    for (const e of pieces) {
      expect(e.timestamp).toBe(stamp);
      read.add(e.message);
    }
    expect(read.hex()).toBe(wantHex);

    const h = await health.stop();
    console.log(
      `long line: ${sizes.length} entries; /health slowest ${h.slowest.toFixed(0)} ms over ${h.rounds} rounds; ` +
        `rss before ${(rssBefore / 2 ** 20).toFixed(0)} MiB, peak while followed ${(rssFollowed / 2 ** 20).toFixed(0)} MiB, peak with the read ${(h.peakRss / 2 ** 20).toFixed(0)} MiB`,
    );
    expect(h.failures).toEqual([]);
    expect(h.rounds).toBeGreaterThan(5);
    expect(h.slowest).toBeLessThan(1000);
  }, 600_000);

  test('a follow across json-file rotations sends every line once, in order', async () => {
    // A platform whose workspaces' logs rotate every 64 KiB: the lines below fill some 50 files.
    const small = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_LOG_MAX_SIZE: '64k', APP_WORKSPACE_LOG_MAX_FILES: '100' } });
    try {
      const { id } = await createRunning(small, 'rotating', { timeoutMs: 90_000 });
      const abort = new AbortController();
      const res = await small.api('workspaces', `/api/workspaces/${id}/logs?follow=true&tail=0&service=main`, { signal: abort.signal });
      expect(res.status).toBe(200);
      const reader = sseReader(res);
      expect((await reader.next())?.comment).toBe('connected');
      const count = 20_000;
      const run = small.api('workspaces', `/api/workspaces/${id}/exec`, {
        method: 'POST',
        json: { command: `awk 'BEGIN { for (i = 1; i <= ${count}; i++) printf "rot-%06d-%s\\n", i, "${'x'.repeat(80)}" }' > /proc/1/fd/1; sleep 1; echo rot-end > /proc/1/fd/1`, timeout: 120_000 },
      });
      let finished = false;
      void run.then(() => (finished = true));
      // Until the last line; or, since this engine's `logs -f` can stop following a log that rotates
      // this fast (Docker 20.10, docs/workspaces.md), until 5 s without a line once the writer is done.
      const seen: number[] = [];
      for (;;) {
        const f = await reader.nextEvent(finished ? 5_000 : 60_000).catch((e) => {
          if (finished) return undefined;
          throw e;
        });
        if (f === undefined) break;
        expect(f?.event).toBeUndefined();
        const message = (JSON.parse(f!.data!) as Entry).message;
        if (message === 'rot-end') break;
        const m = /^rot-(\d{6})-/.exec(message);
        if (m) seen.push(Number(m[1]));
      }
      abort.abort();
      expect((await (await run).json()) as { exitCode: number }).toMatchObject({ exitCode: 0 });
      // The engine's `logs -f` sends lines of a rotated file again (and, on some engines, skips some
      // while it rotates, docs/workspaces.md): none reaches the follower twice or out of order.
      const repeated = seen.filter((n, i) => i > 0 && n <= seen[i - 1]!);
      expect(repeated).toEqual([]);
      expect(seen.length).toBeGreaterThan(0);
      // A read spans the rotated files: the last 5,000 lines (rot-end and 4,999 before it), each once, none missing.
      const read = await small.api('workspaces', `/api/workspaces/${id}/logs?tail=5000&service=main`);
      const nums = ((await read.json()) as { logs: Entry[] }).logs.slice(0, -1).map((e) => Number(/^rot-(\d{6})-/.exec(e.message)?.[1]));
      expect(nums).toEqual(Array.from({ length: 4999 }, (_, i) => count - 4998 + i));
    } finally {
      await closeAndClean(small);
    }
  }, 300_000);
});
