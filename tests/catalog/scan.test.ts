// POST /scan through HTTP on a real platform (catalog + identity on NATS), with media made by ffmpeg:
// every fact against what ffprobe says, rescans, root confinement, the Bearer guard and the event.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { closeSync, copyFileSync, mkdtempSync, openSync, rmSync, statSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNatsBus } from '../../src/platform/bus/nats';
import type { Bus } from '../../src/platform/bus/bus';
import type { BusEvents } from '../../src/platform/bus/subjects';
import { createLogger } from '../../src/platform/runtime';
import { catalogToken, ffprobeJson, ffprobeKeyframesMs, mediaFixtures, patientScan, postScan, tempMediaRoot, type MediaFixtures } from '../helpers/media';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../helpers/platform';

let p: TestPlatform;
let fx: MediaFixtures;
let a: ReturnType<typeof tempMediaRoot>;
let b: ReturnType<typeof tempMediaRoot>;
let outside: string;
let token: string;
let listener: Bus;
const events: BusEvents['evt.catalog.assetIndexed'][] = [];

beforeAll(async () => {
  fx = mediaFixtures();
  a = tempMediaRoot();
  b = tempMediaRoot();
  outside = mkdtempSync(join(tmpdir(), 'keel-outside-'));
  copyFileSync(fx.mkv, join(outside, 'secret.mkv'));
  a.place('Movies/The Matrix (1999).mkv', fx.mkvSubs);
  a.place('Movies/Heat.1995.1080p.BluRay.x264.mp4', fx.mp4Subs);
  a.place('misc/holiday clip.mp4', fx.mp4);
  a.place('misc/bonus.mkv', fx.mkv);
  a.place('misc/notes.txt', fx.text);
  a.place('misc/broken.mp4', fx.corrupt);
  a.place('replace/Arrival (2016).mp4', fx.mp4);
  a.place('events/Solaris (1972).mkv', fx.mkv);
  symlinkSync(join(outside, 'secret.mkv'), join(a.root, 'escape.mkv'));
  symlinkSync(outside, join(a.root, 'dirlink'));
  symlinkSync(join(a.root, 'Movies/The Matrix (1999).mkv'), join(a.root, 'matrix-link.mkv'));
  b.place('only-in-b/Dune (2021).mp4', fx.mp4);
  const nats = requireTestEnv('KEEL_TEST_NATS_URL');
  p = await startTestPlatform({ services: ['catalog', 'identity'], env: { APP_MEDIA_ROOTS: `${a.root}:${b.root}`, APP_BUS: nats } });
  listener = await createNatsBus(nats, createLogger({ test: 'scan' }, 'error'));
  listener.subscribe('evt.catalog.assetIndexed', (e) => {
    events.push(e);
  });
  token = await catalogToken(p, 'scanner');
});

afterAll(async () => {
  await listener?.close();
  await p?.close();
  for (const d of [a?.root, b?.root, outside]) if (d) rmSync(d, { recursive: true, force: true });
});

const rawScan = (body: unknown, tok: string | null = token) => postScan(p, body, tok);
const scan = (body: unknown, tok: string | null = token) => patientScan(p, body, tok);

async function scanOk(body: unknown) {
  const res = await scan(body);
  expect(res.status).toBe(200);
  return (await res.json()) as { asset: any; index: any; indexed: boolean };
}

const frameRate = (r: string) => {
  const [x, y] = r.split('/').map(Number);
  return Math.round((x! / y!) * 1000) / 1000;
};

/** The index must say exactly what a direct ffprobe run says about the same file. */
function expectFactsOfFfprobe(index: any, file: string) {
  const j = ffprobeJson(file);
  expect(index.durationMs).toBe(Math.round(Number(j.format.duration) * 1000));
  expect(index.bitrateBps).toBe(Number(j.format.bit_rate));
  expect(index.streams).toHaveLength(j.streams.length);
  for (const s of j.streams) {
    const mine = index.streams.find((x: any) => x.index === s.index);
    expect(mine.type).toBe(s.codec_type);
    expect(mine.codec).toBe(s.codec_name);
    expect(mine.language).toBe(s.tags?.language ?? 'und');
    expect(mine.defaultFlag).toBe(s.disposition.default === 1);
    expect(mine.bitRateBps).toBe(s.bit_rate ? Number(s.bit_rate) : null);
    if (s.codec_type === 'audio') {
      expect(mine.channels).toBe(s.channels);
      expect(mine.sampleRate).toBe(Number(s.sample_rate));
    }
    if (s.codec_type === 'video') {
      expect(mine.width).toBe(s.width);
      expect(mine.height).toBe(s.height);
      expect(mine.frameRate).toBe(frameRate(s.avg_frame_rate));
    }
  }
  expect(index.keyframesMs).toEqual(ffprobeKeyframesMs(file));
}

