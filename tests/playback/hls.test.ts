// HLS through HTTP on a real platform with media made by ffmpeg: playlists cut at the indexed
// keyframes, segments made by the workers' ffmpeg job (copied or transcoded), whole-stream decoding
// by ffmpeg as an HLS client, a seek into the middle, made-ahead segments and one job per segment.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { JobView } from '../../src/platform/bus/subjects';
import { ffprobeJson, playbackFixtures, tempMediaRoot } from '../helpers/media';
import { openPlayback, scanAsset, segmentUrls, startPlaybackPlatform } from '../helpers/playback';
import type { TestPlatform } from '../helpers/platform';

let p: TestPlatform;
let token: string;
let media: ReturnType<typeof tempMediaRoot>;
const assets: Record<'mp4' | 'mkv' | 'transcode' | 'seek' | 'ahead' | 'crowd', { id: string; keyframesMs: number[]; durationMs: number }> = {} as never;
const jobs: JobView[] = [];

beforeAll(async () => {
  const fx = playbackFixtures();
  media = tempMediaRoot();
  const files = { mp4: fx.mp4, mkv: fx.mkv, transcode: fx.transcode, seek: fx.mkv, ahead: fx.mp4, crowd: fx.mkv } as const;
  for (const [name, file] of Object.entries(files)) media.place(`hls/${name}${file.slice(file.lastIndexOf('.'))}`, file);
  ({ p, token } = await startPlaybackPlatform(media.root, { APP_PLAYBACK_THUMBNAIL_INTERVAL_S: '4' }));
  p.bus.subscribe('evt.workers.jobProgress', ({ job }) => void jobs.push(job));
  for (const [name, file] of Object.entries(files)) {
    const s = await scanAsset(p, token, `hls/${name}${file.slice(file.lastIndexOf('.'))}`);
    assets[name as keyof typeof assets] = { id: s.asset.id, keyframesMs: s.index!.keyframesMs, durationMs: s.index!.durationMs };
  }
});

afterAll(async () => {
  await p?.close();
  if (media) rmSync(media.root, { recursive: true, force: true });
});

/** ffmpeg (or ffprobe) as a client: exit code and what it printed. Not spawnSync: the server runs in this process. */
async function run(cmd: string[]) {
  const r = Bun.spawn(cmd, { stdout: 'pipe', stderr: 'pipe' });
  const [code, stdout, stderr] = await Promise.all([r.exited, new Response(r.stdout).text(), new Response(r.stderr).text()]);
  return { code, stdout, stderr };
}

/** Playlist boundaries in ms: the running sum of #EXTINF durations. */
function boundariesOf(segments: { durationS: number }[]) {
  const out = [0];
  for (const s of segments) out.push(out[out.length - 1]! + Math.round(s.durationS * 1000));
  return out;
}

describe('playlists', () => {
  for (const name of ['mp4', 'mkv'] as const) {
    test(`the ${name} media playlist cuts every segment at an indexed keyframe, about 6 s apart`, async () => {
      const a = assets[name];
      expect(a.keyframesMs.length).toBeGreaterThanOrEqual(10);
      const s = await openPlayback(p, token, a.id);
      const master = await fetch(s.url);
      expect(master.headers.get('content-type')).toBe('application/vnd.apple.mpegurl');
      const { media: playlist, segments } = await segmentUrls(s.url);
      expect(playlist).toContain('#EXT-X-ENDLIST');
      const bounds = boundariesOf(segments);
      for (const b of bounds.slice(1, -1)) expect(a.keyframesMs).toContain(b);
      expect(bounds[bounds.length - 1]).toBeCloseTo(a.durationMs, -1);
      for (const seg of segments.slice(0, -1)) expect(Math.abs(seg.durationS - 6)).toBeLessThanOrEqual(1);
      for (const seg of segments) expect(seg.url).toEndWith('.ts');
    });
  }
});

