// Direct play of every container a browser plays: the file is served with its container's own media
// type and a file name with the right extension, whatever the file on disk is called.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readFileSync, rmSync } from 'node:fs';
import { tempMediaRoot } from '../helpers/media';
import { directPlayFixtures, openPlayback, scanAsset, startPlaybackPlatform } from '../helpers/playback';
import type { TestPlatform } from '../helpers/platform';

let p: TestPlatform;
let token: string;
let media: ReturnType<typeof tempMediaRoot>;
const fixtures = directPlayFixtures();

beforeAll(async () => {
  media = tempMediaRoot();
  for (const f of fixtures) media.place(`Direct/${f.name}`, f.file);
  // The same Matroska file under a misleading name: its type comes from what ffprobe found.
  media.place('Direct/Misnamed.bin', fixtures.find((f) => f.ext === 'mkv')!.file);
  ({ p, token } = await startPlaybackPlatform(media.root));
});

afterAll(async () => {
  await p?.close();
  if (media) rmSync(media.root, { recursive: true, force: true });
});

describe('direct play serves the container media type', () => {
  for (const f of fixtures) {
    test(`${f.name} is served as ${f.type} with a .${f.ext} name`, async () => {
      const { asset } = await scanAsset(p, token, `Direct/${f.name}`);
      const s = await openPlayback(p, token, asset.id, 'direct');
      expect(s.url).toEndWith(`/file.${f.ext}`);
      const res = await fetch(s.url);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(f.type);
      expect(res.headers.get('content-disposition')).toStartWith(`inline; filename="${f.name}"`);
      expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(f.file))).toBe(true);
      const part = await fetch(s.url, { headers: { range: 'bytes=0-99' } });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-type')).toBe(f.type);
      await part.arrayBuffer();
    });
  }

  test('a Matroska file named .bin is served as video/x-matroska named .mkv', async () => {
    const { asset } = await scanAsset(p, token, 'Direct/Misnamed.bin');
    const s = await openPlayback(p, token, asset.id, 'direct');
    expect(s.url).toEndWith('/file.mkv');
    const res = await fetch(s.url);
    expect(res.headers.get('content-type')).toBe('video/x-matroska');
    expect(res.headers.get('content-disposition')).toStartWith('inline; filename="Misnamed.mkv"');
    await res.arrayBuffer();
  });
});
