// The workers' job runner through the bus, on a real platform and real files: progress events,
// dedup by key, cancellation, retries with backoff, and a shutdown that hands the job back (the job
// map and the retry schedule alone: tests/unit/workers/jobs.test.ts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobView } from '../../src/platform/bus/subjects';
import { getLibraryScan, postLibraryScan, waitForScan } from '../helpers/library';
import { catalogToken, mediaFixtures, playbackFixtures, tempMediaRoot } from '../helpers/media';
import { freshPostgresDatabase, onPostgres, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { meaningOf } from '../../src/platform/errors';

let root: ReturnType<typeof tempMediaRoot>;
const BIG = 8;

beforeAll(() => {
  const fx = mediaFixtures();
  root = tempMediaRoot();
  // The big folder must take a while: MPEG-4 Part 2 files, which the native header reader leaves to ffprobe.
  for (let i = 1; i <= BIG; i++) root.place(`big/clip ${i}.mkv`, playbackFixtures().transcode);
  root.place('small/Heat (1995).mkv', fx.mkv);
  root.place('other/Arrival (2016).mkv', fx.mkv);
});
afterAll(() => rmSync(root.root, { recursive: true, force: true }));

// One probe at a time and batches of two: the big folder takes long enough to act on it mid-way.
const slowScanEnv = () => ({
  APP_MEDIA_ROOTS: root.root,
  APP_WORKERS_CONCURRENCY: '1',
  APP_WORKERS_POLL_MS: '50',
  APP_LIBRARY_PROBES_PER_ROOT: '1',
  APP_LIBRARY_BATCH: '2',
});

function jobEvents(p: TestPlatform) {
  const seen: JobView[] = [];
  p.bus.subscribe('evt.workers.jobProgress', (e) => void seen.push(e.job));
  return {
    seen,
    async jobOf(scanId: string): Promise<JobView> {
      for (;;) {
        const j = seen.find((x) => (x.payload as { scanId?: string }).scanId === scanId);
        if (j) return j;
        await Bun.sleep(10);
      }
    },
  };
}

describe('a platform with a busy worker', () => {
  let p: TestPlatform;
  let token: string;
  let events: ReturnType<typeof jobEvents>;
  beforeAll(async () => {
    p = await startTestPlatform({ services: ['identity', 'catalog', 'workers'], env: slowScanEnv() });
    events = jobEvents(p);
    token = await catalogToken(p, 'jobs');
  });
  afterAll(() => p?.close());

  test('a second request for a folder whose scan is still queued gets that scan; cancel works on queued and running jobs', async () => {
    const big = (await (await postLibraryScan(p, token, { path: 'big' })).json()).id;
    await waitForScan(p, token, big, (s) => s.counts.seen > 0);
    // The one worker slot is busy: these wait in the queue, and the same folder is queued once.
    const first = await (await postLibraryScan(p, token, { path: 'small' })).json();
    const again = await (await postLibraryScan(p, token, { path: 'small' })).json();
    expect(again).toEqual({ id: first.id, status: 'queued' });
    const other = (await (await postLibraryScan(p, token, { path: 'other' })).json()).id;
    expect(other).not.toBe(first.id);
    // One job at a time (APP_WORKERS_CONCURRENCY=1): the others wait.
    expect((await p.bus.request('qry.workers.job', { id: (await events.jobOf(first.id)).id })).job.status).toBe('queued');

    // Cancelled while queued: it ends at once.
    const queuedJob = await events.jobOf(other);
    const cancelledQueued = await p.bus.request('cmd.workers.cancel', { id: queuedJob.id });
    expect(cancelledQueued.job.status).toBe('cancelled');
    expect(await waitForScan(p, token, other)).toMatchObject({ status: 'failed', error: 'cancelled' });

    // Cancelled while running: its worker stops it at the next heartbeat, before the walk is over.
    const runningJob = await events.jobOf(big);
    expect((await p.bus.request('cmd.workers.cancel', { id: runningJob.id })).job.cancelRequested).toBe(true);
    const stopped = await waitForScan(p, token, big);
    expect(stopped).toMatchObject({ status: 'failed', error: 'cancelled' });
    expect(stopped.counts.seen).toBeLessThan(BIG);
    expect((await p.bus.request('qry.workers.job', { id: runningJob.id })).job.status).toBe('cancelled');

    // The deduplicated scan still runs once the slot is free.
    expect(await waitForScan(p, token, first.id)).toMatchObject({ status: 'done', counts: { seen: 1, added: 1 } });
  });

  test('every state of a job is published as evt.workers.jobProgress, with progress figures while it runs', async () => {
    const id = (await p.bus.request('cmd.library.scan', { path: 'small' })).id;
    await waitForScan(p, token, id);
    const job = await events.jobOf(id);
    await Bun.sleep(50);
    const mine = events.seen.filter((j) => j.id === job.id);
    expect(mine.map((j) => j.status)).toEqual(expect.arrayContaining(['queued', 'running', 'done']));
    expect(mine.find((j) => j.status === 'running' && j.progress.seen === 1)).toBeDefined();
    expect(mine.at(-1)).toMatchObject({ status: 'done', attempts: 1, error: null, key: 'library.scan:0/small' });
  });

  test('an unknown job id is WORKERS_JOB_NOT_FOUND, an unknown job type WORKERS_JOB_INVALID', async () => {
    expect(await p.bus.request('qry.workers.job', { id: 'job_nope' }).catch((e) => e.code)).toBe('WORKERS_JOB_NOT_FOUND');
    expect(await p.bus.request('cmd.workers.cancel', { id: 'job_nope' }).catch((e) => e.code)).toBe('WORKERS_JOB_NOT_FOUND');
    const bad = await p.bus.request('cmd.workers.submit', { type: 'no.such', payload: {} } as never).catch((e) => e);
    expect(bad.code).toBe('WORKERS_JOB_INVALID');
    // The status the answerer's table gives it travels with it: an asker needs no table of its own.
    expect(meaningOf(bad, {}).status).toBe(422);
  });
});

test('a job whose steps fail on the bus is retried with backoff, then fails with the reason', async () => {
  // Workers alone: nothing answers the catalog's side of the scan.
  const p = await startTestPlatform({ services: ['workers'], env: { ...slowScanEnv(), APP_WORKERS_RETRY_BASE_MS: '40' } });
  try {
    const events = jobEvents(p);
    const { job } = await p.bus.request('cmd.workers.submit', {
      type: 'library.scan',
      payload: { scanId: 'scn_orphan', targets: [{ root: 0, folder: 'small' }] },
      maxAttempts: 3,
    });
    let last: JobView;
    for (;;) {
      last = (await p.bus.request('qry.workers.job', { id: job.id })).job;
      if (last.status === 'failed') break;
      await Bun.sleep(20);
    }
    expect(last).toMatchObject({ attempts: 3, error: 'no service answers cmd.library.begin' });
    const statuses = events.seen.filter((j) => j.id === job.id).map((j) => j.status);
    expect(statuses).toEqual(['queued', 'running', 'queued', 'running', 'queued', 'running', 'failed']);
  } finally {
    await p.close();
  }
});

test('a worker that shuts down mid-scan hands the job back, and the next start finishes it without counting twice', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-workers-'));
  // The next start keeps the data dir, and on PostgreSQL the database.
  const database = onPostgres() ? await freshPostgresDatabase() : undefined;
  const env = { ...slowScanEnv(), ...(database && { APP_DATABASE_URL: database.url }) };
  // Workers last: it starts after the catalog it talks to, and stops before it.
  const services = ['identity', 'catalog', 'workers'] as const;
  const first = await startTestPlatform({ services: [...services], env, dataDir });
  const token = await catalogToken(first, 'restarter');
  const events = jobEvents(first);
  const id = (await (await postLibraryScan(first, token, { path: 'big' })).json()).id;
  const jobId = (await events.jobOf(id)).id;
  await waitForScan(first, token, id, (s) => s.counts.seen >= 2);
  await first.close();

  const second = await startTestPlatform({ services: [...services], env, dataDir });
  try {
    const token2 = await catalogToken(second, 'restarter-2');
    const done = await waitForScan(second, token2, id);
    expect(done).toMatchObject({ status: 'done', counts: { seen: BIG, added: BIG, changed: 0, failed: 0 } });
    const job = (await second.bus.request('qry.workers.job', { id: jobId })).job;
    expect(job.attempts).toBe(1); // handed back at shutdown: not a failed attempt
    expect((await getLibraryScan(second, token2, id)).counts.added).toBe(BIG);
  } finally {
    await second.close();
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
