// The file watcher (APP_LIBRARY_WATCH): files copied in are indexed, files removed go offline,
// without anyone asking for a scan; which folder a change makes it scan.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { BusEvents } from '../../src/platform/bus/subjects';
import { folderToScan, outermost } from '../../src/services/catalog/library/library.watch';
import { mediaFixtures, tempMediaRoot } from '../helpers/media';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';

let p: TestPlatform;
let root: ReturnType<typeof tempMediaRoot>;
const indexed: BusEvents['evt.catalog.assetIndexed'][] = [];
const availability: BusEvents['evt.catalog.assetAvailability'][] = [];

beforeAll(async () => {
  root = tempMediaRoot();
  root.place('Movies/Heat (1995).mkv', mediaFixtures().mkv);
  p = await startTestPlatform({
    services: ['catalog', 'workers'],
    env: { APP_MEDIA_ROOTS: root.root, APP_LIBRARY_WATCH: 'true', APP_LIBRARY_WATCH_DEBOUNCE_MS: '150', APP_WORKERS_POLL_MS: '50' },
  });
  p.bus.subscribe('evt.catalog.assetIndexed', (e) => void indexed.push(e));
  p.bus.subscribe('evt.catalog.assetAvailability', (e) => void availability.push(e));
});
afterAll(async () => {
  await p?.close();
  rmSync(root.root, { recursive: true, force: true });
});

const until = async (cond: () => boolean) => {
  while (!cond()) await Bun.sleep(20);
};

test('a file copied under a watched root is indexed without a scan being asked for', async () => {
  root.place('Movies/New/Arrival (2016).mp4', mediaFixtures().mp4);
  await until(() => indexed.some((e) => e.path === 'Movies/New/Arrival (2016).mp4'));
});

test('a file removed from a watched root goes offline, its neighbour stays', async () => {
  root.place('Shows/Solaris (1972).mkv', mediaFixtures().mkv);
  root.place('Shows/Dune (2021).mkv', mediaFixtures().mkv);
  await until(() => indexed.some((e) => e.path === 'Shows/Dune (2021).mkv') && indexed.some((e) => e.path === 'Shows/Solaris (1972).mkv'));
  rmSync(join(root.root, 'Shows/Solaris (1972).mkv'));
  await until(() => availability.some((e) => e.path === 'Shows/Solaris (1972).mkv' && !e.available));
  expect(availability.some((e) => e.path === 'Shows/Dune (2021).mkv')).toBe(false);
});

test('a change is scanned in the nearest folder that still holds something, the outermost once', () => {
  mkdirSync(join(root.root, 'Gone/Empty'), { recursive: true });
  expect(folderToScan(root.root, 'Movies/New/Arrival (2016).mp4')).toBe('Movies/New');
  expect(folderToScan(root.root, 'Gone/Empty/x.mkv')).toBe('Gone');
  expect(folderToScan(root.root, 'Vanished/Deep/x.mkv')).toBe('');
  expect(folderToScan(root.root, 'top.mkv')).toBe('');
  expect(outermost(['Movies/New', 'Movies', 'Shows/A', 'Shows/B'])).toEqual(['Movies', 'Shows/A', 'Shows/B']);
  expect(outermost(['Movies', ''])).toEqual(['']);
});
