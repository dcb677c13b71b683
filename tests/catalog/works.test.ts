// Identification, works, assets, relations, kinds, OpenAPI and the problem model of the media
// services, through HTTP on a real platform (catalog, identity, sources, workers) with ffmpeg media.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { catalogToken, mediaFixtures, patientScan, tempMediaRoot } from '../helpers/media';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';
import { dereferencedDocument } from '../helpers/openapi';

let p: TestPlatform;
let root: ReturnType<typeof tempMediaRoot>;
let token: string;
const scanned = new Map<string, { asset: any; index: any; indexed: boolean }>();

const get = async (path: string) => {
  const res = await fetch(p.url('catalog') + path);
  return { status: res.status, type: res.headers.get('content-type'), body: (await res.json()) as any };
};

async function scan(body: Record<string, unknown>) {
  const res = await patientScan(p, body, token);
  expect(res.status).toBe(200);
  return (await res.json()) as { asset: any; index: any; indexed: boolean };
}

const LIBRARY: [string, keyof ReturnType<typeof mediaFixtures>][] = [
  ['Movies/The Matrix (1999).mkv', 'mkvSubs'],
  ['Movies/The.Matrix.1999.1080p.BluRay.x264.mp4', 'mp4'],
  ['Movies/Blade Runner (1982)/movie.mkv', 'mkv'],
  ['Movies/Blade.Runner.1982.Directors.Cut.mkv', 'mkv'],
  ['tv/Breaking.Bad.S01E03.720p.mkv', 'mkv'],
  ['tv/Breaking Bad - S01E01 - Pilot.mkv', 'mkv'],
  ['tv/Breaking.Bad.S02E01.mkv', 'mkv'],
  ['tv/Breaking.Bad.S01E10.mkv', 'mp4'],
  ['tv/Firefly - 1x05 - Safe.mkv', 'mkv'],
  ['Audiobooks/Dune (1965).m4a', 'audioOnly'],
  ['Concerts/Radiohead - Live at Glastonbury (1997).mkv', 'mkv'],
  ['misc/holiday clip.mp4', 'mp4'],
  ['misc/notes.txt', 'text'],
];

beforeAll(async () => {
  const fx = mediaFixtures();
  root = tempMediaRoot();
  for (const [rel, f] of LIBRARY) root.place(rel, fx[f]);
  p = await startTestPlatform({ services: ['catalog', 'identity', 'sources', 'workers'], env: { APP_MEDIA_ROOTS: root.root } });
  token = await catalogToken(p, 'librarian');
  for (const [rel] of LIBRARY) scanned.set(rel, await scan({ path: rel }));
});

afterAll(async () => {
  await p?.close();
  if (root) rmSync(root.root, { recursive: true, force: true });
});

const workOf = async (rel: string) => {
  const editionId = scanned.get(rel)!.asset.editionId;
  const all = (await get('/works?pageSize=200')).body.works as any[];
  for (const w of all) {
    const assets = (await get(`/works/${w.id}/assets`)).body.assets as any[];
    if (assets.some((x) => x.editionId === editionId)) return w;
  }
  return undefined;
};
const worksByKind = async (kind: string) => ((await get('/works?pageSize=200')).body.works as any[]).filter((w) => w.kind === kind);

