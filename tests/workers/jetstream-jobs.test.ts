// The workers' queue on JetStream (APP_BUS=nats://...): worker processes with data dirs of their own
// (as on two machines) share the jobs through a private nats-server, a worker killed mid-job loses
// it to the other when its lease (the acknowledgement deadline) runs out, keys deduplicate, and
// tenants take turns.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test';
import { rmSync } from 'node:fs';
import type { JobView } from '../../src/platform/bus/subjects';
import { getLibraryScan, postLibraryScan, waitForScan } from '../helpers/library';
import { catalogToken, mediaFixtures, playbackFixtures, tempMediaRoot } from '../helpers/media';
import { startTestNats, type TestNats } from '../helpers/nats';
import { freePort } from '../../scripts/machine';
import { BUN, startKeel, type KeelProcess } from '../helpers/process';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';

// Long enough that the first worker is still scanning once the second has started (about a second).
const BIG = 16;
let root: ReturnType<typeof tempMediaRoot>;
let nats: TestNats;
let p: TestPlatform;
let token: string;
const seen: JobView[] = [];
const workers: KeelProcess[] = [];

// One probe at a time and batches of two: a scan of the big folder lasts long enough to kill its worker.
const workerEnv = () => ({
  APP_BUS: nats.url,
  APP_MEDIA_ROOTS: root.root,
  APP_WORKERS_CONCURRENCY: '1',
  APP_WORKERS_POLL_MS: '100',
  APP_WORKERS_LEASE_MS: '2000',
  APP_LIBRARY_PROBES_PER_ROOT: '1',
  APP_LIBRARY_BATCH: '2',
});
const startWorker = async () => {
  const w = await startKeel([BUN, 'run', 'src/main.ts'], workerEnv(), ['workers']);
  workers.push(w);
  return w;
};
const stopWorkers = async () => {
  for (const w of workers.splice(0)) if (w.proc.exitCode === null) await w.stop();
};

async function jobOf(pred: (j: JobView) => boolean): Promise<JobView> {
  for (;;) {
    const j = seen.findLast(pred);
    if (j) return j;
    await Bun.sleep(20);
  }
}

beforeAll(async () => {
  const fx = mediaFixtures();
  // The scans must take a while: MPEG-4 Part 2 files, which the native header reader leaves to ffprobe.
  const slow = playbackFixtures().transcode;
  root = tempMediaRoot();
  for (let i = 1; i <= BIG; i++) root.place(`big/clip ${i}.mkv`, slow);
  // Never scanned before the second test: every file is probed, which keeps the worker busy.
  for (let i = 1; i <= 24; i++) root.place(`busy/clip ${i}.mkv`, slow);
  root.place('small/Heat (1995).mkv', fx.mkv);
  nats = await startTestNats();
  // The catalog and identity in this process; the workers in processes of their own.
  p = await startTestPlatform({ services: ['identity', 'catalog'], env: { APP_BUS: nats.url, APP_MEDIA_ROOTS: root.root } });
  p.bus.subscribe('evt.workers.jobProgress', (e) => void seen.push(e.job));
  token = await catalogToken(p, 'jetstream');
});
afterEach(stopWorkers);
afterAll(async () => {
  await stopWorkers();
  await p?.close();
  await nats?.close();
  rmSync(root.root, { recursive: true, force: true });
});