describe('the Bearer guard on POST /scan', () => {
  test('a scan without a token is 401 unauthenticated as problem+json', async () => {
    const res = await scan({ path: 'misc/notes.txt' }, null);
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect((await res.json()).code).toBe('unauthenticated');
  });

  test('a token without the policy resource:asset:scan is 403 forbidden', async () => {
    const reader = await catalogToken(p, 'reader', ['resource:work:read']);
    const res = await scan({ path: 'misc/notes.txt' }, reader);
    expect(res.status).toBe(403);
    expect((await res.json()).code).toBe('forbidden');
  });

  test('an actor past its burst of 20 scans gets 429 rate-limited with Retry-After', async () => {
    const eager = await catalogToken(p, 'eager');
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 24; i++) {
      const res = await rawScan({ path: 'misc/does-not-exist.mkv' }, eager);
      statuses.push(res.status);
      if (res.status === 429) {
        retryAfter = res.headers.get('retry-after');
        expect((await res.json()).code).toBe('rate-limited');
      } else await res.body?.cancel();
    }
    expect(statuses.slice(0, 20).every((s) => s === 404)).toBe(true);
    expect(statuses).toContain(429);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  });
});

describe('facts of the media engine', () => {
  test('an MKV with SRT and ASS subtitles is indexed with exactly the facts of ffprobe', async () => {
    const file = join(a.root, 'Movies/The Matrix (1999).mkv');
    const { asset, index, indexed } = await scanOk({ path: 'Movies/The Matrix (1999).mkv' });
    expect(indexed).toBe(true);
    expect(asset).toMatchObject({ path: 'Movies/The Matrix (1999).mkv', container: 'mkv', identification: 'identified', kind: 'logical-composition', layout: 'file' });
    expect(asset.sizeBytes).toBe(statSync(file).size);
    expect(asset.fastHash).toMatch(/^[0-9a-f]{16}$/);
    expect(index.assetId).toBe(asset.id);
    expect(index.container).toBe('mkv');
    expect(index.indexVersion).toBe(1);
    expectFactsOfFfprobe(index, file);
    expect(index.streams.filter((s: any) => s.type === 'subtitle').map((s: any) => s.codec)).toEqual(['subrip', 'ass']);
    expect(index.keyframesMs).toHaveLength(3);
    expect(index.capabilities).toEqual(['seekable', 'keyframe-index', 'direct-play', 'direct-play-container', 'text-subtitles']);
  });

  test('an MP4 with mov_text subtitles is indexed with exactly the facts of ffprobe', async () => {
    const file = join(a.root, 'Movies/Heat.1995.1080p.BluRay.x264.mp4');
    const { asset, index } = await scanOk({ path: 'Movies/Heat.1995.1080p.BluRay.x264.mp4' });
    expect(asset.container).toBe('mp4');
    expect(index.container).toBe('mp4');
    expectFactsOfFfprobe(index, file);
    expect(index.streams.map((s: any) => s.type)).toEqual(['video', 'audio', 'subtitle']);
    expect(index.streams[2].codec).toBe('mov_text');
    expect(index.streams[2].language).toBe('fra');
    expect(index.capabilities).toContain('text-subtitles');
  });

  test('an MP4 without subtitles and without a recognisable name is indexed but unidentified', async () => {
    const { asset, index, indexed } = await scanOk({ path: 'misc/holiday clip.mp4' });
    expect(indexed).toBe(true);
    expect(asset.identification).toBe('unidentified');
    expectFactsOfFfprobe(index, join(a.root, 'misc/holiday clip.mp4'));
    expect(index.streams.some((s: any) => s.type === 'subtitle')).toBe(false);
    expect(index.capabilities).not.toContain('text-subtitles');
  });

  test('a sparse file over 4 GiB gets its 64-bit fastHash and size, as a normal non-medium', async () => {
    const file = join(a.root, 'misc/huge.bin');
    Bun.spawnSync(['truncate', '-s', '5G', file]);
    const fd = openSync(file, 'r+');
    writeSync(fd, Buffer.alloc(8, 0xff), 0, 8, 0); // with the last word (1) the words sum to 2^64
    writeSync(fd, Buffer.from([1, 0, 0, 0, 0, 0, 0, 0]), 0, 8, 5 * 2 ** 30 - 8);
    closeSync(fd);
    const { asset, indexed } = await scanOk({ path: 'misc/huge.bin' });
    expect(indexed).toBe(false);
    expect(asset.sizeBytes).toBe(5 * 2 ** 30);
    expect(asset.fastHash).toBe('0000000140000000');
  });

  test('a raw H.264 stream without timestamps is a medium with keyframes from the packet scan', async () => {
    const raw = join(a.root, 'misc/stream.h264');
    Bun.spawnSync(['ffmpeg', '-loglevel', 'error', '-y', '-i', fx.mp4, '-an', '-c:v', 'copy', '-bsf:v', 'h264_mp4toannexb', '-f', 'h264', raw]);
    const { asset, index } = await scanOk({ path: 'misc/stream.h264' });
    expect(asset.container).toBe('h264');
    expect(index.keyframesMs).toEqual(ffprobeKeyframesMs(fx.mp4));
    expect(index.capabilities).toContain('keyframe-index');
  });

  test('a text file is a normal answer: unidentified, not indexed, index null', async () => {
    const res = await scan({ path: 'misc/notes.txt' });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.indexed).toBe(false);
    expect(body.index).toBeNull();
    expect(body.asset).toMatchObject({ identification: 'unidentified', kind: 'opaque', container: 'unknown', sizeBytes: statSync(fx.text).size });
  });

  test('a corrupt MP4 is a normal answer: unidentified and not indexed', async () => {
    const body = await scanOk({ path: 'misc/broken.mp4' });
    expect(body.indexed).toBe(false);
    expect(body.index).toBeNull();
    expect(body.asset.identification).toBe('unidentified');
  });
});