describe('segments', () => {
  for (const name of ['mp4', 'mkv', 'transcode'] as const) {
    test(`ffmpeg reading the ${name} master playlist decodes the whole stream without an error`, { timeout: 120_000 }, async () => {
      const s = await openPlayback(p, token, assets[name].id);
      const decoded = await run(['ffmpeg', '-hide_banner', '-v', 'error', '-i', s.url, '-f', 'null', '-']);
      expect(decoded.stderr).toBe('');
      expect(decoded.code).toBe(0);
      // Every frame of the 20 s at 24 fps, none twice.
      const frames = await run(['ffmpeg', '-v', 'error', '-i', s.url, '-map', '0:v:0', '-f', 'framecrc', '-']);
      expect(frames.stdout.split('\n').filter((l) => l && !l.startsWith('#')).length).toBe(480);
    });
  }

  test('a source that is not H.264/AAC is served as H.264/AAC segments', async () => {
    const s = await openPlayback(p, token, assets.transcode.id);
    const { segments } = await segmentUrls(s.url);
    const res = await fetch(segments[1]!.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('video/mp2t');
    const file = join(p.dataDir, 'probe-transcoded.ts');
    await Bun.write(file, await res.arrayBuffer());
    const streams = (ffprobeJson(file).streams as { codec_type: string; codec_name: string }[]).map((x) => `${x.codec_type}:${x.codec_name}`);
    expect(streams.sort()).toEqual(['audio:aac', 'video:h264']);
  });

  test('a seek into the middle plays from a keyframe at the segment start', async () => {
    const a = assets.seek;
    const s = await openPlayback(p, token, a.id);
    const { segments } = await segmentUrls(s.url);
    const middle = Math.floor(segments.length / 2);
    const startMs = boundariesOf(segments)[middle]!;
    const res = await fetch(segments[middle]!.url);
    expect(res.status).toBe(200);
    const file = join(p.dataDir, 'probe-middle.ts');
    await Bun.write(file, await res.arrayBuffer());
    expect((await run(['ffmpeg', '-v', 'error', '-i', file, '-f', 'null', '-'])).stderr).toBe('');
    const packets = ffprobeJson(file, ['-select_streams', 'v:0', '-show_packets']).packets as { pts_time: string; flags: string }[];
    const first = packets.reduce((m, x) => (Number(x.pts_time) < Number(m.pts_time) ? x : m));
    expect(first.flags).toContain('K');
    // The segments keep the source's times, shifted by a constant 10 s.
    expect(Math.abs(Number(first.pts_time) - 10 - startMs / 1000)).toBeLessThan(0.05);
  });

  test('the segments after the one asked for are made ahead', async () => {
    const s = await openPlayback(p, token, assets.ahead.id);
    const { segments } = await segmentUrls(s.url);
    expect((await fetch(segments[0]!.url)).status).toBe(200);
    const dir = join(p.dataDir, 'playback-cache', assets.ahead.id);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && readdirSync(dir).length < 3) await Bun.sleep(50);
    expect(readdirSync(dir).length).toBe(3);
  });

  test('concurrent requests for one segment run one job and all get the same bytes', async () => {
    const a = assets.crowd;
    const s = await openPlayback(p, token, a.id);
    const { segments } = await segmentUrls(s.url);
    const answers = await Promise.all(Array.from({ length: 8 }, () => fetch(segments[1]!.url)));
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
    const bodies = await Promise.all(answers.map(async (r) => Buffer.from(await r.arrayBuffer())));
    for (const b of bodies) expect(b.equals(bodies[0]!)).toBe(true);
    const made = new Set(
      jobs.filter((j) => j.type === 'playback.segment' && (j.payload as { assetId: string; index: number }).assetId === a.id && (j.payload as { index: number }).index === 1).map((j) => j.id),
    );
    expect(made.size).toBe(1);
  });
});

describe('trickplay', () => {
  test('thumbnails.vtt has a cue every 4 s pointing into a sprite sheet of exactly that layout', async () => {
    const a = assets.mkv;
    const s = await openPlayback(p, token, a.id);
    const vtt = await fetch(s.url.replace(/master\.m3u8$/, 'thumbnails.vtt'));
    expect(vtt.status).toBe(200);
    expect(vtt.headers.get('content-type')).toStartWith('text/vtt');
    const text = await vtt.text();
    expect(text.startsWith('WEBVTT\n')).toBe(true);
    const cues = [...text.matchAll(/^(\d\d:\d\d:\d\d\.\d{3}) --> (\d\d:\d\d:\d\d\.\d{3})\nthumbnails\.jpg#xywh=(\d+),(\d+),(\d+),(\d+)$/gm)];
    expect(cues.length).toBe(Math.ceil(a.durationMs / 4000));
    expect(cues.map((c) => c[1])).toEqual(cues.map((_, i) => `00:00:${String(i * 4).padStart(2, '0')}.000`));
    const sprite = await fetch(s.url.replace(/master\.m3u8$/, 'thumbnails.jpg'));
    expect(sprite.status).toBe(200);
    expect(sprite.headers.get('content-type')).toBe('image/jpeg');
    const file = join(p.dataDir, 'sprite.jpg');
    await Bun.write(file, await sprite.arrayBuffer());
    const { width, height } = ffprobeJson(file, ['-show_streams']).streams[0] as { width: number; height: number };
    // 320x240 source: 160x120 thumbnails, all in one row (up to ten fit in a row).
    expect({ width, height }).toEqual({ width: cues.length * 160, height: 120 });
    for (const c of cues) {
      const [x, y, w, h] = c.slice(3, 7).map(Number) as [number, number, number, number];
      expect(x + w).toBeLessThanOrEqual(width);
      expect(y + h).toBeLessThanOrEqual(height);
    }
  });
});