describe('identification from the path', () => {
  test('`Title (Year)` makes a movie work', async () => {
    const w = await workOf('Movies/The Matrix (1999).mkv');
    expect(w).toMatchObject({ kind: 'movie', title: 'The Matrix', originalTitle: 'The Matrix', year: 1999 });
    expect(scanned.get('Movies/The Matrix (1999).mkv')!.asset.identification).toBe('identified');
  });

  test('`Title.Year.*` finds the same movie and its same edition', async () => {
    const a = scanned.get('Movies/The Matrix (1999).mkv')!.asset;
    const b = scanned.get('Movies/The.Matrix.1999.1080p.BluRay.x264.mp4')!.asset;
    expect(b.editionId).toBe(a.editionId);
    expect((await worksByKind('movie')).filter((w) => w.title === 'The Matrix')).toHaveLength(1);
  });

  test("a folder named `Title (Year)` names the movie inside, and a director's cut is another edition of it", async () => {
    const plain = await workOf('Movies/Blade Runner (1982)/movie.mkv');
    const cut = await workOf('Movies/Blade.Runner.1982.Directors.Cut.mkv');
    expect(plain).toMatchObject({ kind: 'movie', title: 'Blade Runner', year: 1982 });
    expect(cut.id).toBe(plain.id);
    expect(scanned.get('Movies/Blade.Runner.1982.Directors.Cut.mkv')!.asset.editionId).not.toBe(
      scanned.get('Movies/Blade Runner (1982)/movie.mkv')!.asset.editionId,
    );
  });

  test('`Show.S01E03.*` and `Show - 1x05` make one series per show, its seasons and episodes', async () => {
    expect((await worksByKind('series')).map((w) => w.title).sort()).toEqual(['Breaking Bad', 'Firefly']);
    expect((await worksByKind('season')).map((w) => w.title).sort()).toEqual(['Breaking Bad Season 1', 'Breaking Bad Season 2', 'Firefly Season 1']);
    expect((await worksByKind('episode')).map((w) => w.title).sort()).toEqual([
      'Breaking Bad S01E01', 'Breaking Bad S01E03', 'Breaking Bad S01E10', 'Breaking Bad S02E01', 'Firefly S01E05',
    ]);
  });

  test('the content-type plugins identify an audiobook and a concert', async () => {
    expect(await workOf('Audiobooks/Dune (1965).m4a')).toMatchObject({ kind: 'audiobook', title: 'Dune', year: 1965 });
    expect(await workOf('Concerts/Radiohead - Live at Glastonbury (1997).mkv')).toMatchObject({ kind: 'concert', year: 1997 });
  });

  test('a medium with no recognisable name is indexed but unidentified, and belongs to no work', async () => {
    const s = scanned.get('misc/holiday clip.mp4')!;
    expect(s).toMatchObject({ indexed: true, asset: { identification: 'unidentified' } });
    expect(await workOf('misc/holiday clip.mp4')).toBeUndefined();
  });
});

describe('relations', () => {
  test('a series lists its seasons and episodes by ordinal, each parent before its children', async () => {
    const series = (await worksByKind('series')).find((w) => w.title === 'Breaking Bad');
    const { status, body } = await get(`/works/${series.id}/relations`);
    expect(status).toBe(200);
    expect(body.relations.map((r: any) => r.ordinal)).toEqual([[1], [1, 1], [1, 3], [1, 10], [2], [2, 1]]);
    expect(body.relations.map((r: any) => r.rel)).toEqual(['has-season', 'has-episode', 'has-episode', 'has-episode', 'has-season', 'has-episode']);
    expect(body.relations[0].parentWorkId).toBe(series.id);
    expect(body.relations[1].parentWorkId).toBe(body.relations[0].childWorkId);
  });

  test('an episode shows where it sits: series to season [1], season to episode [1, 3]', async () => {
    const ep = await workOf('tv/Breaking.Bad.S01E03.720p.mkv');
    const { body } = await get(`/works/${ep.id}/relations`);
    expect(body.relations.map((r: any) => [r.rel, r.ordinal])).toEqual([['has-season', [1]], ['has-episode', [1, 3]]]);
    expect(body.relations[1].childWorkId).toBe(ep.id);
    expect(typeof body.relations[0].createdAt).toBe('number');
  });

  test('a movie has no relations, and an unknown work is 404 CATALOG_WORK_NOT_FOUND', async () => {
    const movie = await workOf('Movies/The Matrix (1999).mkv');
    expect((await get(`/works/${movie.id}/relations`)).body).toEqual({ relations: [] });
    const missing = await get('/works/wrk_missing/relations');
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('CATALOG_WORK_NOT_FOUND');
  });
});

