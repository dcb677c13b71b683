// The database queue (APP_WORKERS_QUEUE=database) shared by worker processes: on the PostgreSQL pass
// two worker processes with data dirs of their own (as on two machines) and the catalog share one
// PostgreSQL database; on the SQLite pass the workers share one data dir (its SQLite file). They meet
// on a private nats-server. Jobs submitted to both each run exactly once (a burst of short jobs
// makes their claims meet: a claim that is not atomic across processes shows as a second attempt),
// and a worker killed mid-job loses the job to the other once its lease runs out.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobView } from '../../src/platform/bus/subjects';
import { getLibraryScan, postLibraryScan, waitForScan } from '../helpers/library';
import { catalogToken, playbackFixtures, tempMediaRoot } from '../helpers/media';
import { startTestNats, type TestNats } from '../helpers/nats';
import { freshPostgresDatabase, onPostgres, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { BUN, startKeel, type KeelProcess } from '../helpers/process';

const BIG = 16;
const FOLDERS = 8;
const LEASE_MS = 1500;
let root: ReturnType<typeof tempMediaRoot>;
let nats: TestNats;
let database: Awaited<ReturnType<typeof freshPostgresDatabase>> | undefined;
let sharedDir: string | undefined;
let p: TestPlatform;
let token: string;
/** Every job event with the time it arrived. */
const seen: { job: JobView; at: number }[] = [];
const workers: KeelProcess[] = [];

// One job at a time per worker, one probe at a time and batches of two: a scan of the big folder
// lasts long enough to kill its worker.
const workerEnv = (more: Record<string, string> = {}): Record<string, string> => ({
  APP_BUS: nats.url,
  APP_WORKERS_QUEUE: 'database',
  APP_MEDIA_ROOTS: root.root,
  APP_WORKERS_CONCURRENCY: '1',
  APP_WORKERS_POLL_MS: '50',
  APP_WORKERS_LEASE_MS: String(LEASE_MS),
  APP_LIBRARY_PROBES_PER_ROOT: '1',
  APP_LIBRARY_BATCH: '2',
  ...(database ? { APP_DATABASE_URL: database.url } : { APP_DATA_DIR: sharedDir! }),
  ...more,
});
const startWorker = async (more?: Record<string, string>) => {
  const w = await startKeel([BUN, 'run', 'src/main.ts'], workerEnv(more), ['workers']);
  workers.push(w);
  return w;
};
const stopWorkers = async () => {
  for (const w of workers.splice(0)) if (w.proc.exitCode === null) await w.stop();
};

const scanIdOf = (j: JobView) => (j.payload as { scanId?: string }).scanId;
async function jobOf(pred: (j: JobView) => boolean): Promise<JobView> {
  for (;;) {
    const e = seen.findLast((x) => pred(x.job));
    if (e) return e.job;
    await Bun.sleep(20);
  }
}

beforeAll(async () => {
  // The scans must take a while: MPEG-4 Part 2 files, which the native header reader leaves to ffprobe.
  const slow = playbackFixtures().transcode;
  root = tempMediaRoot();
  for (let i = 1; i <= BIG; i++) root.place(`big/clip ${i}.mkv`, slow);
  for (let f = 1; f <= FOLDERS; f++) for (let i = 1; i <= 2; i++) root.place(`many/f${f}/clip ${i}.mkv`, slow);
  if (onPostgres()) database = await freshPostgresDatabase();
  else sharedDir = mkdtempSync(join(tmpdir(), 'keel-shared-workers-'));
  nats = await startTestNats();
  // The catalog and identity in this process (on PostgreSQL, in the workers' database); the workers in processes of their own.
  p = await startTestPlatform({
    services: ['identity', 'catalog'],
    env: { APP_BUS: nats.url, APP_MEDIA_ROOTS: root.root, ...(database && { APP_DATABASE_URL: database.url }) },
  });
  p.bus.subscribe('evt.workers.jobProgress', (e) => void seen.push({ job: e.job, at: Date.now() }));
  token = await catalogToken(p, 'shared-db');
});
afterEach(stopWorkers);
afterAll(async () => {
  await stopWorkers();
  await p?.close();
  await nats?.close();
  await database?.drop();
  if (sharedDir) rmSync(sharedDir, { recursive: true, force: true });
  rmSync(root.root, { recursive: true, force: true });
});

describe('two worker processes on one database queue', () => {
  test('jobs submitted while both run are each run exactly once, by both workers at once', async () => {
    // One after the other: two processes opening a new SQLite file at once race on its migrations.
    await startWorker();
    await startWorker();
    const scans: string[] = [];
    for (let f = 1; f <= FOLDERS; f++) {
      const res = await postLibraryScan(p, token, { path: `many/f${f}` });
      expect(res.status).toBe(202);
      scans.push((await res.json()).id);
    }
    for (const id of scans) expect(await waitForScan(p, token, id)).toMatchObject({ status: 'done', counts: { seen: 2, added: 2, failed: 0 } });

    const jobs = new Map<string, string>();
    for (const id of scans) jobs.set((await jobOf((j) => scanIdOf(j) === id)).id, id);
    for (const jobId of jobs.keys()) {
      const job = (await p.bus.request('qry.workers.job', { id: jobId })).job;
      expect(job).toMatchObject({ status: 'done', attempts: 1, error: null });
      // Claimed once: one `running` event, and never a second attempt.
      const events = seen.filter((e) => e.job.id === jobId).map((e) => e.job);
      expect(events.filter((j) => j.status === 'running' && j.progress.seen === undefined)).toHaveLength(1);
      expect(events.every((j) => j.attempts <= 1)).toBe(true);
    }
    // Each worker runs one job at a time: two at once means both took jobs.
    const running = new Set<string>();
    let most = 0;
    for (const { job } of seen) {
      if (!jobs.has(job.id)) continue;
      if (job.status === 'running') running.add(job.id);
      else running.delete(job.id);
      most = Math.max(most, running.size);
    }
    expect(most).toBe(2);
  }, 60_000);

  test('a worker killed mid-scan loses the job to the other once its lease runs out, and the other finishes it', async () => {
    const first = await startWorker();
    const scan = (await (await postLibraryScan(p, token, { path: 'big' })).json()).id;
    await waitForScan(p, token, scan, (s) => s.counts.seen >= 2);
    const second = await startWorker();
    // The first worker is still at it (a worker starts in about a second; the scan takes several).
    expect((await getLibraryScan(p, token, scan)).status).toBe('running');
    first.proc.kill('SIGKILL');
    await first.proc.exited;
    const killedAt = Date.now();

    const done = await waitForScan(p, token, scan);
    expect(done).toMatchObject({ status: 'done', counts: { seen: BIG, failed: 0 } });
    const jobId = (await jobOf((j) => scanIdOf(j) === scan)).id;
    const job = await jobOf((j) => j.id === jobId && j.status !== 'running' && j.status !== 'queued');
    // The first attempt died with its worker; the second, on the other worker, finished.
    expect(job).toMatchObject({ status: 'done', attempts: 2, error: null });
    expect((await p.bus.request('qry.workers.job', { id: jobId })).job).toMatchObject({ status: 'done', attempts: 2 });
    expect(second.proc.exitCode).toBeNull();
    // Taken over when the lease ran out (renewed every third of it), not before.
    const takeover = seen.find((e) => e.job.id === jobId && e.job.status === 'running' && e.job.attempts === 2)!;
    expect(takeover.at - killedAt).toBeGreaterThanOrEqual(LEASE_MS / 2);
  }, 60_000);

  test('a burst of jobs claimed by many slots of both workers at once: each job is claimed once', async () => {
    // Eight slots each and a short poll: the two workers claim side by side, job after job.
    const busy = { APP_WORKERS_CONCURRENCY: '8', APP_WORKERS_POLL_MS: '10' };
    await startWorker(busy);
    await startWorker(busy);
    // A media root the workers do not have: each job fails at its first attempt and is not retried,
    // so a second claim of one job would show as a second attempt.
    const submit = (n: number) =>
      p.bus.request('cmd.workers.submit', { type: 'library.scan', payload: { scanId: `scn_burst_${n}`, targets: [{ root: 9, folder: '' }] } });
    const ids = (await Promise.all(Array.from({ length: 150 }, (_, n) => submit(n)))).map((r) => r.job.id);
    for (const id of ids) await jobOf((j) => j.id === id && j.status === 'failed');
    for (const id of ids) {
      const claims = seen.filter((e) => e.job.id === id && e.job.status === 'running');
      expect(claims.map((e) => e.job.attempts)).toEqual([1]);
      expect((await p.bus.request('qry.workers.job', { id })).job).toMatchObject({ status: 'failed', attempts: 1, error: 'media root 9 is not configured on the worker' });
    }
  }, 60_000);
});
