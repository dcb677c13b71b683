// Local metadata through HTTP on a real platform, with media, .nfo files and images made by ffmpeg:
// a Kodi .nfo and the file's own tags fill a work; poster.jpg, fanart and an embedded cover are its
// images, served as they are or resized; a .nfo declaring entities is ignored; sidecars are never
// assets of their own; the reads are public and bear 50 requests a second from one address.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scanLibrary } from '../helpers/library';
import { catalogToken, localFixtures, patientScan, postScan, tempMediaRoot, type LocalFixtures } from '../helpers/media';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';

let p: TestPlatform;
let fx: LocalFixtures;
let root: ReturnType<typeof tempMediaRoot>;
let token: string;

const AMELIE_NFO = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<movie>
  <title>Amélie</title>
  <originaltitle>Le Fabuleux Destin d&apos;Amélie Poulain</originaltitle>
  <plot><![CDATA[A shy waitress decides to change the lives of those around her.]]></plot>
  <year>2001</year>
  <genre>Comedy</genre>
  <genre>Romance</genre>
  <actor><name>Audrey Tautou</name><role>Amélie</role></actor>
  <set><name>Not a title</name></set>
</movie>`;

// A billion-laughs .nfo: a parser that expanded entities would blow up; this one ignores the file.
const LAUGHS_NFO = `<?xml version="1.0"?>
<!DOCTYPE movie [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>
<movie><title>&c;</title><plot>&c;</plot></movie>`;

const TVSHOW_NFO = `<tvshow><title>Dark</title><plot>Time travel in Winden.</plot><genre>Science Fiction / Thriller</genre><year>2017</year></tvshow>`;
const EPISODE_NFO = `<episodedetails><title>Secrets</title><plot>A boy goes missing.</plot><aired>2017-12-01</aired></episodedetails>`;

beforeAll(async () => {
  fx = localFixtures();
  root = tempMediaRoot();
  root.place('Movies/Amelie (2001)/Amelie (2001).mkv', fx.plain);
  writeFileSync(join(root.root, 'Movies/Amelie (2001)/Amelie (2001).nfo'), AMELIE_NFO);
  root.place('Movies/Amelie (2001)/poster.jpg', fx.poster);
  root.place('Movies/Amelie (2001)/fanart.png', fx.backdrop);
  root.place('Movies/Tagged/Tagged.Film.2010.mp4', fx.tagged);
  root.place('Movies/Laughs (1999)/Laughs (1999).mkv', fx.plain);
  writeFileSync(join(root.root, 'Movies/Laughs (1999)/movie.nfo'), LAUGHS_NFO);
  root.place('Shows/Dark/Season 1/Dark.S01E01.mkv', fx.plain);
  writeFileSync(join(root.root, 'Shows/Dark/Season 1/Dark.S01E01.nfo'), EPISODE_NFO);
  writeFileSync(join(root.root, 'Shows/Dark/tvshow.nfo'), TVSHOW_NFO);
  root.place('Shows/Dark/folder.jpg', fx.poster);
  p = await startTestPlatform({
    services: ['identity', 'catalog', 'workers', 'sources'],
    env: { APP_MEDIA_ROOTS: root.root, APP_WORKERS_POLL_MS: '50' },
  });
  token = await catalogToken(p, 'curator');
});

afterAll(async () => {
  await p?.close();
  if (root) rmSync(root.root, { recursive: true, force: true });
});

const get = (path: string) => fetch(p.url('catalog') + path);
async function workOf(path: string) {
  const res = await patientScan(p, { path }, token);
  expect(res.status).toBe(200);
  const { asset } = (await res.json()) as { asset: { editionId: string } };
  const works = (await (await get('/works?pageSize=200')).json()) as { works: any[] };
  for (const w of works.works) {
    const assets = (await (await get(`/works/${w.id}/assets`)).json()) as { assets: { editionId: string }[] };
    if (assets.assets.some((a) => a.editionId === asset.editionId)) return w;
  }
  throw new Error(`no work holds ${path}`);
}

function imageSize(bytes: ArrayBuffer): { width: number; height: number; codec: string } {
  const file = join(p.dataDir, `probe-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, Buffer.from(bytes));
  const res = Bun.spawnSync(['ffprobe', '-v', 'error', '-show_entries', 'stream=width,height,codec_name', '-of', 'json', file], { stdout: 'pipe' });
  rmSync(file);
  const s = JSON.parse(res.stdout.toString()).streams[0];
  return { width: s.width, height: s.height, codec: s.codec_name };
}

