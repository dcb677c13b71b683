// Library scans through HTTP on a real platform (identity, catalog, workers, sources in one process),
// on files made by ffmpeg: counts, no probe for unchanged files, files gone and back, roots that
// vanish as a whole, folders, the guard and bad input.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, renameSync, rmSync, statSync, utimesSync, copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BusEvents } from '../../src/platform/bus/subjects';
import { getLibraryScan, postLibraryScan, scanLibrary, waitForScan } from '../helpers/library';
import { catalogToken, mediaFixtures, tempMediaRoot, type MediaFixtures } from '../helpers/media';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';
import { dereferencedDocument } from '../helpers/openapi';

let p: TestPlatform;
let fx: MediaFixtures;
let a: ReturnType<typeof tempMediaRoot>;
let b: ReturnType<typeof tempMediaRoot>;
let token: string;
const indexed: BusEvents['evt.catalog.assetIndexed'][] = [];
const availability: BusEvents['evt.catalog.assetAvailability'][] = [];

beforeAll(async () => {
  fx = mediaFixtures();
  a = tempMediaRoot();
  b = tempMediaRoot();
  a.place('Movies/The Matrix (1999).mkv', fx.mkv);
  a.place('Movies/Heat (1995).mp4', fx.mp4);
  a.place('Shows/Solaris (1972).mkv', fx.mkvSubs);
  a.place('misc/broken.mp4', fx.corrupt);
  a.place('misc/notes.txt', fx.text); // not a media extension: not an asset of its own
  a.place('misc/.partial.mkv', fx.mkv); // dot file: skipped
  // A name the catalog refuses (a backslash): the walk sees it, its probe fails.
  a.place('misc/bad\\name.mkv', fx.mkv);
  b.place('Arrival (2016).mp4', fx.mp4);
  p = await startTestPlatform({
    services: ['identity', 'catalog', 'workers', 'sources'],
    env: { APP_MEDIA_ROOTS: `${a.root}:${b.root}`, APP_WORKERS_POLL_MS: '50', APP_LIBRARY_BATCH: '2' },
  });
  p.bus.subscribe('evt.catalog.assetIndexed', (e) => void indexed.push(e));
  p.bus.subscribe('evt.catalog.assetAvailability', (e) => void availability.push(e));
  token = await catalogToken(p, 'librarian');
});

afterAll(async () => {
  await p?.close();
  for (const d of [a?.root, b?.root]) if (d) rmSync(d, { recursive: true, force: true });
});

async function assetsOf(title: string) {
  const works = (await (await fetch(p.url('catalog') + '/works?pageSize=200')).json()) as { works: { id: string; title: string }[] };
  const work = works.works.find((w) => w.title === title);
  if (!work) throw new Error(`no work titled ${title}`);
  return ((await (await fetch(p.url('catalog') + `/works/${work.id}/assets`)).json()) as { assets: { assetId: string; available: boolean }[] }).assets;
}

describe('a first scan of every root', () => {
  test('answers 202 queued, then counts every media file as added and the refused one as failed', async () => {
    const res = await postLibraryScan(p, token);
    expect(res.status).toBe(202);
    const accepted = await res.json();
    expect(accepted).toEqual({ id: expect.any(String), status: 'queued' });
    const scan = await waitForScan(p, token, accepted.id);
    expect(scan.status).toBe('done');
    expect(scan.counts).toEqual({ seen: 6, added: 5, changed: 0, unchanged: 0, offline: 0, failed: 1 });
    expect(scan.startedAt).toBeNumber();
    expect(scan.finishedAt!).toBeGreaterThanOrEqual(scan.startedAt!);
    expect(scan.error).toBeUndefined();
    expect((await assetsOf('The Matrix'))[0]!.available).toBe(true);
  });

  test('a rescan of unchanged files probes none of them', async () => {
    const before = indexed.length;
    const scan = await scanLibrary(p, token);
    expect(scan.counts).toEqual({ seen: 6, added: 0, changed: 0, unchanged: 5, offline: 0, failed: 1 });
    expect(indexed.length).toBe(before);
  });
});

