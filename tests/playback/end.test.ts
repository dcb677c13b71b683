// Ending a playback session before its URL expires: DELETE /sessions/{id} by its actor ends it at
// once, and revoking the identity session that opened it ends it within 5 s. An ended URL answers
// 410 PLAYBACK_SESSION_ENDED (problem+json, CORS), whatever part of the session is asked for.
// The platform runs on NATS, so the identity check crosses a real bus.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { createActor, openSession } from '../helpers/identity';
import { playbackFixtures, tempMediaRoot } from '../helpers/media';
import { openPlayback, PLAY, scanAsset, startPlaybackPlatform } from '../helpers/playback';
import type { TestPlatform } from '../helpers/platform';

let p: TestPlatform;
let token: string;
let media: ReturnType<typeof tempMediaRoot>;
let assetId: string;

beforeAll(async () => {
  media = tempMediaRoot();
  media.place('Movies/Clip.mp4', playbackFixtures().mp4);
  ({ p, token } = await startPlaybackPlatform(media.root));
  assetId = (await scanAsset(p, token, 'Movies/Clip.mp4')).asset.id;
});

afterAll(async () => {
  await p?.close();
  if (media) rmSync(media.root, { recursive: true, force: true });
});

const endSession = (id: string, bearer: string | null) =>
  fetch(p.url('playback') + `/sessions/${id}`, { method: 'DELETE', headers: bearer ? { authorization: `Bearer ${bearer}` } : {} });

/** A viewer of its own: an actor with the play policy and one identity session. */
async function viewer() {
  const { apiKey } = await createActor(p, [PLAY], 'viewer');
  const s = await openSession(p, apiKey);
  return { token: s.accessToken, identitySessionId: s.session.id, apiKey };
}

async function expectEnded(url: string) {
  const res = await fetch(url, { headers: { origin: 'https://player.example.org' } });
  expect(res.status).toBe(410);
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  expect(res.headers.get('access-control-allow-origin')).toBe('*');
  const body = await res.json();
  expect(body.code).toBe('PLAYBACK_SESSION_ENDED');
  expect(JSON.stringify(body)).not.toContain(url.split('/play/')[1]!.split('/')[0]!);
}

describe('DELETE /sessions/{id}', () => {
  test('ends a direct session at once: 200 with the session as JSON, then its URL answers 410', async () => {
    const s = await openPlayback(p, token, assetId, 'direct');
    const before = await fetch(s.url, { headers: { range: 'bytes=0-99' } });
    expect(before.status).toBe(206);
    await before.arrayBuffer();
    const del = await endSession(s.id, token);
    expect(del.status).toBe(200);
    expect(del.headers.get('content-type')).toContain('application/json');
    const { session } = await del.json();
    expect(session).toMatchObject({ id: s.id, assetId, mode: 'direct', expiresAt: s.expiresAt });
    expect(session.endedAt).toBeNumber();
    await expectEnded(s.url);
  });

  test('ends an HLS session: playlists, segments and trickplay answer 410', async () => {
    const s = await openPlayback(p, token, assetId);
    expect((await fetch(s.url)).status).toBe(200);
    expect((await endSession(s.id, token)).status).toBe(200);
    for (const name of ['master.m3u8', 'media.m3u8', 'segment-0.ts', 'thumbnails.vtt', 'thumbnails.jpg']) {
      await expectEnded(s.url.replace(/master\.m3u8$/, name));
    }
  });

  test('ending it again answers 200 with the first endedAt', async () => {
    const s = await openPlayback(p, token, assetId, 'direct');
    const first = (await (await endSession(s.id, token)).json()).session;
    await Bun.sleep(5);
    const again = await endSession(s.id, token);
    expect(again.status).toBe(200);
    expect((await again.json()).session).toEqual(first);
  });

  test("another actor's session answers 404 and keeps playing", async () => {
    const s = await openPlayback(p, token, assetId, 'direct');
    const other = await viewer();
    const res = await endSession(s.id, other.token);
    expect(res.status).toBe(404);
    const body = await res.json();
    expect(body.code).toBe('PLAYBACK_SESSION_NOT_FOUND');
    expect(JSON.stringify(body)).not.toContain(s.id);
    const still = await fetch(s.url, { headers: { range: 'bytes=0-9' } });
    expect(still.status).toBe(206);
    await still.arrayBuffer();
  });

  test('an unknown id answers 404, no token 401, and an overlong id 422', async () => {
    expect((await endSession('pbs_nosuchsession', token)).status).toBe(404);
    const anonymous = await endSession('pbs_nosuchsession', null);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('content-type')).toContain('application/problem+json');
    expect((await endSession('x'.repeat(200), token)).status).toBe(422);
  });
});

describe('revoking the identity session', () => {
  test('ends the playback sessions it opened within 5 s, and only those', async () => {
    const v = await viewer();
    const direct = await openPlayback(p, v.token, assetId, 'direct');
    const hls = await openPlayback(p, v.token, assetId);
    // The same actor's other identity session: its playback goes on.
    const other = await openSession(p, v.apiKey);
    const kept = await openPlayback(p, other.accessToken, assetId, 'direct');
    for (const url of [direct.url, hls.url]) expect((await fetch(url, { headers: { range: 'bytes=0-9' } })).status).toBeLessThan(300);

    const revoke = await fetch(p.url('identity') + `/sessions/${v.identitySessionId}`, { method: 'DELETE', headers: { authorization: `Bearer ${v.token}` } });
    expect(revoke.status).toBe(200);
    const revokedAt = Date.now();
    let status = 0;
    while (Date.now() - revokedAt < 6000) {
      const res = await fetch(direct.url, { headers: { range: 'bytes=0-9' } });
      await res.arrayBuffer();
      status = res.status;
      if (status === 410) break;
      await Bun.sleep(100);
    }
    const tookMs = Date.now() - revokedAt;
    expect(status).toBe(410);
    expect(tookMs).toBeLessThan(5000);
    console.log(`playback URL ended ${tookMs} ms after the identity session was revoked`);
    await expectEnded(direct.url);
    await expectEnded(hls.url);
    const res = await fetch(kept.url, { headers: { range: 'bytes=0-9' } });
    expect(res.status).toBe(206);
    await res.arrayBuffer();
  });
});
