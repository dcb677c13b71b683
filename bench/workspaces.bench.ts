// Workspace API benchmarks, each against a baseline measured in the same run:
//  1. Authenticated GET /api/workspaces with 50 running `minimal` workspaces (created through the API
//     on the real engine), against a bare Bun.serve (own process, like Keel) answering the same JSON.
//     Both are driven by the same load loop (bench/lib.ts: fixed request count, N concurrent fetch loops).
//  2. Create-to-running of a `minimal` workspace through the API (POST, then poll the running list)
//     against `docker run -d` of the same image with the same volume, port, limits and init, and
//     against the same on a bridge network of its own made first (`docker network create`).
//  3. Resume latency: POST /api/workspaces/{id}/resume of a paused workspace (and to its first exec answered), against `docker unpause`
//     (the CLI) of a bare container of the same image.
//  4. Fork of 10: POST /api/workspaces/{id}/fork {count: 10} until all 10 run, against 10 creates from
//     the template sent at once until all run.
//  5. Warm create-to-running: a Keel with APP_WARM_POOL=minimal=5 (its own process), each create made
//     once the pool is full again, against `docker run -d` in the same run.
// BENCH_WORKSPACES_PARTS (e.g. "3,4") runs only those parts (default: all).
import { load, printTable, round, summarize } from './lib';
import { startKeelProcess, type KeelProcess } from './keel-process';
import type { CreatedWorkspace, WorkspaceList } from '../clients/typescript/src';

const WORKSPACES = 50;
const REQUESTS = 4000;
const CONCURRENCY = 16;
const CREATE_RUNS = 5;
const RESUME_RUNS = 20;
const FORK_COUNT = 10;
const WARM_POOL = 5;
const PARTS = new Set((process.env.BENCH_WORKSPACES_PARTS ?? '1,2,3,4,5').split(',').map((s) => s.trim()));

function docker(...args: string[]) {
  const r = Bun.spawnSync(['docker', ...args], { stdout: 'pipe', stderr: 'pipe' });
  if (r.exitCode !== 0) throw new Error(`docker ${args[0]}: ${r.stderr.toString().trim()}`);
  return r.stdout.toString().trim();
}

/** A bare Bun.serve in its own process answering `body` on every request. */
async function startBaseline(body: string): Promise<{ url: string; stop(): void }> {
  const code = `const body = await Bun.stdin.text();
const s = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response(body, { headers: { 'content-type': 'application/json' } }) });
console.log(s.port);`;
  const proc = Bun.spawn([process.execPath, '-e', code], { stdin: new Blob([body]), stdout: 'pipe', stderr: 'inherit' });
  const reader = proc.stdout.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  return { url: `http://127.0.0.1:${Number(first.trim())}`, stop: () => proc.kill() };
}

