// A web player on another origin uses a session's URL: every answer under /play/ (the file, ranges,
// playlists, segments, trickplay, errors) says Access-Control-Allow-Origin: * and exposes the range
// headers, and a preflight for a GET with Range is allowed.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { playbackFixtures, tempMediaRoot } from '../helpers/media';
import { openPlayback, scanAsset, segmentUrls, startPlaybackPlatform } from '../helpers/playback';
import type { TestPlatform } from '../helpers/platform';

let p: TestPlatform;
let token: string;
let media: ReturnType<typeof tempMediaRoot>;
let assetId: string;
const ORIGIN = { origin: 'https://player.example.org' };

beforeAll(async () => {
  media = tempMediaRoot();
  media.place('Movies/Clip.mp4', playbackFixtures().mp4);
  ({ p, token } = await startPlaybackPlatform(media.root, { APP_PLAYBACK_THUMBNAIL_INTERVAL_S: '5' }));
  assetId = (await scanAsset(p, token, 'Movies/Clip.mp4')).asset.id;
});

afterAll(async () => {
  await p?.close();
  if (media) rmSync(media.root, { recursive: true, force: true });
});

/** What a browser needs on an answer a cross-origin script reads. */
function expectCors(res: Response) {
  expect(res.headers.get('access-control-allow-origin')).toBe('*');
  const exposed = (res.headers.get('access-control-expose-headers') ?? '').toLowerCase().split(/,\s*/);
  for (const h of ['content-range', 'accept-ranges', 'content-length']) expect(exposed).toContain(h);
}

describe('direct session URL', () => {
  test('the whole file, a range and a range past the end all answer CORS', async () => {
    const s = await openPlayback(p, token, assetId, 'direct');
    const whole = await fetch(s.url, { headers: ORIGIN });
    expect(whole.status).toBe(200);
    expectCors(whole);
    await whole.arrayBuffer();
    const part = await fetch(s.url, { headers: { ...ORIGIN, range: 'bytes=0-1023' } });
    expect(part.status).toBe(206);
    expectCors(part);
    await part.arrayBuffer();
    const past = await fetch(s.url, { headers: { ...ORIGIN, range: 'bytes=999999999-' } });
    expect(past.status).toBe(416);
    expectCors(past);
  });

  test('a preflight for GET with Range answers 204 and allows it', async () => {
    const s = await openPlayback(p, token, assetId, 'direct');
    const res = await fetch(s.url, {
      method: 'OPTIONS',
      headers: { ...ORIGIN, 'access-control-request-method': 'GET', 'access-control-request-headers': 'range' },
    });
    expect(res.status).toBe(204);
    expectCors(res);
    expect(res.headers.get('access-control-allow-methods')).toContain('GET');
    expect((res.headers.get('access-control-allow-headers') ?? '').toLowerCase()).toContain('range');
  });
});

describe('HLS session URL', () => {
  test('master and media playlists and a segment answer CORS', { timeout: 60_000 }, async () => {
    const s = await openPlayback(p, token, assetId);
    const master = await fetch(s.url, { headers: ORIGIN });
    expectCors(master);
    await master.text();
    const { segments } = await segmentUrls(s.url);
    const media = await fetch(s.url.replace(/master\.m3u8$/, 'media.m3u8'), { headers: ORIGIN });
    expectCors(media);
    await media.text();
    const seg = await fetch(segments[0]!.url, { headers: ORIGIN });
    expect(seg.status).toBe(200);
    expectCors(seg);
    await seg.arrayBuffer();
  });

  test('trickplay cues and sprite answer CORS', { timeout: 60_000 }, async () => {
    const s = await openPlayback(p, token, assetId);
    const vtt = await fetch(s.url.replace(/master\.m3u8$/, 'thumbnails.vtt'), { headers: ORIGIN });
    expect(vtt.status).toBe(200);
    expectCors(vtt);
    await vtt.text();
    const sprite = await fetch(s.url.replace(/master\.m3u8$/, 'thumbnails.jpg'), { headers: ORIGIN });
    expect(sprite.status).toBe(200);
    expectCors(sprite);
    await sprite.arrayBuffer();
  });

  test('a preflight of a segment answers 204 with Range allowed', async () => {
    const s = await openPlayback(p, token, assetId);
    const res = await fetch(s.url.replace(/master\.m3u8$/, 'segment-0.ts'), {
      method: 'OPTIONS',
      headers: { ...ORIGIN, 'access-control-request-method': 'GET', 'access-control-request-headers': 'range' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect((res.headers.get('access-control-allow-headers') ?? '').toLowerCase()).toContain('range');
  });
});

describe('errors', () => {
  test('a forged URL answers its 404 problem with CORS, so the player can read why', async () => {
    const res = await fetch(p.url('playback') + '/play/bm90LWEtdG9rZW4.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/master.m3u8', { headers: ORIGIN });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expectCors(res);
    expect((await res.json()).code).toBe('PLAYBACK_SESSION_NOT_FOUND');
  });

  test('a segment past the playlist answers 404 with CORS', async () => {
    const s = await openPlayback(p, token, assetId);
    const res = await fetch(s.url.replace(/master\.m3u8$/, 'segment-999.ts'), { headers: ORIGIN });
    expect(res.status).toBe(404);
    expectCors(res);
  });

  test('the Bearer routes are not opened to other origins', async () => {
    const res = await fetch(p.url('playback') + '/sessions', { method: 'OPTIONS', headers: { ...ORIGIN, 'access-control-request-method': 'POST' } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});