describe('rescans', () => {
  test('scanning the same file again changes nothing', async () => {
    const first = await scanOk({ path: 'Movies/The Matrix (1999).mkv' });
    const works1 = await (await fetch(p.url('catalog') + '/works?pageSize=200')).json();
    const again = await scanOk({ path: 'Movies/The Matrix (1999).mkv' });
    const works2 = await (await fetch(p.url('catalog') + '/works?pageSize=200')).json();
    expect(again).toEqual(first);
    expect(works2).toEqual(works1);
  });

  test('a symlink inside the root is the same asset as its target', async () => {
    const direct = await scanOk({ path: 'Movies/The Matrix (1999).mkv' });
    const linked = await scanOk({ path: 'matrix-link.mkv' });
    expect(linked.asset.id).toBe(direct.asset.id);
    expect(linked.asset.path).toBe('Movies/The Matrix (1999).mkv');
  });

  test('a replaced file keeps its asset and gets a new index version with the new facts', async () => {
    const before = await scanOk({ path: 'replace/Arrival (2016).mp4' });
    copyFileSync(fx.mp4Subs, join(a.root, 'replace/Arrival (2016).mp4'));
    const after = await scanOk({ path: 'replace/Arrival (2016).mp4' });
    expect(after.asset.id).toBe(before.asset.id);
    expect(after.asset.editionId).toBe(before.asset.editionId);
    expect(after.asset.fastHash).not.toBe(before.asset.fastHash);
    expect(after.index.id).toBe(before.index.id);
    expect(after.index.indexVersion).toBe(2);
    expect(after.index.streams).toHaveLength(3);
  });

  test('a medium replaced by a non-medium loses its index and becomes unidentified in its edition', async () => {
    a.place('replace/Gone (2010).mkv', fx.mkv);
    const before = await scanOk({ path: 'replace/Gone (2010).mkv' });
    expect(before.indexed).toBe(true);
    writeFileSync(join(a.root, 'replace/Gone (2010).mkv'), 'no longer a film\n');
    const after = await scanOk({ path: 'replace/Gone (2010).mkv' });
    expect(after.asset.id).toBe(before.asset.id);
    expect(after).toMatchObject({ indexed: false, index: null, asset: { identification: 'unidentified', kind: 'opaque', editionId: before.asset.editionId } });
  });
});

