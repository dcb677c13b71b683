// Templates people bring: the time from POST /api/templates to a running workspace made from it
// (the build on the engine, then a create that waits for `running`), against `docker build` (the CLI,
// the same Dockerfile and context, no network for its steps) then `docker run -d` of the image with
// the same limits, in the same run. `running` is read from the list (GET /api/workspaces), whose rows
// carry no stats: the single GET waits for a new workspace's first stats sample (~1 s here). Each run's
// context differs (a fresh file), so neither side is a cache hit of the other; the figures are medians
// of alternating runs, with the build and the start apart. Aim (issue 29): at most 1.2x.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median, round } from './lib';
import { startKeelProcess, type KeelProcess } from './keel-process';
import { MINIMAL_IMAGE } from '../src/services/workspaces/images/minimal-image';

const RUNS = Number(process.env.BENCH_TEMPLATES_RUNS ?? 5);
const image = process.env.APP_WORKSPACE_MINIMAL_IMAGE ?? MINIMAL_IMAGE;
const dockerfile = (from: string) => `FROM ${from}\nUSER root\nCOPY stamp.txt /opt/stamp.txt\nRUN mkdir -p /opt/tools && cp /opt/stamp.txt /opt/tools/stamp && chown -R 1000:1000 /opt/tools\nUSER 1000:1000\n`;

function docker(...args: string[]) {
  const r = Bun.spawnSync(['docker', ...args], { stdout: 'pipe', stderr: 'pipe' });
  if (r.exitCode !== 0) throw new Error(`docker ${args[0]}: ${r.stderr.toString().trim().slice(0, 300)}`);
  return r.stdout.toString().trim();
}

async function viaKeel(keel: KeelProcess, i: number): Promise<{ ms: number; buildMs: number }> {
  const stamp = `${Date.now()}-${i}-${Math.random()}\n`;
  const t0 = performance.now();
  const res = await keel.api('/api/templates', { method: 'POST', json: { name: `bench-${Date.now().toString(36)}-${i}`, dockerfile: dockerfile('keel/minimal'), files: { 'stamp.txt': stamp } } });
  if (res.status !== 202) throw new Error(`template: ${res.status} ${await res.text()}`);
  const { id, name } = (await res.json()) as { id: string; name: string };
  for (;;) {
    const t = (await (await keel.api(`/api/templates/${id}`)).json()) as { status: string; reason: string | null };
    if (t.status === 'ready') break;
    if (t.status === 'failed') throw new Error(`build failed: ${t.reason}`);
    await Bun.sleep(20);
  }
  const buildMs = performance.now() - t0;
  const created = await keel.api('/api/workspaces', { method: 'POST', json: { name: `bench-tw-${Date.now().toString(36)}-${i}`, template: name } });
  if (created.status !== 201) throw new Error(`create: ${created.status} ${await created.text()}`);
  const ws = (await created.json()) as { id: string };
  // Read from the list: GET /api/workspaces/{id} of a workspace that just became running waits for its
  // first stats sample (up to 3 s, ~1 s on this machine), which would count the stats, not the start.
  for (;;) {
    const list = (await (await keel.api('/api/workspaces')).json()) as { workspaces: { id: string; status: string }[] };
    const w = list.workspaces.find((x) => x.id === ws.id);
    if (w?.status === 'running') break;
    if (!w || w.status === 'failed') throw new Error(`workspace ${w ? 'failed' : 'gone'}`);
    await Bun.sleep(20);
  }
  const ms = performance.now() - t0;
  await keel.api(`/api/workspaces/${ws.id}?volumes=true`, { method: 'DELETE' });
  return { ms, buildMs };
}

function viaCli(i: number): { ms: number; buildMs: number } {
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-tpl-'));
  writeFileSync(join(dir, 'Dockerfile'), dockerfile(image));
  writeFileSync(join(dir, 'stamp.txt'), `${Date.now()}-${i}-${Math.random()}\n`);
  const tag = `keel-bench-template:${Date.now().toString(36)}-${i}`;
  const t0 = performance.now();
  docker('build', '-q', '--network', 'none', '-t', tag, dir);
  const buildMs = performance.now() - t0;
  const id = docker('run', '-d', '--memory', '512m', '--cpus', '1', '--pids-limit', '256', '--init', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges', tag, '/bin/sh', '-c', 'while :; do sleep 3600; done');
  const ms = performance.now() - t0;
  docker('rm', '-f', id);
  docker('rmi', '-f', tag);
  rmSync(dir, { recursive: true, force: true });
  return { ms, buildMs };
}

export async function run(): Promise<Record<string, unknown>> {
  const keel = await startKeelProcess({ APP_QUOTA_TEMPLATES: '1000' });
  try {
    // The built-in base exists on both sides before timing (a first template may have to make it).
    await viaKeel(keel, -1);
    const keelRuns: { ms: number; buildMs: number }[] = [];
    const cliRuns: { ms: number; buildMs: number }[] = [];
    for (let i = 0; i < RUNS; i++) {
      cliRuns.push(viaCli(i));
      keelRuns.push(await viaKeel(keel, i));
    }
    const keelMs = keelRuns.map((r) => r.ms);
    const cliMs = cliRuns.map((r) => r.ms);
    // The two parts apart: the build (POST to `ready`; `docker build`), then the start (create to `running`; `docker run -d`).
    const keelBuildMs = round(median(keelRuns.map((r) => r.buildMs)));
    const cliBuildMs = round(median(cliRuns.map((r) => r.buildMs)));
    const keelStartMs = round(median(keelRuns.map((r) => r.ms - r.buildMs)));
    const cliStartMs = round(median(cliRuns.map((r) => r.ms - r.buildMs)));
    const result = {
      runs: RUNS, keelMs: round(median(keelMs)), cliMs: round(median(cliMs)), ratio: round(median(keelMs) / median(cliMs)),
      keelBuildMs, cliBuildMs, keelStartMs, cliStartMs, keelRuns: keelMs.map((x) => round(x)), cliRuns: cliMs.map((x) => round(x)),
    };
    console.table({
      'POST /api/templates to a running workspace': { medianMs: result.keelMs, buildMs: keelBuildMs, startMs: keelStartMs },
      'docker build + docker run -d': { medianMs: result.cliMs, buildMs: cliBuildMs, startMs: cliStartMs },
    });
    console.log(`template to running workspace: ${result.ratio}x docker build + docker run (aim: at most 1.2x)`);
    return result;
  } finally {
    await keel.stop();
  }
}

if (import.meta.main) {
  await run();
  process.exit(0);
}