describe('a movie with a .nfo and artwork beside it', () => {
  let work: any;
  beforeAll(async () => {
    work = await workOf('Movies/Amelie (2001)/Amelie (2001).mkv');
  });

  test('takes its title, original title, plot, year and genres from the .nfo, entities decoded', () => {
    expect(work).toMatchObject({
      kind: 'movie',
      title: 'Amélie',
      originalTitle: "Le Fabuleux Destin d'Amélie Poulain",
      overview: 'A shy waitress decides to change the lives of those around her.',
      year: 2001,
      genres: ['Comedy', 'Romance'],
      images: { poster: `/works/${work.id}/images/poster`, backdrop: `/works/${work.id}/images/backdrop` },
    });
  });

  test('GET /works/{id} answers the same fields without a token', async () => {
    const res = await get(`/works/${work.id}`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).work).toMatchObject({ title: 'Amélie', genres: ['Comedy', 'Romance'] });
  });

  test('serves poster.jpg as it is', async () => {
    const res = await get(`/works/${work.id}/images/poster`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/jpeg');
    expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(fx.poster))).toBe(true);
  });

  test('serves the backdrop (fanart.png) as image/png', async () => {
    const res = await get(`/works/${work.id}/images/backdrop`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(imageSize(await res.arrayBuffer())).toMatchObject({ width: 192, height: 108 });
  });

  test('?width= resizes to that width keeping the ratio, as a JPEG, and answers the same bytes again from the cache', async () => {
    const first = await get(`/works/${work.id}/images/poster?width=40`);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('image/jpeg');
    const bytes = await first.arrayBuffer();
    expect(imageSize(bytes)).toEqual({ width: 40, height: 60, codec: 'mjpeg' });
    const again = await get(`/works/${work.id}/images/poster?width=40`);
    expect(Buffer.from(await again.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
  });

  test('a width out of range or an unknown image kind answers 422 problem+json without echoing it', async () => {
    for (const path of [`/works/${work.id}/images/poster?width=99999`, `/works/${work.id}/images/poster?width=abc`, `/works/${work.id}/images/thumbnailzz`]) {
      const res = await get(path);
      expect(res.status).toBe(422);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      const text = await res.text();
      expect(text).not.toContain('99999');
      expect(text).not.toContain('thumbnailzz');
    }
  });

  test('an unknown work answers 404 CATALOG_WORK_NOT_FOUND', async () => {
    const res = await get('/works/wrk_nope/images/poster');
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).code).toBe('CATALOG_WORK_NOT_FOUND');
  });

  test('a changed .nfo is read again by the next scan', async () => {
    writeFileSync(join(root.root, 'Movies/Amelie (2001)/Amelie (2001).nfo'), AMELIE_NFO.replace('<genre>Romance</genre>', '<genre>Fantasy</genre>'));
    const again = await workOf('Movies/Amelie (2001)/Amelie (2001).mkv');
    expect(again.id).toBe(work.id);
    expect(again.genres).toEqual(['Comedy', 'Fantasy']);
  });

  test('one address reads works and images at 60 requests a second without a 429', async () => {
    const started = performance.now();
    const paths = Array.from({ length: 60 }, (_, i) => (i % 2 ? `/works/${work.id}` : `/works/${work.id}/images/poster`));
    const statuses = await Promise.all(paths.map(async (path) => {
      const res = await get(path);
      await res.arrayBuffer();
      return res.status;
    }));
    expect(performance.now() - started).toBeLessThan(1000);
    expect(statuses.every((s) => s === 200)).toBe(true);
  });
});