describe('changes between scans', () => {
  test('a file whose size changed is probed again and counted as changed', async () => {
    const before = indexed.length;
    const file = join(a.root, 'Movies/Heat (1995).mp4');
    copyFileSync(fx.mp4Subs, file);
    const scan = await scanLibrary(p, token, { path: 'Movies' });
    expect(scan.counts).toMatchObject({ seen: 2, changed: 1, unchanged: 1, added: 0 });
    expect(indexed.slice(before).map((e) => e.path)).toEqual(['Movies/Heat (1995).mp4']);
  });

  test('a file whose mtime alone changed is probed again too', async () => {
    const file = join(a.root, 'Movies/The Matrix (1999).mkv');
    const later = new Date(statSync(file).mtimeMs + 60_000);
    utimesSync(file, later, later);
    const scan = await scanLibrary(p, token, { path: 'Movies' });
    expect(scan.counts).toMatchObject({ changed: 1, unchanged: 1 });
  });

  test('a vanished file marks its asset unavailable and keeps it; back again, it is available', async () => {
    const file = join(a.root, 'Shows/Solaris (1972).mkv');
    const hidden = join(a.root, 'Solaris.hidden');
    renameSync(file, hidden);
    const gone = await scanLibrary(p, token);
    expect(gone.counts).toMatchObject({ offline: 1, unchanged: 5 - 1 });
    const [asset] = await assetsOf('Solaris');
    expect(asset!.available).toBe(false);
    expect(availability.at(-1)).toMatchObject({ assetId: asset!.assetId, available: false, path: 'Shows/Solaris (1972).mkv' });

    renameSync(hidden, file); // same size and mtime: no probe needed to know it is back
    const back = await scanLibrary(p, token);
    expect(back.counts).toMatchObject({ offline: 0, unchanged: 5, changed: 0 });
    const [again] = await assetsOf('Solaris');
    expect(again).toMatchObject({ assetId: asset!.assetId, available: true });
    expect(availability.at(-1)).toMatchObject({ assetId: asset!.assetId, available: true });
  });

  test('a scan of one folder judges only the files under it', async () => {
    renameSync(join(b.root, 'Arrival (2016).mp4'), join(b.root, 'Arrival.moved'));
    const scan = await scanLibrary(p, token, { path: 'Movies' });
    expect(scan.counts).toMatchObject({ seen: 2, offline: 0 });
    expect((await assetsOf('Arrival'))[0]!.available).toBe(true);
    renameSync(join(b.root, 'Arrival.moved'), join(b.root, 'Arrival (2016).mp4'));
  });
});

describe('roots that are missing or empty as a whole', () => {
  test('an empty root fails the scan with the reason and marks nothing unavailable', async () => {
    const aside = b.root + '.aside';
    renameSync(b.root, aside);
    mkdirSync(b.root);
    try {
      const scan = await scanLibrary(p, token);
      expect(scan.status).toBe('failed');
      expect(scan.error).toContain('media root 1 is empty');
      expect(scan.error).not.toContain(b.root);
      expect(scan.counts.offline).toBe(0);
      expect((await assetsOf('Arrival'))[0]!.available).toBe(true);
      expect((await assetsOf('The Matrix'))[0]!.available).toBe(true);
    } finally {
      rmSync(b.root, { recursive: true });
      renameSync(aside, b.root);
    }
  });

  test('a missing root fails the scan with the reason and marks nothing unavailable', async () => {
    const aside = a.root + '.aside';
    renameSync(a.root, aside);
    try {
      const res = await postLibraryScan(p, token, { root: 0 });
      expect(res.status).toBe(202);
      const scan = await waitForScan(p, token, (await res.json()).id);
      expect(scan.status).toBe('failed');
      expect(scan.error).toContain('media root 0 is missing');
      expect((await assetsOf('The Matrix'))[0]!.available).toBe(true);
    } finally {
      renameSync(aside, a.root);
    }
  });
});