describe('media roots', () => {
  const attempts = [
    '../outside/secret.mkv',
    '/etc/passwd',
    'Movies/../../secret.mkv',
    '..',
    'escape.mkv',
    'dirlink/secret.mkv',
    '%2e%2e/%2e%2e/etc/passwd',
    '..%2fsecret.mkv',
    'Movies%2f..%2f..%2fsecret.mkv',
    'Movies\\..\\..\\secret.mkv',
    'misc/notes.txt\u0000.mkv',
    'C:/Windows/win.ini',
    'Movies',
    '.',
  ];

  test('every attempt to leave a media root is refused without repeating the path', async () => {
    attempts.push(join(a.root, 'Movies/The Matrix (1999).mkv'));
    for (const path of attempts) {
      const res = await scan({ path });
      expect(res.status).toBe(422);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      const text = await res.text();
      const body = JSON.parse(text);
      expect(body.code).toBe('CATALOG_PATH_REFUSED');
      expect(body.retryable).toBe(false);
      expect(body.category).toBe('permanent');
      // (`.` and `..` are too short to look for: the title has dots of its own.)
      for (const piece of [path.length > 2 ? path : 'secret', 'secret', 'passwd', 'win.ini', outside, a.root]) expect(text).not.toContain(piece);
    }
  });

  test('a playlist or concat script under the root makes ffprobe open nothing outside it: not a medium', async () => {
    const secret = join(outside, 'secret.mkv');
    const playlist = `#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:2,\n${secret}\n#EXT-X-ENDLIST\n`;
    writeFileSync(join(a.root, 'misc/outside.m3u8'), playlist);
    // ffmpeg 5.1 detects a playlist by its content whatever the extension.
    writeFileSync(join(a.root, 'misc/playlist-named.mkv'), playlist);
    // The concat demuxer's safe mode refuses `..` and absolute names, but follows a symlink next to it.
    symlinkSync(secret, join(a.root, 'misc/secret-link.mkv'));
    writeFileSync(join(a.root, 'misc/via-link.ffconcat'), 'ffconcat version 1.0\nfile secret-link.mkv\n');
    for (const path of ['misc/outside.m3u8', 'misc/playlist-named.mkv', 'misc/via-link.ffconcat']) {
      const body = await scanOk({ path });
      expect({ path, indexed: body.indexed, index: body.index }).toEqual({ path, indexed: false, index: null });
      const reply = await listener.request('qry.media.probe', { root: 0, path });
      expect({ path, medium: reply.medium }).toEqual({ path, medium: false });
    }
  });

  test('a FIFO or a directory under the root is refused: only regular files are scanned', async () => {
    Bun.spawnSync(['mkfifo', join(a.root, 'misc/pipe.mkv')]);
    for (const path of ['misc/pipe.mkv', 'misc']) {
      const res = await scan({ path });
      expect(res.status).toBe(422);
      expect((await res.json()).code).toBe('CATALOG_PATH_REFUSED');
    }
  });

  test('an empty path is a 422 validation problem', async () => {
    const res = await scan({ path: '' });
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({ code: 'validation', on: 'body', property: '/path' });
  });

  test('a file that exists under no root is 404 CATALOG_PATH_NOT_FOUND', async () => {
    const res = await scan({ path: 'Movies/Nothing Here (2001).mkv' });
    expect(res.status).toBe(404);
    const text = await res.text();
    expect(JSON.parse(text).code).toBe('CATALOG_PATH_NOT_FOUND');
    expect(text).not.toContain('Nothing Here');
  });

  test('without a root index the first root holding the file is used', async () => {
    const { asset } = await scanOk({ path: 'only-in-b/Dune (2021).mp4' });
    expect(asset.path).toBe('only-in-b/Dune (2021).mp4');
    const same = await scanOk({ path: 'only-in-b/Dune (2021).mp4', root: 1 });
    expect(same.asset.id).toBe(asset.id);
  });

  test('a root index names one root: elsewhere the file is not found, and an unknown index is refused', async () => {
    expect((await scan({ path: 'only-in-b/Dune (2021).mp4', root: 0 })).status).toBe(404);
    const res = await scan({ path: 'only-in-b/Dune (2021).mp4', root: 7 });
    expect(res.status).toBe(422);
    expect((await res.json()).code).toBe('CATALOG_PATH_REFUSED');
  });
});

