// GET /works on the read path: pages found from sparse marks (works-pager.ts) equal what an OFFSET
// walk answers, at every page and page size, across ties of created_at and after writes anywhere in
// the order; pages are served from the response cache with ETag/304, and a scan that adds a work
// (or a write by another connection) is seen by the next read. A real platform over HTTP, real ffprobe;
// on the PostgreSQL pass the other connection is a client of the platform's database.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { t } from 'elysia';
import { openDb } from '../../src/platform/db';
import { sqliteStore } from '../../src/platform/store';
import { WorkSchema } from '../../src/services/catalog/catalog.model';
import { createWorksPager, STRIDE } from '../../src/services/catalog/works-pager';
import { catalogToken, mediaFixtures, patientScan, tempMediaRoot } from '../helpers/media';
import { directConnection, freshPostgresDatabase, onPostgres, startTestPlatform, type DirectConnection, type TestPlatform } from '../helpers/platform';

const INSERT = 'INSERT INTO catalog_works (id, kind, title, original_title, year, match_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';

/** The rows of `n` works whose created_at repeats in runs of 5, so ties (ordered by id) straddle the marks. */
function workRows(n: number, prefix: string, at: (i: number) => number) {
  // ids are not in created_at order within a run: the tie-break by id must reorder them
  return Array.from({ length: n }, (_, i) => [`wrk_${prefix}${String((i * 7919) % n).padStart(6, '0')}`, 'movie', `Work ${prefix}${i}`, `Work ${prefix}${i}`, 2000, null, at(i), at(i)]);
}

function insertWorks(db: Database, n: number, prefix: string, at: (i: number) => number) {
  const ins = db.prepare(INSERT);
  db.transaction(() => {
    for (const row of workRows(n, prefix, at)) ins.run(...(row as [string]));
  })();
}