async function createToRunning(keel: KeelProcess, name: string): Promise<{ ms: number; id: string }> {
  const t0 = performance.now();
  const res = await keel.api('/api/workspaces', { method: 'POST', json: { name, template: 'minimal', type: 'persistent' } });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${await res.text()}`);
  const { id } = (await res.json()) as CreatedWorkspace;
  for (;;) {
    const list = (await (await keel.api('/api/workspaces?status=running')).json()) as WorkspaceList;
    if (list.workspaces.some((w) => w.id === id)) return { ms: performance.now() - t0, id };
    if (performance.now() - t0 > 60_000) throw new Error('workspace did not reach running in 60 s');
    await Bun.sleep(20);
  }
}

/** Waits until every id in `ids` is listed running; ms since `t0`. */
async function allRunning(keel: KeelProcess, ids: string[], t0: number): Promise<number> {
  for (;;) {
    const list = (await (await keel.api('/api/workspaces?status=running')).json()) as { workspaces: { id: string }[] };
    const running = new Set(list.workspaces.map((w) => w.id));
    if (ids.every((id) => running.has(id))) return performance.now() - t0;
    if (performance.now() - t0 > 180_000) throw new Error('workspaces did not reach running in 180 s');
    await Bun.sleep(20);
  }
}

/** Times `action` after `prepare`, `runs` times. */
async function timed(runs: number, prepare: () => unknown, action: () => unknown): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    await prepare();
    const t0 = performance.now();
    await action();
    out.push(performance.now() - t0);
  }
  return out;
}

async function resumeLatency(keel: KeelProcess, ws: { id: string }, image: string) {
  const post = async (action: string) => {
    const res = await keel.api(`/api/workspaces/${ws.id}/${action}`, { method: 'POST' });
    if (res.status !== 200) throw new Error(`${action}: ${res.status} ${await res.text()}`);
  };
  const api = await timed(RESUME_RUNS, () => post('pause'), () => post('resume'));
  // Resume to the first exec answered (issue 30: at most 50 ms): the workspace's daemon answers at once.
  const exec = async () => {
    const res = await keel.api(`/api/workspaces/${ws.id}/exec`, { method: 'POST', json: { command: 'true' } });
    if (res.status !== 200) throw new Error(`exec: ${res.status} ${await res.text()}`);
  };
  const toExec = await timed(RESUME_RUNS, () => post('pause'), async () => (await post('resume'), await exec()));
  const name = `keel-bench-pause-${process.pid}`;
  docker('run', '-d', '--name', name, '--label', 'dev.keel.bench=true', '--user', '1000:1000', image, '/bin/sh', '-c', 'while :; do sleep 3600; done');
  try {
    const bare = await timed(RESUME_RUNS, () => docker('pause', name), () => docker('unpause', name));
    const a = summarize(api);
    const b = summarize(bare);
    const e = summarize(toExec);
    printTable(`resume of a paused workspace, ${RESUME_RUNS} runs`, [
      { path: 'POST /api/workspaces/{id}/resume', p50Ms: round(a.p50Ms, 1), maxMs: round(a.maxMs, 1) },
      { path: 'resume, then POST .../exec `true` answered', p50Ms: round(e.p50Ms, 1), maxMs: round(e.maxMs, 1) },
      { path: 'docker unpause (CLI, bare container)', p50Ms: round(b.p50Ms, 1), maxMs: round(b.maxMs, 1) },
    ]);
    return { runs: RESUME_RUNS, apiP50Ms: round(a.p50Ms, 1), apiMaxMs: round(a.maxMs, 1), resumeToExecP50Ms: round(e.p50Ms, 1), resumeToExecMaxMs: round(e.maxMs, 1), dockerUnpauseP50Ms: round(b.p50Ms, 1), ratio: round(a.p50Ms / b.p50Ms, 2) };
  } finally {
    docker('rm', '-f', name);
  }
}

async function forkOfTen(keel: KeelProcess, source: { id: string }, created: string[]) {
  let t0 = performance.now();
  const res = await keel.api(`/api/workspaces/${source.id}/fork`, { method: 'POST', json: { name: 'bench-fork', count: FORK_COUNT } });
  if (res.status !== 201) throw new Error(`fork: ${res.status} ${await res.text()}`);
  const forks = ((await res.json()) as { workspaces: { id: string }[] }).workspaces.map((w) => w.id);
  created.push(...forks);
  const forkMs = await allRunning(keel, forks, t0);
  t0 = performance.now();
  const creates = await Promise.all(
    Array.from({ length: FORK_COUNT }, async (_, i) => {
      const r = await keel.api('/api/workspaces', { method: 'POST', json: { name: `bench-many-${i}`, template: 'minimal' } });
      if (r.status !== 201) throw new Error(`create: ${r.status} ${await r.text()}`);
      return ((await r.json()) as { id: string }).id;
    }),
  );
  created.push(...creates);
  const createMs = await allRunning(keel, creates, t0);
  printTable(`${FORK_COUNT} workspaces until all run`, [
    { path: `POST .../fork {count: ${FORK_COUNT}} (one snapshot, then ${FORK_COUNT} creates from it)`, ms: round(forkMs, 0) },
    { path: `${FORK_COUNT} POST /api/workspaces at once (template)`, ms: round(createMs, 0) },
  ]);
  return { count: FORK_COUNT, forkMs: round(forkMs, 0), createsMs: round(createMs, 0), ratio: round(forkMs / createMs, 2) };
}

/** Pool entries of `keel` running and not yet claimed (pool containers whose workspace is not listed). */
async function warmReady(keel: KeelProcess): Promise<number> {
  const instance = (await Bun.file(`${keel.dataDir}/workspaces-instance`).text()).trim();
  const rows = docker('ps', '--filter', `label=dev.keel.instance=${instance}`, '--filter', 'label=dev.keel.pool', '--format', '{{.Label "dev.keel.workspace"}}').split('\n').filter(Boolean);
  const listed = (await (await keel.api('/api/workspaces')).json()) as WorkspaceList;
  const owned = new Set(listed.workspaces.map((w) => w.id));
  return rows.filter((id) => !owned.has(id)).length;
}

async function warmCreates(image: string) {
  const keel = await startKeelProcess({ APP_WORKSPACE_PORT_RANGE: '25000-25999', APP_WARM_POOL: `minimal=${WARM_POOL}` });
  const created: string[] = [];
  try {
    const api: number[] = [];
    for (let i = 0; i < CREATE_RUNS; i++) {
      const t0 = performance.now();
      while ((await warmReady(keel)) < WARM_POOL) {
        if (performance.now() - t0 > 180_000) throw new Error('the warm pool did not fill in 180 s');
        await Bun.sleep(100);
      }
      const r = await createToRunning(keel, `bench-warm-${i}`);
      api.push(r.ms);
      created.push(r.id);
    }
    const bare: number[] = [];
    for (let i = 0; i < CREATE_RUNS; i++) bare.push(dockerRunOnce(100 + i, image));
    const a = summarize(api);
    const b = summarize(bare);
    printTable(`warm create-to-running (APP_WARM_POOL=minimal=${WARM_POOL}), median of ${CREATE_RUNS}`, [
      { path: 'POST /api/workspaces -> running (warm entry)', medianMs: round(a.medianMs, 0), maxMs: round(a.maxMs, 0) },
      { path: 'docker run -d (same image, volume, port, limits)', medianMs: round(b.medianMs, 0), maxMs: round(b.maxMs, 0) },
    ]);
    return { runs: CREATE_RUNS, pool: WARM_POOL, apiMedianMs: round(a.medianMs, 0), apiMaxMs: round(a.maxMs, 0), dockerRunMedianMs: round(b.medianMs, 0), ratio: round(a.medianMs / b.medianMs, 3) };
  } finally {
    for (const id of created) await keel.api(`/api/workspaces/${id}?volumes=true`, { method: 'DELETE' }).catch(() => {});
    await keel.stop();
  }
}

/**
 * `docker run -d` of the same container; with `network`, on a bridge of its own made first (what Keel
 * does for each workspace's isolation, its own firewall rules aside), timed together.
 */
function dockerRunOnce(i: number, image: string, network = false): number {
  const name = `keel-bench-baseline-${process.pid}-${i}`;
  const t0 = performance.now();
  if (network) docker('network', 'create', '--label', 'dev.keel.bench=true', '-o', 'com.docker.network.bridge.enable_icc=false', name);
  docker('run', '-d', '--name', name, '--label', 'dev.keel.bench=true', ...(network ? ['--network', name] : []), '--init', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges:true',
    '-m', '256m', '--pids-limit', '128', '--cpus', '0.5', '--user', '1000:1000', '-v', `${name}:/workspace`, '-p', '127.0.0.1::8080',
    image, '/bin/sh', '-c', 'httpd -f -p 8080 -h /workspace & while :; do sleep 3600; done');
  const ms = performance.now() - t0;
  docker('rm', '-f', '-v', name);
  docker('volume', 'rm', '-f', name);
  if (network) docker('network', 'rm', name);
  return ms;
}

export async function run(): Promise<Record<string, unknown>> {
  const keel = await startKeelProcess({ APP_WORKSPACE_PORT_RANGE: '24000-24999' });
  const created: string[] = [];
  try {
    const first = await keel.workspace('bench-warm'); // also builds the minimal image if the engine lacks it
    created.push(first.id);
    const image = (JSON.parse(docker('inspect', first.containerId)) as { Config: { Image: string } }[])[0]!.Config.Image;
    const out: Record<string, unknown> = {};
    if (PARTS.has('5')) out.warmCreateToRunning = await warmCreates(image);
    if (PARTS.has('3')) out.resume = await resumeLatency(keel, first, image);
    if (PARTS.has('4')) out.fork = await forkOfTen(keel, first, created);
    if (PARTS.has('2')) {
      // 2. create-to-running
      const api: number[] = [];
      for (let i = 0; i < CREATE_RUNS; i++) {
        const r = await createToRunning(keel, `bench-create-${i}`);
        api.push(r.ms);
        created.push(r.id);
      }
      const bare: number[] = [];
      const isolated: number[] = [];
      for (let i = 0; i < CREATE_RUNS; i++) {
        bare.push(dockerRunOnce(i, image));
        isolated.push(dockerRunOnce(i, image, true));
      }
      const a = summarize(api);
      const b = summarize(bare);
      const c = summarize(isolated);
      printTable(`create-to-running, median of ${CREATE_RUNS}`, [
        { path: 'POST /api/workspaces -> running', medianMs: round(a.medianMs, 0), maxMs: round(a.maxMs, 0) },
        { path: 'docker run -d (same image, volume, port, limits)', medianMs: round(b.medianMs, 0), maxMs: round(b.maxMs, 0) },
        { path: 'docker network create + docker run -d --network', medianMs: round(c.medianMs, 0), maxMs: round(c.maxMs, 0) },
      ]);
      const createRatio = a.medianMs / b.medianMs;
      console.log(`create-to-running through Keel takes ${round(createRatio, 2)}x docker run -d, ${round(a.medianMs / c.medianMs, 2)}x the same on a network of its own`);

      out.createToRunning = {
        runs: CREATE_RUNS,
        apiMedianMs: round(a.medianMs, 0),
        dockerRunMedianMs: round(b.medianMs, 0),
        dockerRunOwnNetworkMedianMs: round(c.medianMs, 0),
        ratio: round(createRatio, 2),
        ownNetworkRatio: round(a.medianMs / c.medianMs, 2),
      };
    }
    if (PARTS.has('1')) {
      // 1. the list endpoint with 50 workspaces
      for (let i = 1; i < WORKSPACES; i += 10) {
        const batch = Array.from({ length: Math.min(10, WORKSPACES - i) }, (_, k) => keel.workspace(`bench-${i + k}`));
        for (const w of await Promise.all(batch)) created.push(w.id);
      }
      const token = keel.token();
      const listUrl = `${keel.url}/api/workspaces`;
      const listRes = await fetch(listUrl, { headers: { authorization: `Bearer ${token}` } });
      const listBody = await listRes.text();
      const count = (JSON.parse(listBody) as WorkspaceList).workspaces.length;
      if (count !== WORKSPACES) throw new Error(`expected ${WORKSPACES} workspaces in the list, got ${count}`);
      const baseline = await startBaseline(listBody);
      let keelLoad, bareLoad;
      try {
        const headers = { authorization: `Bearer ${token}` };
        bareLoad = await load(() => fetch(baseline.url + '/api/workspaces', { headers }).then((r) => r.arrayBuffer()), { total: REQUESTS, concurrency: CONCURRENCY });
        keelLoad = await load(() => fetch(listUrl, { headers }).then((r) => r.arrayBuffer()), { total: REQUESTS, concurrency: CONCURRENCY });
      } finally {
        baseline.stop();
      }
      printTable(`GET /api/workspaces, ${WORKSPACES} workspaces (${(listBody.length / 1024).toFixed(1)} KiB), ${REQUESTS} requests over ${CONCURRENCY} loops`, [
        { target: 'keel', rps: round(keelLoad.rps, 0), p50Ms: round(keelLoad.p50Ms), p99Ms: round(keelLoad.p99Ms) },
        { target: 'bare Bun.serve (same JSON)', rps: round(bareLoad.rps, 0), p50Ms: round(bareLoad.p50Ms), p99Ms: round(bareLoad.p99Ms) },
      ]);
      const listRatio = keelLoad.rps / bareLoad.rps;
      console.log(`keel serves ${round(listRatio * 100, 1)}% of the bare server's requests/s; p99 ${round(keelLoad.p99Ms / bareLoad.p99Ms, 2)}x`);

      out.list = { workspaces: WORKSPACES, requests: REQUESTS, concurrency: CONCURRENCY, keel: keelLoad, bare: bareLoad, rpsRatio: round(listRatio, 3) };
    }
    return out;
  } finally {
    for (const id of created) await keel.api(`/api/workspaces/${id}?volumes=true`, { method: 'DELETE' }).catch(() => {});
    const snaps = (await (await keel.api('/api/snapshots')).json().catch(() => ({ snapshots: [] }))) as { snapshots: { id: string }[] };
    for (const s of snaps.snapshots ?? []) await keel.api(`/api/snapshots/${s.id}`, { method: 'DELETE' }).catch(() => {});
    await keel.stop();
  }
}

if (import.meta.main) {
  const r = await run();
  console.log(JSON.stringify(r, null, 2));
}
