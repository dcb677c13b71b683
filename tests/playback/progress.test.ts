// Watch state through HTTP on a real platform (identity, catalog, playback) with ffmpeg media:
// PUT /progress/{assetId}, GET /progress newest first, continue watching, played past 90 %, each
// actor apart, bad input as problem+json, and the state kept across a restart of the platform.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { catalogToken, localFixtures, patientScan, tempMediaRoot } from '../helpers/media';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';
import { PLAY } from '../helpers/playback';

let p: TestPlatform;
let root: ReturnType<typeof tempMediaRoot>;
let dataDir: string;
let alice: string;
let bob: string;
const assets: { id: string; durationMs: number }[] = [];

const start = () =>
  startTestPlatform({ services: ['identity', 'catalog', 'playback'], dataDir, env: { APP_MEDIA_ROOTS: root.root } });

beforeAll(async () => {
  const fx = localFixtures();
  root = tempMediaRoot();
  dataDir = mkdtempSync(join(tmpdir(), 'keel-progress-'));
  for (const name of ['Heat (1995).mkv', 'Ronin (1998).mkv', 'Tagged.Film.2010.mp4']) root.place(`Movies/${name}`, name.endsWith('mp4') ? fx.tagged : fx.plain);
  p = await start();
  alice = await catalogToken(p, 'alice', ['resource:asset:scan', PLAY]);
  bob = await catalogToken(p, 'bob', [PLAY]);
  for (const name of ['Heat (1995).mkv', 'Ronin (1998).mkv', 'Tagged.Film.2010.mp4']) {
    const res = await patientScan(p, { path: `Movies/${name}` }, alice);
    const body = (await res.json()) as { asset: { id: string }; index: { durationMs: number } };
    assets.push({ id: body.asset.id, durationMs: body.index.durationMs });
  }
});

afterAll(async () => {
  await p?.close();
  if (root) rmSync(root.root, { recursive: true, force: true });
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const put = (token: string | null, assetId: string, body: unknown) =>
  fetch(p.url('playback') + `/progress/${assetId}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
async function list(token: string, query = '') {
  const res = await fetch(p.url('playback') + `/progress${query}`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { items: { assetId: string; positionMs: number; played: boolean; updatedAt: number }[] }).items;
}

describe('PUT /progress/{assetId}', () => {
  test('answers 200 with the item: not played before 90 % of the duration', async () => {
    const [heat] = assets;
    const res = await put(alice, heat!.id, { positionMs: 300 });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).item).toEqual({ assetId: heat!.id, positionMs: 300, played: false, updatedAt: expect.any(Number) });
  });

  test('past 90 % of the duration the asset is played; past the end counts as the end', async () => {
    const ronin = assets[1]!;
    const near = await put(alice, ronin.id, { positionMs: Math.ceil(ronin.durationMs * 0.91) });
    expect(((await near.json()) as any).item.played).toBe(true);
    const past = await put(alice, ronin.id, { positionMs: ronin.durationMs + 60_000 });
    expect(((await past.json()) as any).item).toMatchObject({ positionMs: ronin.durationMs, played: true });
  });

  test('an unknown asset answers 404 PLAYBACK_ASSET_NOT_FOUND', async () => {
    const res = await put(alice, 'ast_nope', { positionMs: 1 });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(((await res.json()) as any).code).toBe('PLAYBACK_ASSET_NOT_FOUND');
  });

  test('a negative, fractional, null or missing position answers 422 without echoing it', async () => {
    for (const body of [{ positionMs: -1 }, { positionMs: 1.5 }, {}, { positionMs: null }, { positionMs: 'soon' }]) {
      const res = await put(alice, assets[0]!.id, body);
      expect(res.status).toBe(422);
      const text = await res.text();
      expect(text).not.toContain('soon');
    }
    const broken = await put(alice, assets[0]!.id, '{"positionMs":');
    expect(broken.status).toBe(400);
  });

  test('without a token 401; with a token lacking resource:asset:play 403', async () => {
    expect((await put(null, assets[0]!.id, { positionMs: 1 })).status).toBe(401);
    const scanner = await catalogToken(p, 'scanner-only', ['resource:asset:scan']);
    expect((await put(scanner, assets[0]!.id, { positionMs: 1 })).status).toBe(403);
    expect((await fetch(p.url('playback') + '/progress', { headers: { authorization: `Bearer ${scanner}` } })).status).toBe(403);
  });
});

describe('GET /progress', () => {
  test('lists the actor\'s items newest first', async () => {
    await Bun.sleep(5);
    await put(alice, assets[2]!.id, { positionMs: 100 });
    const items = await list(alice);
    expect(items.map((i) => i.assetId)).toEqual([assets[2]!.id, assets[1]!.id, assets[0]!.id]);
    expect(items[0]!.updatedAt).toBeGreaterThan(items[1]!.updatedAt);
  });

  test('?inProgress=true lists only what is started and not played (continue watching)', async () => {
    await put(alice, assets[0]!.id, { positionMs: 0 });
    await Bun.sleep(5);
    await put(alice, assets[2]!.id, { positionMs: 250 });
    expect((await list(alice, '?inProgress=true')).map((i) => [i.assetId, i.positionMs])).toEqual([[assets[2]!.id, 250]]);
  });

  test('each actor sees only their own', async () => {
    expect(await list(bob)).toEqual([]);
    await put(bob, assets[0]!.id, { positionMs: 400 });
    expect((await list(bob)).map((i) => i.assetId)).toEqual([assets[0]!.id]);
    expect((await list(alice)).find((i) => i.assetId === assets[0]!.id)!.positionMs).toBe(0);
  });

  test('a bad inProgress or limit answers 422', async () => {
    for (const q of ['?inProgress=maybe', '?limit=0', '?limit=501']) {
      const res = await fetch(p.url('playback') + `/progress${q}`, { headers: { authorization: `Bearer ${alice}` } });
      expect(res.status).toBe(422);
    }
  });

  test('survives a restart of the platform', async () => {
    const before = await list(alice);
    await p.close();
    p = await start();
    expect(await list(alice)).toEqual(before);
  });
});