describe('assets of a work', () => {
  test('indexed assets come first, then the newest, with facets from the index', async () => {
    const movie = await workOf('Movies/The Matrix (1999).mkv');
    // A file that is not a medium, bound explicitly to the work: listed, but not indexed.
    const bound = await scan({ path: 'misc/notes.txt', workId: movie.id });
    expect(bound).toMatchObject({ indexed: false, index: null, asset: { identification: 'unidentified' } });
    const { status, body } = await get(`/works/${movie.id}/assets`);
    expect(status).toBe(200);
    const mkv = scanned.get('Movies/The Matrix (1999).mkv')!;
    const mp4 = scanned.get('Movies/The.Matrix.1999.1080p.BluRay.x264.mp4')!;
    expect(body.assets.map((x: any) => x.assetId)).toEqual([mp4.asset.id, mkv.asset.id, bound.asset.id]);
    expect(body.assets[1]).toEqual({
      assetId: mkv.asset.id,
      editionId: mkv.asset.editionId,
      container: 'mkv',
      durationMs: mkv.index.durationMs,
      facets: ['video', 'audio', 'subtitles'],
      identification: 'identified',
      indexed: true,
      layout: 'file',
      sizeBytes: mkv.asset.sizeBytes,
      available: true,
      audio: [{ index: 1, language: 'eng', codec: 'aac', channels: 2, default: false }],
      // The ASS stream is tagged `fre` (ISO 639-2/B): listed as `fra` (639-2/T).
      subtitles: [
        { index: 2, language: 'eng', format: 'srt', text: true, source: 'embedded' },
        { index: 3, language: 'fra', format: 'ass', text: true, source: 'embedded' },
      ],
    });
    expect(body.assets[0].facets).toEqual(['video', 'audio']);
    expect(body.assets[2]).toMatchObject({ indexed: false, durationMs: 0, facets: [], container: 'unknown' });
  });

  test('an audiobook has audio and no video facet', async () => {
    const book = await workOf('Audiobooks/Dune (1965).m4a');
    expect((await get(`/works/${book.id}/assets`)).body.assets[0].facets).toEqual(['audio']);
  });

  test('the assets of an unknown work are 404 CATALOG_WORK_NOT_FOUND', async () => {
    const r = await get('/works/wrk_missing/assets');
    expect(r.status).toBe(404);
    expect(r.body.code).toBe('CATALOG_WORK_NOT_FOUND');
  });
});

describe('GET /works', () => {
  test('pages partition every work in a stable order, with the total', async () => {
    const all = await get('/works?pageSize=200');
    expect(all.body.total).toBe(all.body.works.length);
    // The Matrix, Blade Runner, Dune, the concert; 2 series, 3 seasons, 5 episodes.
    expect(all.body.total).toBe(14);
    const pages: any[] = [];
    for (let page = 1; page <= 5; page++) pages.push(...(await get(`/works?page=${page}&pageSize=3`)).body.works);
    expect(pages.map((w) => w.id)).toEqual(all.body.works.map((w: any) => w.id));
    expect((await get('/works?page=99&pageSize=3')).body).toEqual({ total: 14, works: [] });
  });

  test('pageSize defaults to 50 and accepts 1 and 200', async () => {
    expect((await get('/works')).body.works).toHaveLength(14);
    expect((await get('/works?pageSize=1')).body.works).toHaveLength(1);
    expect((await get('/works?pageSize=200')).status).toBe(200);
  });

  test('out-of-range paging is 422 validation naming the parameter', async () => {
    for (const [q, property] of [['pageSize=0', '/pageSize'], ['pageSize=201', '/pageSize'], ['page=0', '/page'], ['page=abc', '/page'], ['pageSize=1.5', '/pageSize']]) {
      const r = await get(`/works?${q}`);
      expect(r.status).toBe(422);
      expect(r.type).toBe('application/problem+json');
      expect(r.body).toMatchObject({ code: 'validation', status: 422, on: 'query', property });
      expect(typeof r.body.detail).toBe('string');
      expect(JSON.stringify(r.body)).not.toContain('abc');
    }
  });

  test('GET /works/{id} answers the work, 404 CATALOG_WORK_NOT_FOUND when absent, 422 past 128 characters', async () => {
    const movie = await workOf('Movies/The Matrix (1999).mkv');
    expect((await get(`/works/${movie.id}`)).body).toEqual({ work: movie });
    const missing = await get('/works/wrk_missing');
    expect(missing.status).toBe(404);
    expect(missing.type).toBe('application/problem+json');
    expect(missing.body).toMatchObject({
      type: 'https://keel.dev/problems/catalog-work-not-found', title: 'No such work', status: 404,
      code: 'CATALOG_WORK_NOT_FOUND', retryable: false, category: 'permanent',
    });
    const long = await get(`/works/${'w'.repeat(129)}`);
    expect(long.body.instance).toBe('/works/:id');
    expect(long.status).toBe(422);
    expect(long.body).toMatchObject({ code: 'validation', on: 'path', property: '/id' });
    expect(JSON.stringify(long.body)).not.toContain('w'.repeat(129));
  });
});

