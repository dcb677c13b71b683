// The segment cache's size bound, and a segment job whose ffmpeg is killed with SIGKILL mid-transcode:
// the request that waited is told to ask again, and the next request gets the whole segment. On a
// private nats-server with JetStream, so the jobs go through the workers' JetStream queue (the other
// playback tests use the database queue).
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { playbackFixtures, tempMediaRoot } from '../helpers/media';
import { startTestNats, type TestNats } from '../helpers/nats';
import { openPlayback, scanAsset, segmentUrls, startPlaybackPlatform } from '../helpers/playback';
import type { TestPlatform } from '../helpers/platform';

const BOUND = 1024 * 1024;
let p: TestPlatform;
let token: string;
let media: ReturnType<typeof tempMediaRoot>;
let nats: TestNats;

beforeAll(async () => {
  const fx = playbackFixtures();
  media = tempMediaRoot();
  for (const n of ['a', 'b', 'c']) media.place(`cache/${n}.mp4`, fx.mp4);
  media.place('cache/killed.mkv', fx.transcode);
  // No segment made ahead: each job here is one a request asked for.
  nats = await startTestNats();
  ({ p, token } = await startPlaybackPlatform(media.root, { APP_BUS: nats.url, APP_WORKERS_QUEUE: 'jetstream', APP_PLAYBACK_CACHE_BYTES: String(BOUND), APP_PLAYBACK_AHEAD: '0' }));
});

afterAll(async () => {
  await p?.close();
  await nats?.close();
  if (media) rmSync(media.root, { recursive: true, force: true });
});

function cachedBytes(): number {
  const dir = join(p.dataDir, 'playback-cache');
  let total = 0;
  for (const asset of readdirSync(dir)) {
    if (asset.startsWith('.')) continue;
    for (const f of readdirSync(join(dir, asset))) total += statSync(join(dir, asset, f)).size;
  }
  return total;
}

test('the segment cache stays within its size bound, and an evicted segment is made again', async () => {
  let first: string | undefined;
  let served = 0;
  for (const n of ['a', 'b', 'c']) {
    const id = (await scanAsset(p, token, `cache/${n}.mp4`)).asset.id;
    const { segments } = await segmentUrls((await openPlayback(p, token, id)).url);
    for (const seg of segments) {
      const res = await fetch(seg.url);
      expect(res.status).toBe(200);
      served += (await res.arrayBuffer()).byteLength;
      first ??= seg.url;
      expect(cachedBytes()).toBeLessThanOrEqual(BOUND);
    }
  }
  // More was served than the cache may hold: something was evicted.
  expect(served).toBeGreaterThan(BOUND);
  const again = await fetch(first!);
  expect(again.status).toBe(200);
  expect((await again.arrayBuffer()).byteLength).toBeGreaterThan(0);
});

/** Pids of ffmpeg processes whose command line names this platform's data dir (the job's work folder). */
function ourFfmpegs(): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      if (cmd.startsWith('ffmpeg\0') && cmd.includes(p.dataDir)) pids.push(Number(name));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

test('a transcode killed with SIGKILL mid-way is made whole by the next request', { timeout: 60_000 }, async () => {
  const id = (await scanAsset(p, token, 'cache/killed.mkv')).asset.id;
  const { segments } = await segmentUrls((await openPlayback(p, token, id)).url);
  const url = segments[1]!.url;
  let killed = 0;
  const watcher = (async () => {
    const deadline = Date.now() + 20_000;
    while (!killed && Date.now() < deadline) {
      for (const pid of ourFfmpegs()) {
        process.kill(pid, 'SIGKILL');
        killed = pid;
      }
      await Bun.sleep(2);
    }
  })();
  const cut = await fetch(url);
  await watcher;
  expect(killed).toBeGreaterThan(0);
  expect(cut.status).toBe(503);
  expect(cut.headers.get('retry-after')).toBe('1');
  expect((await cut.json()).code).toBe('PLAYBACK_SEGMENT_FAILED');
  // Nothing half-made is left to be served, and the next request makes the segment whole.
  const work = join(p.dataDir, 'playback-cache', '.work');
  expect(existsSync(work) ? readdirSync(work) : []).toEqual([]);
  const next = await fetch(url);
  expect(next.status).toBe(200);
  const file = join(p.dataDir, 'recovered.ts');
  await Bun.write(file, await next.arrayBuffer());
  const decoded = Bun.spawn(['ffmpeg', '-v', 'error', '-i', file, '-f', 'null', '-'], { stderr: 'pipe' });
  expect(await new Response(decoded.stderr).text()).toBe('');
  expect(await decoded.exited).toBe(0);
});
