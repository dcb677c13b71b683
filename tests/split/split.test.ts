// Every service on its own process, joined by one real nats-server with a user and password:
// a library scanned end to end, a worker killed mid-scan whose job a second worker finishes, and a
// nats-server restart that clients ride out without losing a JetStream event.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Bus } from '../../src/platform/bus/bus';
import { createNatsBus } from '../../src/platform/bus/nats';
import type { JobView } from '../../src/platform/bus/subjects';
import { mintToken } from '../../src/platform/auth/workspace-token';
import { createLogger } from '../../src/platform/runtime';
import { postLibraryScan, scanLibrary, waitForScan } from '../helpers/library';
import { catalogToken, mediaFixtures, tempMediaRoot } from '../helpers/media';
import { startTestNats, type TestNats } from '../helpers/nats';
import { TEST_SECRET } from '../helpers/platform';
import { BUN, startKeel, type KeelProcess } from '../helpers/process';

const FILES = 10;
let nats: TestNats;
let media: ReturnType<typeof tempMediaRoot>;
let bus: Bus;
const procs = new Map<string, KeelProcess>();
const dirs: string[] = [];
const jobs: JobView[] = [];
let token: string;

const dataDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'keel-split-'));
  dirs.push(d);
  return d;
};
let workersDir: string;
let sourcesDir: string;

function env(extra: Record<string, string> = {}) {
  return {
    APP_BUS: nats.url,
    APP_MEDIA_ROOTS: media.root,
    APP_QUIET_TOKEN: '1',
    // A short lease so a dead worker's job is taken over quickly; one probe at a time so a scan lasts.
    APP_WORKERS_LEASE_MS: '1500',
    APP_WORKERS_POLL_MS: '100',
    APP_LIBRARY_PROBES_PER_ROOT: '1',
    APP_LIBRARY_BATCH: '2',
    ...extra,
  };
}

async function start(name: string, service: string, dir: string) {
  const p = await startKeel([BUN, 'src/main.ts'], env({ APP_DATA_DIR: dir }), [service]);
  procs.set(name, p);
  return p;
}

/** The identity process, as the media helpers expect to reach it. */
const identityApi = {
  api(_s: 'identity', path: string, init: RequestInit & { as?: string | null; json?: unknown } = {}) {
    const headers = new Headers(init.headers);
    if (init.as === 'admin') headers.set('authorization', `Bearer ${mintToken(TEST_SECRET, { sub: 'admin', role: 'admin', ttlSeconds: 600 })}`);
    if (init.json !== undefined) headers.set('content-type', 'application/json');
    return fetch(procs.get('identity')!.urls.identity + path, { ...init, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body });
  },
};
const catalogUrl = () => procs.get('catalog')!.urls.catalog!;

beforeAll(async () => {
  const fx = mediaFixtures();
  media = tempMediaRoot();
  for (let i = 1; i <= FILES; i++) media.place(`Clips/clip ${String(i).padStart(2, '0')}.mp4`, fx.mp4);
  media.place('Movies/Heat (1995).mkv', fx.mkv);
  nats = await startTestNats();
  workersDir = dataDir();
  sourcesDir = dataDir();
  // Five services, five processes.
  await Promise.all([
    start('identity', 'identity', dataDir()),
    start('catalog', 'catalog', dataDir()),
    start('sources', 'sources', sourcesDir),
    start('workspaces', 'workspaces', dataDir()),
    start('worker-1', 'workers', workersDir),
  ]);
  bus = await createNatsBus(nats.url, createLogger({}, 'error'));
  bus.subscribe('evt.workers.jobProgress', (e) => void jobs.push(e.job));
  token = await catalogToken(identityApi, 'split');
}, 120_000);

afterAll(async () => {
  await bus?.close();
  await Promise.all([...procs.values()].map((p) => p.stop().catch(() => {})));
  await nats?.close();
  for (const d of [...dirs, media?.root]) if (d) rmSync(d, { recursive: true, force: true });
});

