// The media web app at / on the playback port, in Debian's Chromium (playwright-core), every request
// leaving the machine blocked: sign in with an identity API key, Scan a library folder and see it
// finish, the Library grid (a movie and a series; seasons and episodes under the series), a work's
// page with Play: HLS through the bundled hls.js past 4 s, and a trickplay thumbnail while seeking.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { playbackFixtures, tempMediaRoot } from '../helpers/media';
import { PLAY, startPlaybackPlatform } from '../helpers/playback';
import type { TestPlatform } from '../helpers/platform';
import { launchBrowser, screenshot, type TestBrowser } from '../ui/browser';
import { waitFor } from '../helpers/docker';

let p: TestPlatform;
let media: ReturnType<typeof tempMediaRoot>;
let b: TestBrowser;
let page: Page;
let outside: string[];
let messages: string[];
let apiKey = '';

beforeAll(async () => {
  const fx = playbackFixtures();
  media = tempMediaRoot();
  media.place('movies/Test Pattern (2020).mp4', fx.mp4);
  media.place('shows/Demo Show/Season 01/Demo.Show.S01E01.mkv', fx.mkv);
  media.place('shows/Demo Show/Season 01/Demo.Show.S01E02.mkv', fx.mkv);
  ({ p } = await startPlaybackPlatform(media.root));
  const created = await p.api('identity', '/actors', { method: 'POST', as: 'admin', json: { name: 'viewer-app', policies: ['resource:asset:scan', PLAY] } });
  expect(created.status).toBe(201);
  apiKey = ((await created.json()) as { apiKey: string }).apiKey;
  b = await launchBrowser();
  ({ page, outside, console: messages } = await b.page());
}, 180_000);

afterAll(async () => {
  await b?.close();
  await p?.close();
  if (media) rmSync(media.root, { recursive: true, force: true });
});

test('sign in with an API key: a wrong one is refused, the right one opens the library', async () => {
  await page.goto(p.url('playback') + '/');
  await page.getByLabel('API key', { exact: true }).fill('keel_ak_not-a-key');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('alert').getByText(/refused/).waitFor();
  await page.getByLabel('API key', { exact: true }).fill(apiKey);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Library', exact: true }).waitFor();
  // The API key is not kept; the session's access token is, in this tab only.
  expect(await page.evaluate(() => JSON.stringify(sessionStorage))).not.toContain(apiKey);
  expect(await page.evaluate(() => localStorage.length)).toBe(0);
}, 60_000);

test('Scan: a library folder is scanned, its progress shown until done', async () => {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Scan', exact: true }).click();
  await page.getByLabel('Library folder', { exact: true }).fill('');
  await page.getByRole('button', { name: 'Scan', exact: true }).click();
  await page.getByRole('status').getByText('Scan done', { exact: true }).waitFor({ timeout: 90_000 });
  expect(await page.getByText('added', { exact: true }).isVisible()).toBe(true);
}, 120_000);

test('Library: the movie and the series as a grid; the series opens its season, the season its episodes', async () => {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Library', exact: true }).click();
  const grid = page.getByRole('list', { name: 'Works' });
  await grid.getByRole('link', { name: /Test Pattern/ }).waitFor();
  await grid.getByRole('link', { name: /Demo Show/ }).waitFor();
  // Seasons and episodes live under their series, not in the grid.
  expect(await grid.getByRole('listitem').count()).toBe(2);
  await screenshot(page, 'media-library');
  await grid.getByRole('link', { name: /Demo Show/ }).click();
  await page.getByRole('list', { name: 'Seasons' }).getByRole('link', { name: 'Season 1', exact: true }).click();
  const episodes = page.getByRole('list', { name: 'Episodes' });
  await episodes.getByRole('link', { name: /^1\. / }).waitFor();
  expect(await episodes.getByRole('link').count()).toBe(2);
}, 60_000);

test("a work's page plays HLS in the page past 4 s, and seeking shows a trickplay thumbnail", async () => {
  await page.getByRole('list', { name: 'Episodes' }).getByRole('link', { name: /^1\. / }).click();
  await page.getByRole('table', { name: 'Files' }).waitFor();
  await page.getByRole('button', { name: /^Play / }).first().click();
  const video = page.getByLabel('Player', { exact: true });
  await video.waitFor();
  await page.waitForFunction(() => (document.querySelector('video') as HTMLVideoElement | null)?.currentTime! > 4, undefined, { timeout: 90_000, polling: 200 });
  expect(await page.getByRole('alert').filter({ hasText: /failed/ }).count()).toBe(0);

  // Dragging the seek bar to 12 s shows the sprite's tile for that moment; letting go seeks there.
  const seek = page.getByLabel('Seek', { exact: true });
  await page.waitForFunction(() => Number((document.querySelector('input[type=range]') as HTMLInputElement).max) > 0, undefined, { timeout: 30_000 });
  await seek.fill('12');
  const thumb = page.getByRole('img', { name: 'Thumbnail at the seek position' });
  await thumb.waitFor({ state: 'visible', timeout: 30_000 });
  const style = await thumb.evaluate((el) => ({ image: (el as HTMLElement).style.backgroundImage, cue: (el as HTMLElement).dataset.cue }));
  expect(style.image).toContain('thumbnails.jpg');
  expect(Number(style.cue)).toBe(10);
  // The sprite itself loads (same origin, allowed by the page's policy).
  const sprite = /url\("(.*)"\)/.exec(style.image)![1]!;
  expect(await page.evaluate((src) => new Promise<number>((r) => { const i = new Image(); i.onload = () => r(i.naturalWidth); i.onerror = () => r(0); i.src = src; }), sprite)).toBeGreaterThan(0);
  await screenshot(page, 'media-player');
  await page.waitForFunction(() => (document.querySelector('video') as HTMLVideoElement).currentTime > 12.5, undefined, { timeout: 60_000, polling: 200 });

  // Leaving the page keeps the place; Play again starts there (continue watching).
  const episode = page.url();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Library', exact: true }).click();
  await page.getByRole('heading', { name: 'Library', exact: true }).waitFor();
  const token = await page.evaluate(() => sessionStorage.getItem('keel.media.token'));
  // The place saved on leaving (past 12.5 s), not only an earlier timed save.
  await waitFor('the place kept past 12 s', async () => {
    const r = (await (await fetch(p.url('playback') + '/progress?inProgress=true', { headers: { authorization: `Bearer ${token}` } })).json()) as { items: { positionMs: number }[] };
    return r.items[0] && r.items[0].positionMs > 12_000;
  }, 20_000);
  await page.goto(episode);
  await page.getByRole('button', { name: /^Play / }).first().click();
  await page.getByRole('status').getByText(/^Resuming at 0:1\d$/).waitFor({ timeout: 30_000 });
  await page.waitForFunction(() => (document.querySelector('video') as HTMLVideoElement).currentTime > 12, undefined, { timeout: 60_000, polling: 200 });
}, 180_000);

test('nothing left the machine, and the pages broke no policy', () => {
  expect(outside).toEqual([]);
  expect(messages.filter((m) => /Content Security Policy|Refused to|pageerror/i.test(m))).toEqual([]);
});