describe('explicit binding', () => {
  test('unknown workId and editionId are 404 problems with domain codes', async () => {
    const w = await scan({ path: 'misc/bonus.mkv', workId: 'wrk_nope' });
    expect(w.status).toBe(404);
    expect((await w.json()).code).toBe('CATALOG_WORK_NOT_FOUND');
    const e = await scan({ path: 'misc/bonus.mkv', editionId: 'edn_nope' });
    expect(e.status).toBe(404);
    expect((await e.json()).code).toBe('CATALOG_EDITION_NOT_FOUND');
  });

  test('workId files an unrecognisable file under that work, and editionId under that edition', async () => {
    const matrix = await scanOk({ path: 'Movies/The Matrix (1999).mkv' });
    const work = (await (await fetch(p.url('catalog') + '/works?pageSize=200')).json()).works.find((w: any) => w.title === 'The Matrix');
    const bound = await scanOk({ path: 'misc/bonus.mkv', workId: work.id });
    expect(bound.asset.identification).toBe('identified');
    expect(bound.asset.editionId).toBe(matrix.asset.editionId);
    const assets = (await (await fetch(p.url('catalog') + `/works/${work.id}/assets`)).json()).assets;
    expect(assets.map((x: any) => x.assetId)).toContain(bound.asset.id);
    const byEdition = await scanOk({ path: 'misc/bonus.mkv', editionId: matrix.asset.editionId });
    expect(byEdition.asset.editionId).toBe(matrix.asset.editionId);
  });

  test('an edition of another work than workId is 409 CATALOG_BINDING_CONFLICT', async () => {
    const heat = await scanOk({ path: 'Movies/Heat.1995.1080p.BluRay.x264.mp4' });
    const works = (await (await fetch(p.url('catalog') + '/works?pageSize=200')).json()).works;
    const matrix = works.find((w: any) => w.title === 'The Matrix');
    const res = await scan({ path: 'misc/bonus.mkv', editionId: heat.asset.editionId, workId: matrix.id });
    expect(res.status).toBe(409);
    expect((await res.json()).code).toBe('CATALOG_BINDING_CONFLICT');
  });
});

describe('evt.catalog.assetIndexed', () => {
  test('an indexed scan publishes the documented payload on the bus', async () => {
    const { asset, index } = await scanOk({ path: 'events/Solaris (1972).mkv' });
    const deadline = Date.now() + 3000;
    while (!events.some((e) => e.assetId === asset.id) && Date.now() < deadline) await Bun.sleep(20);
    const e = events.find((x) => x.assetId === asset.id)!;
    expect(e).toMatchObject({
      assetId: asset.id,
      editionId: asset.editionId,
      root: 0,
      path: 'events/Solaris (1972).mkv',
      identification: 'identified',
      indexed: true,
      indexVersion: 1,
      replaced: false,
      container: 'mkv',
      durationMs: index.durationMs,
      fastHash: asset.fastHash,
      capabilities: index.capabilities,
    });
    expect(typeof e.workId).toBe('string');
    expect(typeof e.at).toBe('number');
  });

  test('a file that is not a medium publishes nothing', async () => {
    const { asset } = await scanOk({ path: 'misc/notes.txt' });
    await Bun.sleep(200);
    expect(events.some((e) => e.assetId === asset.id)).toBe(false);
  });
});

describe('qry.media.probe on the bus', () => {
  test('any service may ask the media engine: a medium answers its facts and where its keyframes came from', async () => {
    const reply = await listener.request('qry.media.probe', { root: 0, path: 'Movies/The Matrix (1999).mkv' });
    expect(reply.medium).toBe(true);
    if (!reply.medium) return;
    expect(reply.facts.keyframeSource).toBe('cues');
    expect(reply.facts.container).toBe('mkv');
    expect(reply.sizeBytes).toBe(statSync(join(a.root, 'Movies/The Matrix (1999).mkv')).size);
  });

  test('a non-medium is a normal reply with a reason', async () => {
    const reply = await listener.request('qry.media.probe', { root: 0, path: 'misc/broken.mp4' });
    expect(reply).toMatchObject({ medium: false, reason: expect.any(String) });
  });

  test('the engine confines the path itself, whoever asks', async () => {
    for (const req of [{ root: 0, path: '../secret.mkv' }, { root: 0, path: 'escape.mkv' }, { root: 0.5, path: 'misc/notes.txt' }, { root: 0, path: 42 }]) {
      const err = await listener.request('qry.media.probe', req as any).then(() => null, (e) => e);
      expect(err?.code).toBe('CATALOG_PATH_REFUSED');
    }
  });
});

describe('request errors of /scan', () => {
  test('broken JSON is 400 parse', async () => {
    const res = await scan('{"path": ');
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'parse', status: 400 });
  });

  test('a body without path is 422 validation naming the property, never the value', async () => {
    const res = await scan({ editionId: 'x'.repeat(300) });
    expect(res.status).toBe(422);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ code: 'validation', on: 'body' });
    expect(text).not.toContain('x'.repeat(300));
  });
});