async function resolveAvailable(assetId: string) {
  for (;;) {
    const r = await bus.request('qry.sources.resolve', { assetId }).catch(() => null);
    if (r?.available) return r;
    await Bun.sleep(50);
  }
}

describe('five services on five processes over NATS with a user and password', () => {
  test('every process answers its probes', async () => {
    for (const [name, p] of procs) {
      const [service, url] = Object.entries(p.urls)[0]!;
      const res = await fetch(url + '/health');
      expect({ name, service, status: res.status }).toEqual({ name, service, status: 200 });
    }
  });

  test('a library scan runs end to end: catalog, workers job, media engine, sources', async () => {
    const scan = await scanLibrary(catalogUrl(), token, { path: 'Movies' });
    expect(scan).toMatchObject({ status: 'done', counts: { seen: 1, added: 1, failed: 0 } });
    const works = (await (await fetch(catalogUrl() + '/works')).json()) as { works: { id: string; title: string }[] };
    const heat = works.works.find((w) => w.title === 'Heat')!;
    const [asset] = ((await (await fetch(catalogUrl() + `/works/${heat.id}/assets`)).json()) as { assets: { assetId: string; available: boolean }[] }).assets;
    expect(asset!.available).toBe(true);
    const resolved = await resolveAvailable(asset!.assetId);
    expect(resolved.binding).toMatchObject({ kind: 'file', root: 0, path: 'Movies/Heat (1995).mkv', available: true });
  });

  test('a worker killed mid-scan: its job is taken over by a second worker and finishes, each file counted once', async () => {
    const res = await postLibraryScan(catalogUrl(), token, { path: 'Clips' });
    const { id } = (await res.json()) as { id: string };
    await waitForScan(catalogUrl(), token, id, (s) => s.counts.seen >= 2);
    procs.get('worker-1')!.proc.kill('SIGKILL');
    await procs.get('worker-1')!.proc.exited;
    procs.delete('worker-1');
    await start('worker-2', 'workers', workersDir);

    const done = await waitForScan(catalogUrl(), token, id);
    expect(done).toMatchObject({ status: 'done', counts: { seen: FILES, added: FILES, changed: 0, unchanged: 0, failed: 0 } });
    const job = jobs.find((j) => (j.payload as { scanId?: string }).scanId === id)!;
    // The scan ends in the catalog just before the worker records the job's end.
    let final = (await bus.request('qry.workers.job', { id: job.id })).job;
    while (final.status === 'running') {
      await Bun.sleep(20);
      final = (await bus.request('qry.workers.job', { id: job.id })).job;
    }
    expect(final).toMatchObject({ status: 'done', attempts: 2 });
    const workers = new Set(jobs.filter((j) => j.id === job.id && j.status === 'running').map((j) => j.attempts));
    expect([...workers].sort()).toEqual([1, 2]);
  });

  test('nats-server restarts: clients reconnect, and the sources service, down meanwhile, loses no event', async () => {
    await procs.get('sources')!.stop();
    procs.delete('sources');
    const indexed: string[] = [];
    const off = bus.subscribe('evt.catalog.assetIndexed', (e) => void indexed.push(e.assetId));
    // New files: indexed and published to JetStream while no sources service runs to hear of them.
    for (let i = 1; i <= 3; i++) media.place(`Late/late ${i}.mp4`, mediaFixtures().mp4);
    const late = await scanLibrary(catalogUrl(), token, { path: 'Late' });
    expect(late.counts).toMatchObject({ added: 3 });
    while (indexed.length < 3) await Bun.sleep(20);
    off();

    await nats.restart();
    await start('sources', 'sources', sourcesDir);
    for (const assetId of indexed) await resolveAvailable(assetId);

    // The other processes reconnected on their own: a new scan crosses catalog, workers and the media engine again.
    const after = await scanLibrary(catalogUrl(), token, { path: 'Clips' });
    expect(after).toMatchObject({ status: 'done', counts: { seen: FILES, unchanged: FILES } });
  });
});
