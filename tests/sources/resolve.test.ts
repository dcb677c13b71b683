// qry.sources.resolve on both buses: bindings follow the catalog's events (an indexed asset, a file
// gone or back after a library scan); on NATS a sources service started after the events still
// learns them all (JetStream durable consumer).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { BusEvents } from '../../src/platform/bus/subjects';
import { scanLibrary } from '../helpers/library';
import { catalogToken, mediaFixtures, tempMediaRoot } from '../helpers/media';
import { startTestNats, type TestNats } from '../helpers/nats';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';
import { meaningOf } from '../../src/platform/errors';

let root: ReturnType<typeof tempMediaRoot>;
let nats: TestNats;
beforeAll(async () => {
  const fx = mediaFixtures();
  root = tempMediaRoot();
  root.place('Movies/Heat (1995).mp4', fx.mp4);
  root.place('Movies/Solaris (1972).mkv', fx.mkv);
  nats = await startTestNats();
});
afterAll(async () => {
  await nats?.close();
  rmSync(root.root, { recursive: true, force: true });
});

const buses: [string, () => string][] = [
  ['memory', () => 'memory'],
  ['nats', () => nats.url],
];

for (const [name, bus] of buses) {
  describe(`sources on the ${name} bus`, () => {
    let p: TestPlatform;
    let token: string;
    const indexed = new Map<string, string>();
    const waitForIndexed = async (path: string) => {
      while (!indexed.has(path)) await Bun.sleep(10);
      return indexed.get(path)!;
    };
    beforeAll(async () => {
      p = await startTestPlatform({ services: ['identity', 'catalog', 'sources', 'workers'], env: { APP_MEDIA_ROOTS: root.root, APP_BUS: bus(), APP_WORKERS_POLL_MS: '50' } });
      p.bus.subscribe('evt.catalog.assetIndexed', (e: BusEvents['evt.catalog.assetIndexed']) => void indexed.set(e.path, e.assetId));
      token = await catalogToken(p, `sources-${name}`);
    });
    afterAll(() => p?.close());

    /** Resolution follows events: ask until the answer says what the test expects. */
    async function resolveUntil(assetId: string, available: boolean) {
      for (;;) {
        const r = await p.bus.request('qry.sources.resolve', { assetId });
        if (r.binding && r.available === available) return r;
        await Bun.sleep(20);
      }
    }

    test('an indexed asset resolves to its file, available', async () => {
      await scanLibrary(p, token);
      const assetId = await waitForIndexed('Movies/Heat (1995).mp4');
      const r = await resolveUntil(assetId, true);
      expect(r).toEqual({
        assetId,
        available: true,
        binding: { id: expect.stringMatching(/^bnd_/), assetId, kind: 'file', root: 0, path: 'Movies/Heat (1995).mp4', available: true, checkedAt: expect.any(Number) },
      });
    });

    test('a file a scan found gone resolves as unavailable, and available again once it is back', async () => {
      const assetId = await waitForIndexed('Movies/Solaris (1972).mkv');
      const before = await resolveUntil(assetId, true);
      const file = join(root.root, 'Movies/Solaris (1972).mkv');
      renameSync(file, file + '.away');
      try {
        expect((await scanLibrary(p, token)).counts.offline).toBe(1);
        const gone = await resolveUntil(assetId, false);
        expect(gone.binding).toMatchObject({ id: before.binding!.id, available: false });
        expect(gone.binding!.checkedAt).toBeGreaterThanOrEqual(before.binding!.checkedAt);
      } finally {
        renameSync(file + '.away', file);
      }
      await scanLibrary(p, token);
      expect((await resolveUntil(assetId, true)).binding!.id).toBe(before.binding!.id);
    });

    test('an asset nobody bound resolves to no binding, and a malformed request is SOURCES_REQUEST_INVALID', async () => {
      expect(await p.bus.request('qry.sources.resolve', { assetId: 'ast_unknown' })).toEqual({ assetId: 'ast_unknown', available: false, binding: null });
      const err = await p.bus.request('qry.sources.resolve', {} as never).catch((e) => e);
      expect(err.code).toBe('SOURCES_REQUEST_INVALID');
      // The status the answerer's table gives it travels with it: an asker needs no table of its own.
      expect(meaningOf(err, {}).status).toBe(422);
    });
  });
}

test('on NATS a sources service started after the events learns every binding from JetStream', async () => {
  const fx = mediaFixtures();
  const late = tempMediaRoot();
  late.place('Arrival (2016).mp4', fx.mp4);
  late.place('Dune (2021).mkv', fx.mkv);
  const env = { APP_MEDIA_ROOTS: late.root, APP_BUS: nats.url, APP_WORKERS_POLL_MS: '50' };
  const catalog = await startTestPlatform({ services: ['identity', 'catalog', 'workers'], env });
  let sources: TestPlatform | undefined;
  try {
    const assets: string[] = [];
    catalog.bus.subscribe('evt.catalog.assetIndexed', (e) => void assets.push(e.assetId));
    expect((await scanLibrary(catalog, await catalogToken(catalog, 'late'))).counts.added).toBe(2);
    while (assets.length < 2) await Bun.sleep(10);
    sources = await startTestPlatform({ services: ['sources'], env });
    for (const assetId of assets) {
      for (;;) {
        const r = await sources.bus.request('qry.sources.resolve', { assetId });
        if (r.available) break;
        await Bun.sleep(20);
      }
    }
  } finally {
    await sources?.close();
    await catalog.close();
    rmSync(late.root, { recursive: true, force: true });
  }
});
