// Log lines of any length through HTTP against a real `minimal` workspace: a 100 MB line comes back,
// read and followed, as consecutive entries of at most 64 KiB whose messages join to the line, while
// every service's /health keeps answering within a second and Keel grows by 32 MiB at most (also
// while a follower stops reading: the engine stream waits for it); and a follow across json-file
// rotations sends each line once.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { closeSync, existsSync, fstatSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiAt, ownPortRange, requireTestEnv, startTestPlatform, testToken, type ApiCall } from '../../helpers/platform';
import { BUN, startKeel, type KeelProcess } from '../../helpers/process';
import { watchHealth } from '../../helpers/health-watch';
import { followLogs } from '../../helpers/log-follower';
import { sseReader } from '../../helpers/sse';
import { closeAndClean, createRunning } from '../../helpers/workspaces';
import { keelInstance, removeInstanceObjects } from '../../helpers/docker';
import type { ServiceName } from '../../../src/platform/config';

requireTestEnv('DOCKER_HOST');

const CAP = 64 * 1024;
/** What one request may add to Keel's memory (CONTRACT.md: no request grows it by more than 32 MiB). */
const GROWTH_MAX_MIB = 32;
const SERVICES: ServiceName[] = ['workspaces', 'catalog', 'sources', 'workers', 'identity'];
const utf8 = new TextEncoder();

interface Entry {
  timestamp: string;
  service: string;
  level: string;
  message: string;
}

// The 100 MB test's Keel runs as a process of its own: in this one, the test's work and the whole
// suite's heap would pause the event loop that /health is measured on.
const dataDir = mkdtempSync(join(tmpdir(), 'keel-long-lines-'));
let keel: KeelProcess | undefined;
let api: ApiCall;

async function sh(id: string, command: string, timeout = 60_000) {
  const res = await api('workspaces', `/api/workspaces/${id}/exec`, { method: 'POST', json: { command, timeout } });
  expect(res.status).toBe(200);
  const out = (await res.json()) as { exitCode: number; stderr: string };
  expect(out).toMatchObject({ exitCode: 0, stderr: '' });
}

/** A process's resident set now (VmRSS) and its peak (VmHWM) since the last resetPeak, in MiB. */
function rss(pid: number): { now: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)![1]);
  return { now: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/** The last `n` bytes of a file, as latin1 text. */
function lastBytes(path: string, n: number): string {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const buf = Buffer.alloc(Math.min(n, size));
    readSync(fd, buf, 0, buf.length, size - buf.length);
    return buf.toString('latin1');
  } finally {
    closeSync(fd);
  }
}

/** Sets the process's peak (VmHWM) to its resident set now (proc(5), clear_refs "5"). */
const resetPeak = (pid: number) => writeFileSync(`/proc/${pid}/clear_refs`, '5');

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

/**
 * The entries of a `{"logs":[…]}` answer, each parsed as soon as its bytes are in, so a 100 MB answer
 * is never held whole (`res.json()` holds its text and every entry at once). Still checked as JSON:
 * each entry is JSON.parse'd from strict UTF-8, commas must sit between entries, and what is around
 * the entries must parse to `{"logs":[]}`.
 */
async function* logEntries(res: Response): AsyncGenerator<Entry> {
  const dec = new TextDecoder('utf-8', { fatal: true });
  const outside: number[] = []; // the bytes around the entries: `{"logs":[]}`
  let depth = 0;
  let inString = false;
  let escaped = false;
  let entry: Uint8Array[] | null = null; // the entry being read, in pieces
  let prev: 'open' | 'entry' | 'comma' = 'open'; // at the array's level, what came last
  const scan = (chunk: Uint8Array): Entry[] => {
    const done: Entry[] = [];
    let from = 0; // where the entry being read starts in this chunk
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (c === 0x5c) escaped = true;
        else if (c === 0x22) inString = false;
        if (!entry) outside.push(c);
      } else if (entry) {
        if (c === 0x22) inString = true;
        else if (c === 0x7b || c === 0x5b) depth++;
        else if (c === 0x7d || c === 0x5d) {
          if (--depth === 2) {
            entry.push(chunk.slice(from, i + 1));
            const bytes = Buffer.concat(entry);
            entry = null;
            done.push(JSON.parse(dec.decode(bytes)) as Entry);
            prev = 'entry';
          }
        }
      } else if (depth === 2) {
        if (c === 0x7b && prev !== 'entry') {
          entry = [];
          from = i;
          depth++;
        } else if (c === 0x2c && prev === 'entry') prev = 'comma';
        else if (c === 0x5d && prev !== 'comma') {
          depth--;
          outside.push(c);
        } else if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) throw new Error(`unexpected ${String.fromCharCode(c)} in the logs array`);
      } else {
        if (c === 0x22) inString = true;
        else if (c === 0x7b || c === 0x5b) depth++;
        else if (c === 0x7d || c === 0x5d) depth--;
        if (depth === 2) prev = 'open';
        outside.push(c);
      }
    }
    if (entry) entry.push(chunk.slice(from));
    return done;
  };
  for await (const chunk of res.body!) yield* scan(chunk);
  expect(entry).toBeNull();
  expect(JSON.parse(new TextDecoder().decode(new Uint8Array(outside)))).toEqual({ logs: [] });
}