describe('kinds', () => {
  test('the registry serves the six core kinds and the two plugin kinds, every field filled', async () => {
    const { status, body } = await get('/kinds');
    expect(status).toBe(200);
    expect(body.kinds.map((k: any) => k.id)).toEqual(['movie', 'series', 'season', 'episode', 'short', 'recording', 'audiobook', 'concert']);
    for (const k of body.kinds) {
      expect(k.label.length).toBeGreaterThan(0);
      expect(['audiovisual', 'audio']).toContain(k.family);
      expect(typeof k.finite).toBe('boolean');
      expect(k.actions.length).toBeGreaterThan(0);
      for (const f of ['editionKinds', 'facets', 'requiredFacets', 'layouts', 'pipelines', 'relations']) expect(Array.isArray(k[f])).toBe(true);
      // A playable kind says how it is filed, laid out and processed, and what it needs.
      if (k.actions.includes('play')) {
        expect(k.editionKinds.length).toBeGreaterThan(0);
        expect(k.layouts).toEqual(['file']);
        expect(k.pipelines).toContain('probe');
        expect(k.requiredFacets.every((f: string) => k.facets.includes(f))).toBe(true);
      }
    }
  });
});

describe('problem model, probes and OpenAPI of the media services', () => {
  test('an unknown route is 404 not-found as problem+json', async () => {
    const r = await get('/nothing-here');
    expect(r.status).toBe(404);
    expect(r.type).toBe('application/problem+json');
    expect(r.body).toMatchObject({ code: 'not-found', status: 404, type: 'https://keel.dev/problems/not-found' });
  });

  for (const service of ['catalog', 'sources', 'workers'] as const) {
    test(`${service}: GET /health and GET /version answer their shapes, HEAD /health is a problem`, async () => {
      const base = p.url(service);
      const health = await (await fetch(base + '/health')).json();
      expect(health).toMatchObject({ status: 'ok', version: expect.any(String) });
      expect(typeof health.timestamp).toBe('number');
      expect(typeof health.uptime).toBe('number');
      const version = await (await fetch(base + '/version')).json();
      expect(version).toEqual({ commit: expect.any(String), component: service, train: expect.any(String), version: health.version });
      const head = await fetch(base + '/health', { method: 'HEAD' });
      expect([404, 405]).toContain(head.status);
      expect(head.headers.get('content-type')).toBe('application/problem+json');
      const unknown = await fetch(base + '/nope');
      expect(unknown.status).toBe(404);
      expect((await unknown.json()).code).toBe('not-found');
    });
  }

  test('the OpenAPI description covers every catalog route with its schemas and error responses', async () => {
    const doc = await dereferencedDocument(p.url('catalog'));
    const paths = doc.paths;
    const expected: Record<string, [string, string[]]> = {
      '/scan': ['post', ['200', '401', '403', '404', '409', '422', '429']],
      '/works': ['get', ['200', '422']],
      '/works/{id}': ['get', ['200', '404', '422']],
      '/works/{id}/assets': ['get', ['200', '404', '422']],
      '/works/{id}/relations': ['get', ['200', '404', '422']],
      '/kinds': ['get', ['200']],
      '/health': ['get', ['200']],
      '/version': ['get', ['200']],
    };
    for (const [path, [method, codes]] of Object.entries(expected)) {
      const op = paths[path]?.[method];
      expect(op).toBeDefined();
      for (const c of codes) expect(op.responses[c]).toBeDefined();
    }
    expect(JSON.stringify(paths['/scan'].post.requestBody)).toContain('path');
  });
});

describe('production mode', () => {
  test('a validation problem keeps `on` but hides property and detail', async () => {
    const prod = await startTestPlatform({ services: ['catalog'], env: { NODE_ENV: 'production', APP_MEDIA_ROOTS: root.root } });
    try {
      const res = await fetch(prod.url('catalog') + '/works?pageSize=0');
      expect(res.status).toBe(422);
      const body = await res.json();
      expect(body).toMatchObject({ code: 'validation', on: 'query' });
      expect(body.property).toBeUndefined();
      expect(body.detail).toBeUndefined();
    } finally {
      await prod.close();
    }
  });
});
