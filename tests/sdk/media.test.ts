// The SDK's media calls from plain Node (the packed tarball): a library scan started and waited for,
// the works, one file scanned, a playback session whose URL plays (Range), problem+json answers as
// KeelError, all with an identity API key the SDK exchanges for access tokens itself.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { createActor } from '../helpers/identity';
import { playbackFixtures, tempMediaRoot } from '../helpers/media';
import { PLAY } from '../helpers/playback';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';
import { nodeProject, run } from './sdk-helpers';

let p: TestPlatform;
let media: ReturnType<typeof tempMediaRoot>;
let project: Awaited<ReturnType<typeof nodeProject>>;

beforeAll(async () => {
  media = tempMediaRoot();
  media.place('Movies/Clip (2001).mp4', playbackFixtures().mp4);
  [p, project] = await Promise.all([
    startTestPlatform({ services: ['identity', 'catalog', 'workers', 'sources', 'playback'], env: { APP_MEDIA_ROOTS: media.root, APP_WORKERS_POLL_MS: '50' } }),
    nodeProject(['media-script.mjs']),
  ]);
}, 120_000);
afterAll(async () => {
  await p?.close();
  project?.remove();
  if (media) rmSync(media.root, { recursive: true, force: true });
});

test('library scan and wait, works, a file scan, a playback session, problem+json errors, with an API key', async () => {
  const { apiKey } = await createActor(p, ['resource:asset:scan', PLAY], 'sdk-viewer');
  const r = await run(['node', 'media-script.mjs'], {
    cwd: project.dir,
    env: { KEEL_API_KEY: apiKey, KEEL_CATALOG_URL: p.url('catalog'), KEEL_PLAYBACK_URL: p.url('playback'), KEEL_IDENTITY_URL: p.url('identity') },
    timeoutMs: 90_000,
  });
  expect(r.err).toBe('');
  expect(r.code).toBe(0);
  const out = JSON.parse(r.out.trim().split('\n').at(-1)!);
  expect(out.started).toEqual({ status: 'queued', hasId: true });
  expect(out.scanned).toMatchObject({ status: 'done', counts: { seen: 1, added: 1, failed: 0 } });
  expect(out.works).toEqual(['Clip']);
  expect(out.file).toEqual({ indexed: true, path: 'Movies/Clip (2001).mp4', hasIndex: true });
  expect(out.playback).toEqual({ mode: 'direct', assetId: true, status: 206, bytes: 1024 });
  expect(out.problem).toEqual({ isKeelError: true, status: 404, code: 'CATALOG_FOLDER_NOT_FOUND', retryable: false });
  expect(out.badKey.status).toBe(401);
}, 120_000);