describe('jobs on a JetStream work queue', () => {
  test('a worker killed mid-scan loses the job to the other worker, which finishes it', async () => {
    const first = await startWorker();
    const scan = (await (await postLibraryScan(p, token, { path: 'big' })).json()).id;
    await waitForScan(p, token, scan, (s) => s.counts.seen >= 2);
    const second = await startWorker();
    expect((await getLibraryScan(p, token, scan)).status).toBe('running');
    first.proc.kill('SIGKILL');
    await first.proc.exited;

    const done = await waitForScan(p, token, scan);
    expect(done).toMatchObject({ status: 'done', counts: { seen: BIG, failed: 0 } });
    const jobId = (await jobOf((j) => (j.payload as { scanId?: string }).scanId === scan)).id;
    // The scan ends in the catalog just before the worker records the job's end.
    const job = await jobOf((j) => j.id === jobId && j.status !== 'running' && j.status !== 'queued');
    // The first attempt died with its worker; the second, on the other worker, finished.
    expect(job).toMatchObject({ status: 'done', attempts: 2, error: null });
    expect(second.proc.exitCode).toBeNull();
    expect((await p.bus.request('qry.workers.job', { id: jobId })).job).toMatchObject({ status: 'done', attempts: 2 });
  }, 60_000);

  test('while the worker is busy, a key deduplicates queued jobs and a tenant with a backlog does not hold up another', async () => {
    await startWorker();
    // The big scan keeps the one slot (APP_WORKERS_CONCURRENCY=1) busy: what follows stays queued.
    const big = (await (await postLibraryScan(p, token, { path: 'busy' })).json()).id;
    await waitForScan(p, token, big, (s) => s.counts.seen >= 1);
    const bigJob = await jobOf((j) => (j.payload as { scanId?: string }).scanId === big);

    const submission = { type: 'library.scan' as const, key: 'dedup-me', payload: { scanId: 'scn_dedup', targets: [{ root: 0, folder: 'small' }] } };
    const a = await p.bus.request('cmd.workers.submit', submission);
    const b = await p.bus.request('cmd.workers.submit', submission);
    expect(a.deduplicated).toBe(false);
    expect(b).toMatchObject({ deduplicated: true, job: { id: a.job.id, status: 'queued' } });
    // Cancelled while queued, it ends at once and frees the key.
    expect((await p.bus.request('cmd.workers.cancel', { id: a.job.id })).job.status).toBe('cancelled');
    const c = await p.bus.request('cmd.workers.submit', submission);
    expect(c.deduplicated).toBe(false);
    expect(c.job.id).not.toBe(a.job.id);
    await p.bus.request('cmd.workers.cancel', { id: c.job.id });

    // Four jobs of a busy tenant are queued before the one of a quiet tenant.
    const submit = (tenant: string, n: number) =>
      p.bus.request('cmd.workers.submit', { type: 'library.scan', tenant, maxAttempts: 1, payload: { scanId: `scn_${tenant}_${n}`, targets: [{ root: 0, folder: 'small' }] } });
    const busy = [];
    for (let i = 0; i < 4; i++) busy.push((await submit('busy', i)).job.id);
    const quiet = (await submit('quiet', 0)).job.id;
    await p.bus.request('cmd.workers.cancel', { id: bigJob.id });
    const mine = new Set([...busy, quiet]);
    for (const id of mine) await jobOf((j) => j.id === id && (j.status === 'done' || j.status === 'failed'));
    const order = [...new Set(seen.filter((j) => mine.has(j.id) && j.status === 'running').map((j) => j.id))];
    expect(order).toHaveLength(5);
    // The quiet tenant's job runs first or second, not after the busy tenant's backlog.
    expect(order.indexOf(quiet)).toBeLessThanOrEqual(1);
    // The cancelled jobs never ran.
    expect(seen.filter((j) => (j.id === a.job.id || j.id === c.job.id) && j.status === 'running')).toEqual([]);

    expect(await p.bus.request('qry.workers.job', { id: 'job_nope' }).catch((e) => e.code)).toBe('WORKERS_JOB_NOT_FOUND');
    expect(await p.bus.request('cmd.workers.cancel', { id: '../x y' }).catch((e) => e.code)).toBe('WORKERS_JOB_NOT_FOUND');
  }, 60_000);
});

test('on a NATS server without JetStream the workers keep their jobs in the database, unless told to use JetStream', async () => {
  const port = await freePort();
  const monitor = await freePort();
  const plain = Bun.spawn(['nats-server', '-a', '127.0.0.1', '-p', String(port), '-m', String(monitor)], { stdout: 'ignore', stderr: 'ignore' });
  try {
    const env = { ...workerEnv(), APP_BUS: `nats://127.0.0.1:${port}` };
    for (let i = 0; i < 100 && !(await fetch(`http://127.0.0.1:${monitor}/healthz`).then((r) => r.ok, () => false)); i++) await Bun.sleep(50);
    const auto = await startKeel([BUN, 'run', 'src/main.ts'], env, ['workers']);
    workers.push(auto);
    expect(auto.stderr()).toContain('JetStream is not available on the NATS server (start it with -js): jobs wait in the database queue');
    await stopWorkers();
    const insisted = await startKeel([BUN, 'run', 'src/main.ts'], { ...env, APP_WORKERS_QUEUE: 'jetstream' }, ['workers']).catch((e: Error) => e.message);
    expect(insisted).toContain('APP_WORKERS_QUEUE=jetstream: the NATS server of APP_BUS has no JetStream (start it with -js)');
  } finally {
    plain.kill();
    await plain.exited;
  }
}, 60_000);
