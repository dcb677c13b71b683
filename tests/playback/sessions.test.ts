// Playback sessions through HTTP on a real platform (catalog, identity, sources, workers, playback on
// NATS) with media made by ffmpeg: the guard, the asset checks, signed URLs and direct play with Range.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readFileSync, rmSync } from 'node:fs';
import { catalogToken, mediaFixtures, playbackFixtures, tempMediaRoot } from '../helpers/media';
import { openPlayback, postSession, scanAsset, startPlaybackPlatform } from '../helpers/playback';
import type { TestPlatform } from '../helpers/platform';

let p: TestPlatform;
let token: string;
let media: ReturnType<typeof tempMediaRoot>;
let mp4Id: string;
let mp4Bytes: Buffer;

beforeAll(async () => {
  const fx = playbackFixtures();
  media = tempMediaRoot();
  media.place('Movies/Clip (2020).mp4', fx.mp4);
  media.place('misc/notes.txt', mediaFixtures().text);
  mp4Bytes = readFileSync(fx.mp4);
  ({ p, token } = await startPlaybackPlatform(media.root));
  mp4Id = (await scanAsset(p, token, 'Movies/Clip (2020).mp4')).asset.id;
});

afterAll(async () => {
  await p?.close();
  if (media) rmSync(media.root, { recursive: true, force: true });
});

describe('POST /sessions', () => {
  test('a session without a mode is HLS: 201 with a master playlist URL that expires', async () => {
    const before = Date.now();
    await openPlayback(p, token, mp4Id); // the sources service knows the asset now
    const res = await postSession(p, token, { assetId: mp4Id });
    expect(res.status).toBe(201);
    const { session: s } = await res.json();
    expect(s).toMatchObject({ assetId: mp4Id, mode: 'hls' });
    expect(s.id).toStartWith('pbs_');
    expect(s.url).toStartWith(p.url('playback') + '/play/');
    expect(s.url).toEndWith('/master.m3u8');
    expect(s.expiresAt).toBeGreaterThan(before + 3600_000);
  });

  test('a request without a token is refused with 401 problem+json', async () => {
    const res = await postSession(p, null, { assetId: mp4Id });
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });

  test('a token without resource:asset:play is refused with 403', async () => {
    const scanner = await catalogToken(p, 'scanner-only', ['resource:asset:scan']);
    const res = await postSession(p, scanner, { assetId: mp4Id });
    expect(res.status).toBe(403);
  });

  test('an unknown asset answers 404 PLAYBACK_ASSET_NOT_FOUND without echoing the id', async () => {
    const res = await postSession(p, token, { assetId: 'ast_doesnotexist42' });
    expect(res.status).toBe(404);
    const body = await res.json();
    expect(body.code).toBe('PLAYBACK_ASSET_NOT_FOUND');
    expect(JSON.stringify(body)).not.toContain('doesnotexist42');
  });

  test('an asset with indexed=false answers 409 PLAYBACK_NO_CAPABILITIES', async () => {
    const scanned = await scanAsset(p, token, 'misc/notes.txt');
    expect(scanned.indexed).toBe(false);
    const res = await postSession(p, token, { assetId: scanned.asset.id });
    expect(res.status).toBe(409);
    expect((await res.json()).code).toBe('PLAYBACK_NO_CAPABILITIES');
  });

  test('an unknown mode is a 422 validation problem', async () => {
    const res = await postSession(p, token, { assetId: mp4Id, mode: 'dash' });
    expect(res.status).toBe(422);
    expect(await res.text()).not.toContain('dash');
  });
});

describe('session URLs', () => {
  test('a forged token answers 404 PLAYBACK_SESSION_NOT_FOUND', async () => {
    const s = await openPlayback(p, token, mp4Id);
    const [head, tail] = s.url.split('/play/');
    const [tok, file] = tail!.split('/');
    const [body, sig] = tok!.split('.');
    const forged = `${head}/play/${body}.${sig!.slice(0, -2)}${sig!.endsWith('AA') ? 'BB' : 'AA'}/${file}`;
    const res = await fetch(forged);
    expect(res.status).toBe(404);
    expect((await res.json()).code).toBe('PLAYBACK_SESSION_NOT_FOUND');
  });

  test('a direct session URL does not open the HLS playlists', async () => {
    const s = await openPlayback(p, token, mp4Id, 'direct');
    const res = await fetch(s.url.replace(/[^/]+$/, 'master.m3u8'));
    expect(res.status).toBe(404);
    expect((await res.json()).code).toBe('PLAYBACK_SESSION_NOT_FOUND');
  });
});

describe('direct play', () => {
  test('the URL serves the whole file without any header', async () => {
    const s = await openPlayback(p, token, mp4Id, 'direct');
    expect(s.url).toEndWith('/file.mp4');
    const res = await fetch(s.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('video/mp4');
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(Buffer.from(await res.arrayBuffer()).equals(mp4Bytes)).toBe(true);
  });

  test('a byte range answers 206 with exactly those bytes', async () => {
    const s = await openPlayback(p, token, mp4Id, 'direct');
    const res = await fetch(s.url, { headers: { range: 'bytes=1000-1999' } });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes 1000-1999/${mp4Bytes.length}`);
    expect(Buffer.from(await res.arrayBuffer()).equals(mp4Bytes.subarray(1000, 2000))).toBe(true);
  });

  test('an open-ended and a suffix range answer the tail of the file', async () => {
    const s = await openPlayback(p, token, mp4Id, 'direct');
    const from = await fetch(s.url, { headers: { range: `bytes=${mp4Bytes.length - 10}-` } });
    expect(from.status).toBe(206);
    expect(Buffer.from(await from.arrayBuffer()).equals(mp4Bytes.subarray(-10))).toBe(true);
    const suffix = await fetch(s.url, { headers: { range: 'bytes=-500' } });
    expect(suffix.status).toBe(206);
    expect(suffix.headers.get('content-range')).toBe(`bytes ${mp4Bytes.length - 500}-${mp4Bytes.length - 1}/${mp4Bytes.length}`);
    expect(Buffer.from(await suffix.arrayBuffer()).equals(mp4Bytes.subarray(-500))).toBe(true);
  });

  test('a range past the end answers 416 with the size', async () => {
    const s = await openPlayback(p, token, mp4Id, 'direct');
    const res = await fetch(s.url, { headers: { range: `bytes=${mp4Bytes.length}-` } });
    expect(res.status).toBe(416);
    expect(res.headers.get('content-range')).toBe(`bytes */${mp4Bytes.length}`);
  });
});

describe("the media web app's files", () => {
  test('an unknown file answers 404 problem+json not-found (a code of its own error model) without echoing its name', async () => {
    const res = await fetch(p.url('playback') + '/app/assets/nope-0123abcd.js');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ code: 'not-found', status: 404, type: 'https://keel.dev/problems/not-found' });
    expect(text).not.toContain('nope-0123abcd');
  });
});
