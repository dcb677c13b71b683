// GET /works?q=&kind=&year=&genre= through HTTP on a real platform, on works named by .nfo files
// and file names: title and original title, any word order and case, accents folded, with paging.
// Runs on SQLite and (KEEL_TEST_DATABASE=postgres) PostgreSQL: both must find the same works.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { catalogToken, localFixtures, patientScan, tempMediaRoot } from '../helpers/media';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';

let p: TestPlatform;
let root: ReturnType<typeof tempMediaRoot>;
let token: string;

const nfo = (title: string, original: string, year: number, genres: string[]) =>
  `<movie><title>${title}</title><originaltitle>${original}</originaltitle><year>${year}</year>${genres.map((g) => `<genre>${g}</genre>`).join('')}</movie>`;

const MOVIES: [string, string][] = [
  ['Amelie (2001)', nfo('Amélie', 'Le Fabuleux Destin d&apos;Amélie Poulain', 2001, ['Comedy', 'Romance'])],
  ['Tiger (2000)', nfo('Crouching Tiger, Hidden Dragon', 'Wò Hǔ Cáng Lóng', 2000, ['Action', 'Drama'])],
  ['Strasse (2001)', nfo('The Street', 'Die Straße', 2001, ['Drama'])],
  ['The Matrix (1999)', ''],
];

async function scan(path: string) {
  const res = await patientScan(p, { path }, token);
  expect(res.status).toBe(200);
}

beforeAll(async () => {
  const fx = localFixtures();
  root = tempMediaRoot();
  for (const [name, text] of MOVIES) {
    root.place(`Movies/${name}/${name}.mkv`, fx.plain);
    if (text) writeFileSync(join(root.root, `Movies/${name}/${name}.nfo`), text);
  }
  root.place('Shows/Dark.S01E01.mkv', fx.plain);
  p = await startTestPlatform({ services: ['identity', 'catalog'], env: { APP_MEDIA_ROOTS: root.root } });
  token = await catalogToken(p, 'searcher');
  for (const [name] of MOVIES) await scan(`Movies/${name}/${name}.mkv`);
  await scan('Shows/Dark.S01E01.mkv');
});

afterAll(async () => {
  await p?.close();
  if (root) rmSync(root.root, { recursive: true, force: true });
});

async function search(query: string) {
  const res = await fetch(p.url('catalog') + '/works?' + query);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { total: number; works: { title: string; kind: string; year: number }[] };
  return { total: body.total, titles: body.works.map((w) => w.title) };
}

describe('q: title and original title', () => {
  test('a word of the original title without its accent finds the work', async () => {
    expect(await search('q=amelie')).toEqual({ total: 1, titles: ['Amélie'] });
    expect(await search('q=' + encodeURIComponent('wo hu cang'))).toEqual({ total: 1, titles: ['Crouching Tiger, Hidden Dragon'] });
  });

  test('words in any order and any case, accented in the query too', async () => {
    expect(await search('q=' + encodeURIComponent('POULAIN fabuleux'))).toEqual({ total: 1, titles: ['Amélie'] });
    expect(await search('q=' + encodeURIComponent('AMÉLIE'))).toEqual({ total: 1, titles: ['Amélie'] });
  });

  test('a word may be the start of a title word; ligatures fold (ß as ss)', async () => {
    expect(await search('q=fabul')).toEqual({ total: 1, titles: ['Amélie'] });
    expect(await search('q=strasse')).toEqual({ total: 1, titles: ['The Street'] });
    expect(await search('q=' + encodeURIComponent('straße'))).toEqual({ total: 1, titles: ['The Street'] });
  });

  test('every word must match: a word found nowhere finds nothing', async () => {
    expect(await search('q=' + encodeURIComponent('amelie matrix'))).toEqual({ total: 0, titles: [] });
    expect(await search('q=abulex')).toEqual({ total: 0, titles: [] });
  });

  test('a query of no letters or digits (LIKE wildcards included) finds nothing', async () => {
    expect(await search('q=' + encodeURIComponent('%'))).toEqual({ total: 0, titles: [] });
    expect(await search('q=' + encodeURIComponent('_ %'))).toEqual({ total: 0, titles: [] });
  });

  test('a work named by its file name alone is found by it', async () => {
    expect(await search('q=matrix')).toEqual({ total: 1, titles: ['The Matrix'] });
  });
});

describe('kind, year, genre and paging', () => {
  test('kind and year narrow the list', async () => {
    expect(await search('kind=movie&year=2001')).toEqual({ total: 2, titles: ['Amélie', 'The Street'] });
    expect((await search('kind=series')).titles).toEqual(['Dark']);
  });

  test('genre matches one whole genre, any case', async () => {
    expect(await search('genre=DRAMA')).toEqual({ total: 2, titles: ['Crouching Tiger, Hidden Dragon', 'The Street'] });
    expect(await search('genre=dram')).toEqual({ total: 0, titles: [] });
  });

  test('filters combine with each other and with paging, total counting every match', async () => {
    expect(await search('genre=drama&year=2001')).toEqual({ total: 1, titles: ['The Street'] });
    expect(await search('kind=movie&pageSize=2&page=2')).toEqual({ total: 4, titles: ['The Street', 'The Matrix'] });
  });

  test('bad values answer 422 validation, never echoing them', async () => {
    for (const query of ['year=nineteen', 'year=-5', 'q=', `q=${'x'.repeat(201)}`, 'kind=', `genre=${'g'.repeat(101)}`]) {
      const res = await fetch(p.url('catalog') + '/works?' + query);
      expect(res.status).toBe(422);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      const text = await res.text();
      expect(text).not.toContain('nineteen');
      expect(text).not.toContain('x'.repeat(50));
    }
  });

  test('a scan that adds a work changes the next answer of the same search', async () => {
    expect((await search('q=heat')).total).toBe(0);
    root.place('Movies/Heat (1995).mkv', localFixtures().plain);
    await scan('Movies/Heat (1995).mkv');
    expect(await search('q=heat')).toEqual({ total: 1, titles: ['Heat'] });
  });
});
