// hls.js in Debian's Chromium on a source with a ladder rung, two audio streams and a subtitle: it
// switches to the 360p rung, switches to the French audio rendition (AC-3 made AAC), shows the
// subtitle's cue, and keeps playing with no error. The page plays the session URL itself (CORS).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { switchingFixture, tempMediaRoot } from '../helpers/media';
import { openPlayback, scanAsset, startPlaybackPlatform } from '../helpers/playback';
import type { TestPlatform } from '../helpers/platform';
import { launchBrowser, type TestBrowser } from '../ui/browser';

const HLS_JS = join(import.meta.dir, '..', '..', 'node_modules', 'hls.js', 'dist', 'hls.min.js');

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>Keel renditions</title>
<video id="v" muted playsinline></video>
<script src="/hls.js"></script>
<script>
  window.fatal = [];
  window.events = [];
  window.start = (src) => {
    const video = document.getElementById('v');
    const hls = new Hls({ subtitleDisplay: true });
    window.hls = hls;
    hls.on(Hls.Events.ERROR, (_, d) => { if (d.fatal) window.fatal.push(d.type + ': ' + d.details); });
    hls.on(Hls.Events.LEVEL_SWITCHED, (_, d) => window.events.push('level:' + d.level));
    hls.on(Hls.Events.AUDIO_TRACK_SWITCHED, (_, d) => window.events.push('audio:' + d.id));
    hls.on(Hls.Events.MANIFEST_PARSED, () => void video.play());
    hls.loadSource(src);
    hls.attachMedia(video);
  };
  window.cueStarts = () => {
    const out = [];
    for (const track of document.getElementById('v').textTracks) for (const cue of track.cues || []) out.push(cue.startTime);
    return out;
  };
  window.cueTexts = () => {
    const out = [];
    for (const track of document.getElementById('v').textTracks) for (const cue of track.cues || []) out.push(cue.text);
    return out;
  };
</script>`;

let p: TestPlatform;
let token: string;
let media: ReturnType<typeof tempMediaRoot>;
let b: TestBrowser;
let site: ReturnType<typeof Bun.serve>;
let assetId: string;

beforeAll(async () => {
  media = tempMediaRoot();
  media.place('web/Switching (2024).mkv', switchingFixture());
  ({ p, token } = await startPlaybackPlatform(media.root, { APP_PLAYBACK_SEGMENT_MS: '2000' }));
  assetId = (await scanAsset(p, token, 'web/Switching (2024).mkv')).asset.id;
  site = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === '/') return new Response(PAGE, { headers: { 'content-type': 'text/html; charset=utf-8' } });
      if (url.pathname === '/hls.js') return new Response(Bun.file(HLS_JS), { headers: { 'content-type': 'text/javascript' } });
      return new Response('not found', { status: 404 });
    },
  });
  b = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await b?.close();
  site?.stop(true);
  await p?.close();
  if (media) rmSync(media.root, { recursive: true, force: true });
});

type W = { fatal: string[]; events: string[]; hls: { levels: { height: number }[]; audioTracks: { lang: string }[]; currentLevel: number; audioTrack: number }; cueTexts(): string[] };

/** Waits for `check` in the page, failing early on a fatal hls.js error. */
async function until(page: Page, check: string) {
  try {
    await page.waitForFunction(`window.fatal.length > 0 || (${check})`, undefined, { timeout: 30_000, polling: 200 });
  } catch (e) {
    const state = await page.evaluate(() => ({ events: (window as any).events, cues: (window as any).cueTexts(), t: (document.getElementById('v') as HTMLVideoElement).currentTime, tracks: [...(document.getElementById('v') as HTMLVideoElement).textTracks].map((t) => t.mode + ':' + t.label), sub: (window as any).hls.subtitleTrack, subs: (window as any).hls.subtitleTracks.length }));
    throw new Error(`waiting for ${check}: ${JSON.stringify(state)}`);
  }
  expect(await page.evaluate(() => (window as unknown as W).fatal)).toEqual([]);
}

describe('hls.js in Chromium with renditions', () => {
  test('switches rung and audio rendition, shows the subtitle cue, and keeps playing', { timeout: 150_000 }, async () => {
    const session = await openPlayback(p, token, assetId);
    const { page, outside } = await b.page();
    await page.goto(`http://127.0.0.1:${site.port}/`);
    await page.evaluate((src) => (window as unknown as { start(s: string): void }).start(src), session.url);
    await until(page, "document.getElementById('v').currentTime > 0.2");

    const manifest = await page.evaluate(() => {
      const w = window as unknown as W;
      return { heights: w.hls.levels.map((l) => l.height), audio: w.hls.audioTracks.map((t) => t.lang) };
    });
    expect(manifest.heights.sort((x, y) => x - y)).toEqual([360, 480]);
    expect(manifest.audio).toEqual(['eng', 'fra']);

    const rung = manifest.heights.indexOf(360);
    await page.evaluate((i) => {
      const w = window as unknown as W;
      w.hls.currentLevel = i;
      w.hls.audioTrack = 1;
      (w.hls as unknown as { subtitleTrack: number }).subtitleTrack = 0;
    }, rung);
    await until(page, `window.events.includes('level:${rung}') && window.events.includes('audio:1')`);
    // The subtitle rendition's cue, from the embedded SRT through the WebVTT rendition.
    await until(page, "window.cueTexts().includes('Keel cue')");
    // Aligned with the video by X-TIMESTAMP-MAP: the cue starts at 0.5 s of the medium (hls.js measured 1/6 s off: the B-frame delay).
    const [start] = await page.evaluate(() => (window as unknown as { cueStarts(): number[] }).cueStarts());
    expect(Math.abs(start! - 0.5)).toBeLessThan(0.25); // within the two frames (1/6 s at 12 fps) of the source's B-frame delay
    await until(page, "document.getElementById('v').currentTime > 3.5");
    expect(await page.evaluate(() => (document.getElementById('v') as HTMLVideoElement).videoHeight)).toBe(360);
    expect(outside).toEqual([]);
  });
});