describe('a file with its own tags and an embedded cover', () => {
  let work: any;
  beforeAll(async () => {
    work = await workOf('Movies/Tagged/Tagged.Film.2010.mp4');
  });

  test('takes title, plot, genre and year from the tags', () => {
    expect(work).toMatchObject({ title: 'Tagged Film Deluxe', overview: 'A plot from the tags.', genres: ['Drama'], year: 2010 });
    expect(work.images).toEqual({ poster: `/works/${work.id}/images/poster`, backdrop: null });
  });

  test('serves the embedded cover as a JPEG of its size, and resized', async () => {
    const res = await get(`/works/${work.id}/images/poster`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/jpeg');
    expect(imageSize(await res.arrayBuffer())).toMatchObject({ width: 80, height: 120 });
    const small = await get(`/works/${work.id}/images/poster?width=20`);
    expect(imageSize(await small.arrayBuffer())).toMatchObject({ width: 20, height: 30 });
  });

  test('a missing backdrop answers 404 CATALOG_IMAGE_NOT_FOUND', async () => {
    const res = await get(`/works/${work.id}/images/backdrop`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).code).toBe('CATALOG_IMAGE_NOT_FOUND');
  });
});

describe('safety and sidecars', () => {
  test('a .nfo declaring entities is ignored whole: the title stays the file name\'s', async () => {
    const work = await workOf('Movies/Laughs (1999)/Laughs (1999).mkv');
    expect(work).toMatchObject({ title: 'Laughs', year: 1999, overview: '' });
  });

  test('POST /scan refuses a .nfo, an image or a subtitle with 422 CATALOG_PATH_REFUSED', async () => {
    for (const path of ['Movies/Amelie (2001)/Amelie (2001).nfo', 'Movies/Amelie (2001)/poster.jpg']) {
      const res = await postScan(p, { path }, token);
      expect(res.status).toBe(422);
      expect(((await res.json()) as any).code).toBe('CATALOG_PATH_REFUSED');
    }
  });

  test('a library scan counts the media only: .nfo and images are not assets', async () => {
    const scan = await scanLibrary(p, token);
    expect(scan.status).toBe('done');
    expect(scan.counts.seen).toBe(4);
    expect(scan.counts.failed).toBe(0);
  });

  test('a rescan reads an unchanged medium again when its .nfo, artwork or subtitles changed, and only that one', async () => {
    const quiet = await scanLibrary(p, token);
    expect(quiet.counts).toMatchObject({ seen: 4, unchanged: 4, changed: 0 });
    writeFileSync(join(root.root, 'Movies/Laughs (1999)/movie.nfo'), '<movie><title>Laughs</title><plot>Now readable.</plot><genre>Comedy</genre></movie>');
    writeFileSync(join(root.root, 'Movies/Laughs (1999)/Laughs (1999).en.srt'), '1\n00:00:00,100 --> 00:00:00,900\nHa\n');
    const scan = await scanLibrary(p, token);
    expect(scan.counts).toMatchObject({ seen: 4, unchanged: 3, changed: 1 });
    const works = (await (await get('/works?q=laughs')).json()) as { works: any[] };
    expect(works.works[0]).toMatchObject({ overview: 'Now readable.', genres: ['Comedy'] });
    const assets = (await (await get(`/works/${works.works[0].id}/assets`)).json()) as { assets: any[] };
    expect(assets.assets[0].subtitles).toEqual([{ language: 'eng', format: 'srt', text: true, source: 'sidecar' }]);
  });
});

describe('an episode with its own .nfo and a tvshow.nfo above it', () => {
  test('the episode takes its .nfo, the series takes tvshow.nfo and folder.jpg', async () => {
    const episode = await workOf('Shows/Dark/Season 1/Dark.S01E01.mkv');
    expect(episode).toMatchObject({ kind: 'episode', title: 'Secrets', overview: 'A boy goes missing.', year: 2017 });
    expect(episode.images.poster).toBeNull();
    const works = (await (await get('/works?kind=series')).json()) as { works: any[] };
    const series = works.works.find((w) => w.title === 'Dark');
    expect(series).toMatchObject({ overview: 'Time travel in Winden.', genres: ['Science Fiction', 'Thriller'], year: 2017 });
    const poster = await get(series.images.poster);
    expect(poster.status).toBe(200);
    expect(Buffer.from(await poster.arrayBuffer()).equals(readFileSync(fx.poster))).toBe(true);
  });
});
