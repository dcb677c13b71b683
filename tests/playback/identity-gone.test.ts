// Identity and playback on two platform instances joined only by NATS: a session URL follows the
// identity session across the bus, and fails closed (503 identity-unavailable, retryable, with CORS)
// once identity stops answering, rather than playing on for a session nobody can vouch for.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { createActor, openSession } from '../helpers/identity';
import { playbackFixtures, tempMediaRoot } from '../helpers/media';
import { openPlayback, PLAY, scanAsset } from '../helpers/playback';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../helpers/platform';

let identity: TestPlatform;
let p: TestPlatform;
let media: ReturnType<typeof tempMediaRoot>;
let url: string;

beforeAll(async () => {
  const nats = requireTestEnv('KEEL_TEST_NATS_URL');
  media = tempMediaRoot();
  media.place('Movies/Clip.mp4', playbackFixtures().mp4);
  identity = await startTestPlatform({ services: ['identity'], env: { APP_BUS: nats } });
  p = await startTestPlatform({
    services: ['catalog', 'sources', 'workers', 'playback'],
    env: { APP_MEDIA_ROOTS: media.root, APP_BUS: nats, APP_WORKERS_POLL_MS: '100' },
  });
  const { apiKey } = await createActor(identity, ['resource:asset:scan', PLAY], 'viewer');
  const token = (await openSession(identity, apiKey)).accessToken;
  const { asset } = await scanAsset(p, token, 'Movies/Clip.mp4');
  url = (await openPlayback(p, token, asset.id, 'direct')).url;
});

afterAll(async () => {
  await p?.close();
  await identity?.close().catch(() => {});
  if (media) rmSync(media.root, { recursive: true, force: true });
});

describe('a session URL with identity on another process', () => {
  test('plays while identity answers, and fails closed within 5 s once it is gone', async () => {
    const ok = await fetch(url, { headers: { range: 'bytes=0-9' } });
    expect(ok.status).toBe(206);
    await ok.arrayBuffer();
    await identity.close();
    const goneAt = Date.now();
    let res = await fetch(url, { headers: { range: 'bytes=0-9' } });
    while (res.status === 206 && Date.now() - goneAt < 6000) {
      await res.arrayBuffer();
      await Bun.sleep(100);
      res = await fetch(url, { headers: { range: 'bytes=0-9', origin: 'https://player.example.org' } });
    }
    expect(res.status).toBe(503);
    expect(Date.now() - goneAt).toBeLessThan(5000);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(await res.json()).toMatchObject({ code: 'identity-unavailable', retryable: true });
  });
});
