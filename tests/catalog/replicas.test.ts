// Two catalog replicas on one database serve the same works: what one indexes the other answers at
// once (its cached pages included), and both indexing the same file at the same moment leave one
// asset. On the PostgreSQL pass the replicas share a PostgreSQL database (as on two machines); on
// the SQLite pass they share one data dir's file (as two processes on one machine).
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import { catalogToken, mediaFixtures, patientScan, tempMediaRoot } from '../helpers/media';
import { freshPostgresDatabase, onPostgres, startTestPlatform, type TestPlatform } from '../helpers/platform';

let a: TestPlatform;
let b: TestPlatform;
let root: ReturnType<typeof tempMediaRoot>;
let database: Awaited<ReturnType<typeof freshPostgresDatabase>> | undefined;
const tokens: Record<'a' | 'b', string> = { a: '', b: '' };
/** Files both replicas index at the same moment: several, so that their transactions do overlap. */
const RACED = ['One', 'Two', 'Three', 'Four', 'Five', 'Six'];

beforeAll(async () => {
  root = tempMediaRoot();
  const fx = mediaFixtures();
  root.place('Movies/Replica One (2030).mkv', fx.mkv);
  for (const n of RACED) root.place(`Movies/Raced ${n} (2031).mkv`, fx.mkv);
  database = onPostgres() ? await freshPostgresDatabase() : undefined;
  const env = { APP_MEDIA_ROOTS: root.root, ...(database && { APP_DATABASE_URL: database.url }) };
  a = await startTestPlatform({ services: ['catalog', 'identity'], env });
  b = await startTestPlatform({ services: ['catalog', 'identity'], env, ...(!database && { dataDir: a.dataDir }) });
  tokens.a = await catalogToken(a, 'replica-a-librarian');
  tokens.b = await catalogToken(b, 'replica-b-librarian');
}, 60_000);

afterAll(async () => {
  await b?.close();
  await a?.close();
  await database?.drop();
  if (root) rmSync(root.root, { recursive: true, force: true });
});

const works = async (p: TestPlatform, query = 'page=1&pageSize=200') => {
  const res = await fetch(`${p.url('catalog')}/works?${query}`);
  expect(res.status).toBe(200);
  return { etag: res.headers.get('etag')!, ...((await res.json()) as { total: number; works: { id: string; title: string }[] }) };
};
const json = async (p: TestPlatform, path: string) => {
  const res = await fetch(p.url('catalog') + path);
  expect(res.status).toBe(200);
  return res.json();
};

test('a work indexed through one replica is on the other at once, its cached page included', async () => {
  const before = await works(b);
  expect(await works(b)).toEqual(before); // now cached on b
  const scanned = await patientScan(a, { path: 'Movies/Replica One (2030).mkv' }, tokens.a);
  expect(scanned.status).toBe(200);

  const after = await works(b);
  expect(after.total).toBe(before.total + 1);
  expect(after.etag).not.toBe(before.etag);
  const work = after.works.find((w) => w.title === 'Replica One')!;
  expect(work).toBeDefined();
  for (const path of [`/works/${work.id}`, `/works/${work.id}/assets`, `/works/${work.id}/relations`]) {
    expect(await json(b, path)).toEqual(await json(a, path));
  }
  expect(await works(a)).toEqual(after);
});

test('both replicas indexing the same files at once leave one work and one asset each', async () => {
  const both = async (path: string) => {
    const [ra, rb] = await Promise.all([patientScan(a, { path }, tokens.a), patientScan(b, { path }, tokens.b)]);
    expect([ra.status, rb.status]).toEqual([200, 200]);
    const [ba, bb] = (await Promise.all([ra.json(), rb.json()])) as { asset: { id: string } }[];
    expect(ba!.asset.id).toBe(bb!.asset.id);
    return ba!.asset.id;
  };
  const assetIds = await Promise.all(RACED.map((n) => both(`Movies/Raced ${n} (2031).mkv`)));

  const listed = (await works(a)).works.filter((w) => w.title.startsWith('Raced '));
  expect(listed.map((w) => w.title).sort()).toEqual(RACED.map((n) => `Raced ${n}`).sort());
  for (const w of listed) {
    const { assets } = (await json(b, `/works/${w.id}/assets`)) as { assets: { assetId: string }[] };
    expect(assets).toHaveLength(1);
    expect(assetIds).toContain(assets[0]!.assetId);
  }
});
