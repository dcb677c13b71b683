// Without a system ffprobe, the catalog falls back to the one the optional npm package ships.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { catalogToken, playbackFixtures, postScan, tempMediaRoot } from '../helpers/media';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';

let p: TestPlatform;
let root: ReturnType<typeof tempMediaRoot>;

beforeAll(async () => {
  root = tempMediaRoot();
  // MPEG-4 Part 2 and MP3: codecs the native header reader leaves to ffprobe, so ffprobe must run.
  root.place('Films/Alien (1979).mkv', playbackFixtures().transcode);
  // A PATH with no ffprobe on it: only the npm package's binary is left.
  p = await startTestPlatform({ services: ['catalog', 'identity'], env: { APP_MEDIA_ROOTS: root.root, PATH: '/nonexistent' } });
});

afterAll(async () => {
  await p?.close();
  rmSync(root.root, { recursive: true, force: true });
});

test('a scan is indexed with the npm-shipped ffprobe', async () => {
  const token = await catalogToken(p, 'fallback');
  const res = await postScan(p, { path: 'Films/Alien (1979).mkv' }, token);
  expect(res.status).toBe(200);
  const body = await res.json();
  expect(body.indexed).toBe(true);
  expect(body.index.container).toBe('mkv');
  expect(body.index.streams.map((s: { type: string; codec: string }) => `${s.type}:${s.codec}`)).toEqual(['video:mpeg4', 'audio:mp3']);
});
