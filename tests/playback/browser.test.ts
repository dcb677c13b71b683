// hls.js in Debian's Chromium playing playback sessions, as a web page would: a page on a loopback
// origin that proxies /play/* to the playback service (one deployment's choice), and the same page
// playing the session URLs of the playback origin itself, which answer CORS (docs/playback.md);
// hls.js served from node_modules.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { playbackFixtures, tempMediaRoot } from '../helpers/media';
import { openPlayback, scanAsset, startPlaybackPlatform } from '../helpers/playback';
import type { TestPlatform } from '../helpers/platform';
import { launchBrowser, type TestBrowser } from '../ui/browser';

const HLS_JS = join(import.meta.dir, '..', '..', 'node_modules', 'hls.js', 'dist', 'hls.min.js');

// The page of docs/playback.md, with hls.js from this origin and its events kept for the test to read.
const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>Keel player</title>
<video id="v" muted playsinline></video>
<script src="/hls.js"></script>
<script>
  window.fatal = [];
  window.mediaErrors = [];
  window.start = (src) => {
    const video = document.getElementById('v');
    video.addEventListener('error', () => window.mediaErrors.push(String(video.error && video.error.message)));
    const hls = new Hls();
    hls.on(Hls.Events.ERROR, (_, data) => { if (data.fatal) window.fatal.push(data.type + ': ' + data.details); });
    hls.loadSource(src);
    hls.attachMedia(video);
    hls.on(Hls.Events.MANIFEST_PARSED, () => void video.play());
  };
</script>`;

let p: TestPlatform;
let token: string;
let media: ReturnType<typeof tempMediaRoot>;
let b: TestBrowser;
let site: ReturnType<typeof Bun.serve>;
const assets: Record<'copy' | 'transcode' | 'seek', string> = {} as never;

beforeAll(async () => {
  const fx = playbackFixtures();
  media = tempMediaRoot();
  const files = { copy: fx.mp4, transcode: fx.transcode, seek: fx.mkv } as const;
  for (const [name, file] of Object.entries(files)) media.place(`web/${name}${file.slice(file.lastIndexOf('.'))}`, file);
  ({ p, token } = await startPlaybackPlatform(media.root));
  for (const [name, file] of Object.entries(files)) {
    assets[name as keyof typeof assets] = (await scanAsset(p, token, `web/${name}${file.slice(file.lastIndexOf('.'))}`)).asset.id;
  }
  const playback = p.url('playback');
  // The reverse proxy a deployment puts in front of its page and the playback service.
  site = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === '/') return new Response(PAGE, { headers: { 'content-type': 'text/html; charset=utf-8' } });
      if (url.pathname === '/hls.js') return new Response(Bun.file(HLS_JS), { headers: { 'content-type': 'text/javascript' } });
      if (url.pathname.startsWith('/play/')) {
        const range = req.headers.get('range');
        const res = await fetch(playback + url.pathname, { headers: range ? { range } : {} });
        return new Response(res.body, { status: res.status, headers: res.headers });
      }
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

/** A page on the proxy's origin playing the session of `assetId` with hls.js. */
async function play(assetId: string) {
  const session = await openPlayback(p, token, assetId);
  const opened = await b.page();
  await opened.page.goto(`http://127.0.0.1:${site.port}/`);
  await opened.page.evaluate((src) => (window as unknown as { start(s: string): void }).start(src), new URL(session.url).pathname);
  return opened;
}

const currentTime = (page: Page) => page.evaluate(() => (document.getElementById('v') as HTMLVideoElement).currentTime);
const errors = (page: Page) => page.evaluate(() => ({ fatal: (window as unknown as { fatal: string[] }).fatal, media: (window as unknown as { mediaErrors: string[] }).mediaErrors }));

/** Waits until the video has played past `seconds`, failing early on a fatal hls.js or media error. */
async function playsPast(page: Page, seconds: number) {
  await page.waitForFunction(
    (s) => {
      const w = window as unknown as { fatal: string[]; mediaErrors: string[] };
      if (w.fatal.length || w.mediaErrors.length) return true;
      return (document.getElementById('v') as HTMLVideoElement).currentTime > s;
    },
    seconds,
    { timeout: 90_000, polling: 200 },
  );
  expect(await errors(page)).toEqual({ fatal: [], media: [] });
  expect(await currentTime(page)).toBeGreaterThan(seconds);
}

describe('hls.js in Chromium', () => {
  test("Debian's Chromium decodes H.264 and AAC through Media Source Extensions", async () => {
    const { page } = await b.page();
    await page.goto(`http://127.0.0.1:${site.port}/`);
    expect(await page.evaluate(() => MediaSource.isTypeSupported('video/mp4; codecs="avc1.42E01E, mp4a.40.2"'))).toBe(true);
    expect(await page.evaluate(() => (window as unknown as { Hls: { isSupported(): boolean } }).Hls.isSupported())).toBe(true);
  });

  test('a copied H.264/AAC source plays past 4 s with no hls.js error, and nothing leaves the machine', { timeout: 120_000 }, async () => {
    const { page, outside } = await play(assets.copy);
    await playsPast(page, 4);
    expect(outside).toEqual([]);
  });

  test('a transcoded MPEG-4/MP3 source plays past 4 s with no hls.js error', { timeout: 120_000 }, async () => {
    const { page } = await play(assets.transcode);
    await playsPast(page, 4);
  });

  test('a seek into the middle keeps playing from there', { timeout: 120_000 }, async () => {
    const { page } = await play(assets.seek);
    await playsPast(page, 1);
    // Resolves on 'seeked' with where the video landed: the seek did happen, from 1 s to 10 s.
    const landed = await page.evaluate(
      () =>
        new Promise<number>((resolve) => {
          const video = document.getElementById('v') as HTMLVideoElement;
          video.addEventListener('seeked', () => resolve(video.currentTime), { once: true });
          video.currentTime = 10;
        }),
    );
    expect(landed).toBeGreaterThanOrEqual(9.5);
    expect(landed).toBeLessThan(12);
    await playsPast(page, 12);
    expect(await page.evaluate(() => (document.getElementById('v') as HTMLVideoElement).paused)).toBe(false);
  });

  test('a page on another origin plays the HLS session URL itself, no proxy between (CORS)', { timeout: 120_000 }, async () => {
    const session = await openPlayback(p, token, assets.copy);
    const { page } = await b.page();
    await page.goto(`http://127.0.0.1:${site.port}/`);
    expect(new URL(session.url).origin).not.toBe(`http://127.0.0.1:${site.port}`);
    await page.evaluate((src) => (window as unknown as { start(s: string): void }).start(src), session.url);
    await playsPast(page, 4);
  });

  test('a <video crossorigin> on another origin plays a direct session URL (CORS and Range)', { timeout: 120_000 }, async () => {
    const session = await openPlayback(p, token, assets.copy, 'direct');
    const { page } = await b.page();
    await page.goto(`http://127.0.0.1:${site.port}/`);
    await page.evaluate((src) => {
      const video = document.getElementById('v') as HTMLVideoElement;
      const w = window as unknown as { mediaErrors: string[] };
      video.addEventListener('error', () => w.mediaErrors.push(String(video.error && video.error.message)));
      video.crossOrigin = 'anonymous';
      video.src = src;
      void video.play();
    }, session.url);
    await playsPast(page, 2);
  });
});