describe('the works pager against OFFSET', () => {
  const dir = mkdtempSync(join(tmpdir(), 'keel-pager-'));
  const db = openDb(dir);
  const store = sqliteStore(db);
  afterAll(() => {
    db.$client.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const byOffset = db.$client.prepare<{ id: string }, [number, number]>('SELECT id FROM catalog_works ORDER BY created_at, id LIMIT ? OFFSET ?');
  const expectSame = async (pager: ReturnType<typeof createWorksPager>, sizes: number[]) => {
    const total = (db.$client.prepare('SELECT count(*) AS n FROM catalog_works').get() as { n: number }).n;
    for (const size of sizes) {
      for (let page = 1; page <= Math.ceil(total / size) + 1; page++) {
        const got = await pager.page(page, size);
        expect(got.total).toBe(total);
        expect(got.rows.map((r) => r.id)).toEqual(byOffset.all(size, (page - 1) * size).map((r) => r.id));
      }
    }
  };

  test('every page of every size equals the OFFSET answer, ties and mark boundaries included (stride 3)', async () => {
    insertWorks(db.$client, 61, 'a', (i) => 1000 + Math.floor(i / 5));
    const pager = createWorksPager(store, 3);
    await expectSame(pager, [1, 2, 3, 4, 5, 7, 60, 61, 200]);
  });

  test('after writes anywhere in the order (first, middle, last, deleted) the pages follow at once', async () => {
    const pager = createWorksPager(store, 3);
    await expectSame(pager, [2, 7]); // marks found up to the end
    db.$client.prepare(INSERT).run('wrk_first', 'movie', 'First', 'First', 1, null, 1, 1);
    await expectSame(pager, [2, 7]);
    db.$client.prepare(INSERT).run('wrk_mid', 'movie', 'Mid', 'Mid', 1, null, 1005, 1005);
    db.$client.prepare('DELETE FROM catalog_works WHERE id = ?').run('wrk_a000010');
    await expectSame(pager, [1, 2, 7]);
    const other = new Database(join(dir, 'keel.db'));
    other.prepare(INSERT).run('wrk_zz_other', 'movie', 'Other', 'Other', 1, null, 999, 999);
    other.close();
    await expectSame(pager, [2, 7]);
  });

  test('an empty catalog has no pages', async () => {
    db.$client.exec('DELETE FROM catalog_works');
    const pager = createWorksPager(store, 3);
    expect(await pager.page(1, 50)).toEqual({ total: 0, rows: [] });
    expect(await pager.page(9, 50)).toEqual({ total: 0, rows: [] });
  });
});

describe('GET /works through HTTP', () => {
  let p: TestPlatform;
  let root: ReturnType<typeof tempMediaRoot>;
  let other: DirectConnection;
  let database: Awaited<ReturnType<typeof freshPostgresDatabase>> | undefined;
  const N = 2 * STRIDE + 300; // three marks at the real stride
  const PageSchema = TypeCompiler.Compile(t.Object({ total: t.Number(), works: t.Array(WorkSchema) }, { additionalProperties: false }));

  beforeAll(async () => {
    root = tempMediaRoot();
    database = onPostgres() ? await freshPostgresDatabase() : undefined;
    p = await startTestPlatform({ services: ['catalog', 'identity'], env: { APP_MEDIA_ROOTS: root.root, ...(database && { APP_DATABASE_URL: database.url }) } });
    other = directConnection(p);
    const rows = workRows(N, 'h', (i) => 10_000 + Math.floor(i / 5));
    for (let i = 0; i < rows.length; i += 100) {
      const chunk = rows.slice(i, i + 100);
      await other.all(`${INSERT.split(' VALUES ')[0]} VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`, chunk.flat());
    }
  });
  afterAll(async () => {
    await other?.close();
    await p?.close();
    await database?.drop();
    if (root) rmSync(root.root, { recursive: true, force: true });
  });

  const get = (path: string, headers: Record<string, string> = {}) => fetch(p.url('catalog') + path, { headers });
  const page = async (n: number, size: number) => (await (await get(`/works?page=${n}&pageSize=${size}`)).json()) as { total: number; works: any[] };
  const byOffset = async (size: number, offset: number) =>
    (await other.all<{ id: string }>('SELECT id FROM catalog_works ORDER BY created_at, id LIMIT ? OFFSET ?', [size, offset])).map((r) => r.id);

  test('every page of 200 and the pages around each mark answer what OFFSET would, in the schema', async () => {
    for (let n = 1; n <= Math.ceil(N / 200); n++) {
      const body = await page(n, 200);
      expect(PageSchema.Check(body)).toBe(true);
      expect(body.total).toBe(N);
      expect(body.works.map((w) => w.id)).toEqual(await byOffset(200, (n - 1) * 200));
    }
    for (const n of [STRIDE - 1, STRIDE, STRIDE + 1, 2 * STRIDE, 2 * STRIDE + 1, N, N + 1]) {
      expect((await page(n, 1)).works.map((w) => w.id)).toEqual(await byOffset(1, n - 1));
    }
    expect((await page(Math.ceil(N / 7), 7)).works.map((w) => w.id)).toEqual(await byOffset(7, (Math.ceil(N / 7) - 1) * 7));
  });

  test('a page repeats byte for byte with its ETag; If-None-Match answers 304 without a body', async () => {
    const a = await get('/works?page=3&pageSize=50');
    const b = await get('/works?page=3&pageSize=50');
    expect(await b.text()).toBe(await a.text());
    const etag = a.headers.get('etag')!;
    expect(etag).toMatch(/^"[0-9a-z]+"$/);
    expect(b.headers.get('etag')).toBe(etag);
    expect(a.headers.get('cache-control')).toBe('no-cache');
    const nm = await get('/works?page=3&pageSize=50', { 'if-none-match': etag });
    expect(nm.status).toBe(304);
    expect(await nm.text()).toBe('');
    // Another page, or the same offset in another page size, is another answer.
    expect((await get('/works?page=4&pageSize=50', { 'if-none-match': etag })).status).toBe(200);
    expect((await get('/works?page=2&pageSize=100', { 'if-none-match': etag })).status).toBe(200);
  });

  test('invalid paging is still refused before any cache: 422 validation', async () => {
    for (const q of ['page=0', 'pageSize=201', 'page=x']) {
      const res = await get(`/works?${q}`);
      expect(res.status).toBe(422);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
  });

  test('a repeated page is served before routing only for the exact query it validated: other spellings and invalid queries take the normal way', async () => {
    const right = await (await get('/works?page=3&pageSize=50')).text();
    expect(await (await get('/works?page=3&pageSize=50')).text()).toBe(right); // the early answer
    for (const other of ['/works?pageSize=50&page=3', '/works?page=%33&pageSize=50', '/works?page=3&pageSize=50&x=1', '/works?page=9&page=3&pageSize=50']) {
      for (let i = 0; i < 2; i++) expect(await (await get(other)).text()).toBe(right);
    }
    for (const bad of ['/works?page=3&pageSize=50&pageSize=201', '/works?page=3&pageSize=50&page=0', '/works?page=3&pageSize=5O']) {
      for (let i = 0; i < 2; i++) {
        const res = await get(bad);
        expect(res.status).toBe(422);
        expect(res.headers.get('content-type')).toContain('application/problem+json');
        expect(await res.text()).not.toContain('5O');
      }
    }
    // HEAD is not enabled on the media services, cached GET or not; an over-long If-None-Match meets the header schema.
    expect((await fetch(p.url('catalog') + '/works?page=3&pageSize=50', { method: 'HEAD' })).status).toBe(405);
    const long = await get('/works?page=3&pageSize=50', { 'if-none-match': `"${'x'.repeat(5000)}"` });
    expect(long.status).toBe(422);
    expect(long.headers.get('content-type')).toContain('application/problem+json');
  });

  test('a work written by another connection is on the next read of every page after it', async () => {
    const last = Math.ceil(N / 200);
    const before = await get(`/works?page=${last}&pageSize=200`);
    const etag = before.headers.get('etag')!;
    const deepBefore = await page(last - 1, 200);
    await other.all(INSERT, ['wrk_earliest', 'movie', 'Earliest', 'Earliest', 1900, null, 1, 1]);
    // Another connection's write is seen once its notification is heard (PostgreSQL: LISTEN/NOTIFY,
    // milliseconds; docs/platform.md), at the latest two heartbeats later; on SQLite at once.
    let first = await page(1, 200);
    for (const until = Date.now() + 2_500; first.total !== N + 1 && Date.now() < until; first = await page(1, 200)) await Bun.sleep(20);
    expect(first.total).toBe(N + 1);
    expect(first.works[0].id).toBe('wrk_earliest');
    const deepAfter = await page(last - 1, 200);
    expect(deepAfter.works[0].id).not.toBe(deepBefore.works[0].id); // every later page shifted by one
    expect(deepAfter.works.map((w) => w.id)).toEqual(await byOffset(200, (last - 2) * 200));
    expect((await get(`/works?page=${last}&pageSize=200`, { 'if-none-match': etag })).status).toBe(200);
  });

  test('a scan that adds a work is on the next read, and the old ETag no longer matches', async () => {
    const fx = mediaFixtures();
    root.place('Movies/Readpath Premiere (2031).mkv', fx.mkv);
    const token = await catalogToken(p, 'readpath-librarian');
    const before = await get('/works?page=1&pageSize=1');
    const { total } = (await before.clone().json()) as { total: number };
    const etag = before.headers.get('etag')!;
    // Newest last: the work is alone on the last page of size 1.
    expect((await page(total + 1, 1)).works).toEqual([]);
    const res = await patientScan(p, { path: 'Movies/Readpath Premiere (2031).mkv' }, token);
    expect(res.status).toBe(200);
    const after = await get('/works?page=1&pageSize=1', { 'if-none-match': etag });
    expect(after.status).toBe(200);
    expect(((await after.json()) as { total: number }).total).toBe(total + 1);
    const newest = await page(total + 1, 1);
    expect(newest.works.map((w) => [w.title, w.year])).toEqual([['Readpath Premiere', 2031]]);
  });
});