describe('requests', () => {
  test('without a token the scan is refused with 401, without the policy with 403', async () => {
    expect((await postLibraryScan(p, null)).status).toBe(401);
    const reader = await catalogToken(p, 'reader', ['resource:work:read']);
    const res = await postLibraryScan(p, reader);
    expect(res.status).toBe(403);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
  });

  test('a folder that exists on no root is 404 CATALOG_FOLDER_NOT_FOUND', async () => {
    const res = await postLibraryScan(p, token, { path: 'Nowhere' });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: 'CATALOG_FOLDER_NOT_FOUND', status: 404 });
  });

  test('a path that leaves the roots or names a file is 422 CATALOG_PATH_REFUSED without echoing it', async () => {
    for (const path of ['../etc', '/etc', 'Movies/The Matrix (1999).mkv']) {
      const res = await postLibraryScan(p, token, { path });
      expect(res.status).toBe(422);
      const body = await res.json();
      expect(body.code).toBe('CATALOG_PATH_REFUSED');
      expect(JSON.stringify(body)).not.toContain(path);
    }
  });

  test('an unknown root index is 422 and a wrong type is 422 validation', async () => {
    expect((await (await postLibraryScan(p, token, { root: 7 })).json()).code).toBe('CATALOG_PATH_REFUSED');
    const res = await postLibraryScan(p, token, { path: 42 });
    expect(res.status).toBe(422);
    expect((await res.json()).code).toBe('validation');
  });

  test('a scan of a folder that became empty fails without naming it', async () => {
    mkdirSync(join(a.root, 'Empty Shelf'));
    const scan = await scanLibrary(p, token, { path: 'Empty Shelf' });
    expect(scan).toMatchObject({ status: 'failed', error: 'the scanned folder on media root 0 is empty; nothing was marked unavailable' });
  });

  test('with no workers service on the bus the scan is refused with 503 BUS_NO_ANSWERER and leaves nothing behind', async () => {
    const lonely = await startTestPlatform({ services: ['identity', 'catalog'], env: { APP_MEDIA_ROOTS: a.root } });
    try {
      const res = await postLibraryScan(lonely, await catalogToken(lonely, 'lonely'));
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ code: 'BUS_NO_ANSWERER', retryable: true });
    } finally {
      await lonely.close();
    }
  });

  test('a folder on a media root of / is accepted like one on any other root', async () => {
    // No workers service here: the request gets past the path check and stops at the bus, so nothing
    // walks the host's file system.
    const whole = await startTestPlatform({ services: ['identity', 'catalog'], env: { APP_MEDIA_ROOTS: '/' } });
    try {
      const res = await postLibraryScan(whole, await catalogToken(whole, 'whole'), { root: 0, path: `${a.root.slice(1)}/Movies` });
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ code: 'BUS_NO_ANSWERER' });
    } finally {
      await whole.close();
    }
  });

  test('an unknown scan id is 404 CATALOG_SCAN_NOT_FOUND', async () => {
    const res = await fetch(p.url('catalog') + '/library/scans/scn_nope', { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(404);
    expect((await res.json()).code).toBe('CATALOG_SCAN_NOT_FOUND');
  });

  test('the bus command cmd.library.scan starts a scan like POST does', async () => {
    const started = await p.bus.request('cmd.library.scan', { path: 'Movies' });
    expect(started.status).toBe('queued');
    const scan = await waitForScan(p, token, started.id);
    expect(scan).toMatchObject({ status: 'done', counts: { seen: 2, unchanged: 2 } });
  });

  test('the scan routes are in the OpenAPI description with their errors', async () => {
    const doc = await dereferencedDocument(p.url('catalog'));
    expect(Object.keys(doc.paths['/library/scans'].post.responses).sort()).toEqual(['202', '400', '401', '403', '404', '413', '422', '429', '503', '504']);
    expect(Object.keys(doc.paths['/library/scans/{id}'].get.responses)).toContain('404');
    const summary = doc.paths['/works/{id}/assets'].get.responses['200'].content['application/json'].schema;
    expect(JSON.stringify(summary)).toContain('"available"');
  });

  test('GET of a scan answers the shape of CONTRACT.md', async () => {
    const started = await p.bus.request('cmd.library.scan', {});
    const scan = await getLibraryScan(p, token, started.id);
    expect(Object.keys(scan).sort()).toEqual(expect.arrayContaining(['counts', 'finishedAt', 'id', 'startedAt', 'status']));
    await waitForScan(p, token, started.id);
  });
});

// A non-media file in a scanned folder never becomes an asset.
test('files without a media extension are not walked into the catalog', async () => {
  writeFileSync(join(a.root, 'misc/cover.jpg'), 'jpeg bytes');
  const scan = await scanLibrary(p, token, { path: 'misc' });
  expect(scan.counts.seen).toBe(2); // broken.mp4 and the refused name
});
