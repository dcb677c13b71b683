// Workspace API benchmarks, each against a baseline measured in the same run:
//  1. Authenticated GET /api/workspaces with 50 running `minimal` workspaces (created through the API
//     on the real engine), against a bare Bun.serve (own process, like Keel) answering the same JSON.
//     Both are driven by the same load loop (bench/lib.ts: fixed request count, N concurrent fetch loops).
//  2. Create-to-running of a `minimal` workspace through the API (POST, then poll the running list)
//     against `docker run -d` of the same image with the same volume, port, limits and init.
import { load, printTable, round, summarize } from './lib';
import { startKeelProcess, type KeelProcess } from './keel-process';
import type { CreatedWorkspace, WorkspaceList } from '../clients/typescript/src';

const WORKSPACES = 50;
const REQUESTS = 4000;
const CONCURRENCY = 16;
const CREATE_RUNS = 5;

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

function dockerRunOnce(i: number, image: string): number {
  const name = `keel-bench-baseline-${process.pid}-${i}`;
  const t0 = performance.now();
  docker('run', '-d', '--name', name, '--label', 'dev.keel.bench=true', '--init', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges:true',
    '-m', '256m', '--pids-limit', '128', '--cpus', '0.5', '--user', '1000:1000', '-v', `${name}:/workspace`, '-p', '127.0.0.1::8080',
    image, '/bin/sh', '-c', 'httpd -f -p 8080 -h /workspace & while :; do sleep 3600; done');
  const ms = performance.now() - t0;
  docker('rm', '-f', '-v', name);
  docker('volume', 'rm', '-f', name);
  return ms;
}

export async function run(): Promise<Record<string, unknown>> {
  const keel = await startKeelProcess({ APP_WORKSPACE_PORT_RANGE: '24000-24999' });
  const created: string[] = [];
  try {
    // 1. the list endpoint with 50 workspaces
    const first = await keel.workspace('bench-warm'); // also builds the minimal image if the engine lacks it
    created.push(first.id);
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

    // 2. create-to-running
    const api: number[] = [];
    for (let i = 0; i < CREATE_RUNS; i++) {
      const r = await createToRunning(keel, `bench-create-${i}`);
      api.push(r.ms);
      created.push(r.id);
    }
    const image = (JSON.parse(docker('inspect', (await (await keel.api(`/api/workspaces/${first.id}`)).json() as { containerId: string }).containerId)) as { Config: { Image: string } }[])[0]!.Config.Image;
    const bare: number[] = [];
    for (let i = 0; i < CREATE_RUNS; i++) bare.push(dockerRunOnce(i, image));
    const a = summarize(api);
    const b = summarize(bare);
    printTable(`create-to-running, median of ${CREATE_RUNS}`, [
      { path: 'POST /api/workspaces -> running', medianMs: round(a.medianMs, 0), maxMs: round(a.maxMs, 0) },
      { path: 'docker run -d (same image, volume, port, limits)', medianMs: round(b.medianMs, 0), maxMs: round(b.maxMs, 0) },
    ]);
    const createRatio = a.medianMs / b.medianMs;
    console.log(`create-to-running through Keel takes ${round(createRatio, 2)}x docker run -d`);

    return {
      list: { workspaces: WORKSPACES, requests: REQUESTS, concurrency: CONCURRENCY, keel: keelLoad, bare: bareLoad, rpsRatio: round(listRatio, 3) },
      createToRunning: { runs: CREATE_RUNS, apiMedianMs: round(a.medianMs, 0), dockerRunMedianMs: round(b.medianMs, 0), ratio: round(createRatio, 2) },
    };
  } finally {
    for (const id of created) await keel.api(`/api/workspaces/${id}?volumes=true`, { method: 'DELETE' }).catch(() => {});
    await keel.stop();
  }
}

if (import.meta.main) {
  const r = await run();
  console.log(JSON.stringify(r, null, 2));
}