beforeAll(async () => {
  keel = await startKeel(
    [BUN, 'src/main.ts'],
    {
      APP_DATA_DIR: dataDir,
      APP_WORKSPACE_PORT_RANGE: ownPortRange(),
      APP_WORKSPACE_LOG_MAX_SIZE: '400m',
      APP_WORKSPACE_LOG_MAX_FILES: '2',
      APP_RATE_LIMIT_ANONYMOUS: '1000000',
      APP_QUIET_TOKEN: '1',
    },
    SERVICES,
  );
  api = apiAt(keel.urls);
}, 60_000);

afterAll(async () => {
  let instance: string | undefined;
  try {
    instance = keelInstance(dataDir);
  } catch {
    // Keel did not get as far as naming its instance: it made nothing on the engine.
  }
  await keel?.stop();
  if (instance) await removeInstanceObjects(instance);
  rmSync(dataDir, { recursive: true, force: true });
}, 120_000);

describe('long log lines', () => {
  test('a 100 MB line is read and followed as consecutive 64 KiB entries that join to the line, and every service stays responsive', async () => {
    const { id } = await createRunning({ api }, 'long-line', { timeoutMs: 90_000 });
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

    // Followed from a process of its own (helpers/log-follower.ts), which resolves once the follow is open.
    const follow = await followLogs(`${keel!.urls.workspaces}/api/workspaces/${id}/logs?follow=true&tail=0&service=main`, testToken('alice'), 'after-the-long-line');

    const pid = keel!.proc.pid;
    const health = await watchHealth(SERVICES.map((s) => keel!.urls[s]!));
    resetPeak(pid);
    const rssBefore = rss(pid);
    // Followed while it is written: the engine stream is read as fast as the follower takes it.
    const written = sh(id, `yes '${pattern}' | head -c ${(unit + 1) * repeats} | tr -d '\\n' > /proc/1/fd/1; printf '\\nafter-the-long-line\\n' > /proc/1/fd/1`, 300_000);

    // Followed: entries of at most 64 KiB, one timestamp, in order, until the line after it.
    const followed = await follow.report;
    expect(followed.event).toBeUndefined();
    await written;
    const rssFollowed = rss(pid);
    expect(followed.timestamps).toHaveLength(1);
    const stamp = followed.timestamps[0]!;
    expect(followed.services).toEqual(['main']);
    const sizes = followed.sizes;
    expect(followed.bytes).toBe(want.bytes);
    expect(followed.sha256).toBe(wantHex);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(CAP);
    // Cut only where the next character would not fit: every entry but the last is nearly full.
    expect(Math.min(...sizes.slice(0, -1))).toBeGreaterThan(CAP - 4);

    // Read: the same entries, cut at the same places.
    resetPeak(pid);
    const rssBeforeRead = rss(pid);
    const readAt = Date.now();
    const got = await api('workspaces', `/api/workspaces/${id}/logs?tail=${sizes.length + 1}&service=main`);
    const headersIn = Date.now() - readAt;
    expect(got.status).toBe(200);
    // Each entry is checked as the next one arrives: the last must be the line after it.
    const read = digest();
    const readSizes: number[] = [];
    let last: Entry | undefined;
    for await (const e of logEntries(got)) {
      if (last) {
        expect(last.timestamp).toBe(stamp);
        expect(last.service).toBe('main');
        read.add(last.message);
        readSizes.push(utf8.encode(last.message).byteLength);
      }
      last = e;
    }
    expect(last?.message).toBe('after-the-long-line');
    expect(readSizes).toEqual(sizes);
    expect(read.hex()).toBe(wantHex);
    const rssRead = rss(pid);
    const readIn = Date.now() - readAt;

    const h = await health.stop();
    console.log(
      `long line: ${sizes.length} entries; /health slowest ${h.slowest.toFixed(0)} ms over ${h.rounds} rounds; ` +
        `Keel's rss before ${rssBefore.now.toFixed(0)} MiB (peak ${rssBefore.peak.toFixed(0)}), ` +
        `peak during the follow ${rssFollowed.peak.toFixed(0)} MiB; before the read ${rssBeforeRead.now.toFixed(0)} MiB, peak during the read ${rssRead.peak.toFixed(0)} MiB (now ${rssRead.now.toFixed(0)})`,
    );
    // Where a slow answer falls, in ms from the read's request (its headers and its end are given too).
    const slow = h.slow.map((x) => `${x.ms} ms at ${x.at - readAt}`);
    console.log(`long line: the read's headers at ${headersIn} ms, its end at ${readIn} ms; /health over 250 ms: ${slow.join(', ') || 'none'}`);
    expect(h.failures).toEqual([]);
    expect(h.rounds).toBeGreaterThan(5);
    expect(h.slowest).toBeLessThan(1000);
    // Neither the follow nor the read holds the line: each adds at most 32 MiB to Keel.
    expect(rssFollowed.peak - rssBefore.now).toBeLessThanOrEqual(GROWTH_MAX_MIB);
    expect(rssRead.peak - rssBeforeRead.now).toBeLessThanOrEqual(GROWTH_MAX_MIB);
  }, 600_000);

  test('a follower that stops reading during a 100 MB line is waited for: Keel does not hold what it left unread', async () => {
    const { id } = await createRunning({ api }, 'long-line-stall', { timeoutMs: 90_000 });
    // A client that stops reading (as in logs.test.ts): nc writes into a pipe whose reader waits for
    // a flag file. A session of its own (setsid keeps the pid), so the whole pipeline ends with its group.
    const url = new URL(keel!.urls.workspaces!);
    const dir = mkdtempSync(join(tmpdir(), 'keel-stall-'));
    writeFileSync(
      join(dir, 'request'),
      `GET /api/workspaces/${id}/logs?follow=true&tail=0&service=main HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${testToken('alice')}\r\n\r\n`,
    );
    const stalled = Bun.spawn(
      ['setsid', 'sh', '-c', `(cat request; sleep 300) | busybox nc ${url.hostname} ${url.port} | { while [ ! -e go ]; do sleep 0.1; done; cat > out; }`],
      { cwd: dir, stdout: 'ignore', stderr: 'ignore' },
    );
    try {
      const pid = keel!.proc.pid;
      await Bun.sleep(1000); // the follow opens (its `: connected` waits in the pipe)
      resetPeak(pid);
      const before = rss(pid);
      // 100 MB in one line, then a line that marks its end; the follower reads nothing for 5 s of it.
      const written = sh(id, `head -c 100000000 /dev/zero | tr '\\0' z > /proc/1/fd/1; printf '\\nafter-the-stall\\n' > /proc/1/fd/1`, 300_000);
      await Bun.sleep(5000);
      const stalledPeak = rss(pid).peak;
      writeFileSync(join(dir, 'go'), '');
      await written;
      // Until the marker or a last event: both would be the end of what it received.
      const end = () => (existsSync(join(dir, 'out')) ? lastBytes(join(dir, 'out'), 4096) : '');
      for (const until = Date.now() + 120_000; !/after-the-stall|event: /.test(end()) && Date.now() < until; ) await Bun.sleep(250);
      const after = rss(pid);
      const bytes = readFileSync(join(dir, 'out'));
      const text = bytes.toString('latin1');
      console.log(
        `stalled follower: Keel's rss before ${before.now.toFixed(0)} MiB, peak while it read nothing ${stalledPeak.toFixed(0)} MiB, ` +
          `peak by the end ${after.peak.toFixed(0)} MiB; it received ${(text.length / 1e6).toFixed(1)} MB`,
      );
      expect(text).not.toContain('event: dropped');
      expect(text).toContain('after-the-stall');
      // Every z reached it: nothing else in the answer (headers, chunk sizes, JSON keys) has a lowercase z.
      let z = 0;
      for (let i = 0; i < bytes.length; i++) if (bytes[i] === 0x7a) z++;
      expect(z).toBe(100_000_000);
      expect(stalledPeak - before.now).toBeLessThanOrEqual(GROWTH_MAX_MIB);
      expect(after.peak - before.now).toBeLessThanOrEqual(GROWTH_MAX_MIB);
    } finally {
      process.kill(-stalled.pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);

  test('a follow across json-file rotations sends every line once, in order', async () => {
    // A platform whose workspaces' logs rotate every 64 KiB: the lines below fill some 11 files.
    const small = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_LOG_MAX_SIZE: '64k', APP_WORKSPACE_LOG_MAX_FILES: '100' } });
    try {
      const { id } = await createRunning(small, 'rotating', { timeoutMs: 90_000 });
      const abort = new AbortController();
      const res = await small.api('workspaces', `/api/workspaces/${id}/logs?follow=true&tail=0&service=main`, { signal: abort.signal });
      expect(res.status).toBe(200);
      const reader = sseReader(res);
      expect((await reader.next())?.comment).toBe('connected');
      const count = 8_000;
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
        const f = await reader.nextEvent(finished ? 5_000 : 15_000).catch((e) => {
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
      // A read spans the rotated files (~730 lines each): the last 2,000 lines (rot-end and 1,999 before it), each once, none missing.
      const read = await small.api('workspaces', `/api/workspaces/${id}/logs?tail=2000&service=main`);
      const nums = ((await read.json()) as { logs: Entry[] }).logs.slice(0, -1).map((e) => Number(/^rot-(\d{6})-/.exec(e.message)?.[1]));
      expect(nums).toEqual(Array.from({ length: 1999 }, (_, i) => count - 1998 + i));
    } finally {
      await closeAndClean(small);
    }
  }, 300_000);
});
