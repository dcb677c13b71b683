// APP_LIBRARY_SCAN_INTERVAL_S: the catalog queues scans of every root on its own.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import type { BusEvents } from '../../src/platform/bus/subjects';
import { mediaFixtures, tempMediaRoot } from '../helpers/media';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';

let p: TestPlatform;
let root: ReturnType<typeof tempMediaRoot>;
const indexed: BusEvents['evt.catalog.assetIndexed'][] = [];
const doneScans = new Set<string>();

beforeAll(async () => {
  root = tempMediaRoot();
  root.place('Movies/Heat (1995).mkv', mediaFixtures().mkv);
  p = await startTestPlatform({ services: ['catalog', 'workers'], env: { APP_MEDIA_ROOTS: root.root, APP_LIBRARY_SCAN_INTERVAL_S: '1', APP_WORKERS_POLL_MS: '50' } });
  p.bus.subscribe('evt.catalog.assetIndexed', (e) => void indexed.push(e));
  p.bus.subscribe('evt.workers.jobProgress', (e) => void (e.job.status === 'done' && doneScans.add(e.job.id)));
});
afterAll(async () => {
  await p?.close();
  rmSync(root.root, { recursive: true, force: true });
});

test('files appear in the catalog without a scan being asked for, and a later tick probes nothing again', async () => {
  while (!indexed.some((e) => e.path === 'Movies/Heat (1995).mkv')) await Bun.sleep(20);
  root.place('Movies/Arrival (2016).mp4', mediaFixtures().mp4);
  while (!indexed.some((e) => e.path === 'Movies/Arrival (2016).mp4')) await Bun.sleep(20);
  const after = doneScans.size;
  while (doneScans.size < after + 2) await Bun.sleep(20); // two more scheduled scans, done
  expect(indexed.map((e) => e.path).sort()).toEqual(['Movies/Arrival (2016).mp4', 'Movies/Heat (1995).mkv']);
});
