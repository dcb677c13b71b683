// Templates people bring: the time from POST /api/templates to a running workspace made from it
// (the build on the engine, then a create that waits for `running`), against `docker build` (the CLI,
// the same Dockerfile and context, no network for its steps) then `docker run -d` of the image with
// the same limits, in the same run. Each run's context differs (a fresh file), so neither side is a
// cache hit of the other; the figures are medians of alternating runs. Aim (issue 29): at most 1.2x.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { round } from './lib';
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

async function viaKeel(keel: KeelProcess, i: number): Promise<number> {
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
  const created = await keel.api('/api/workspaces', { method: 'POST', json: { name: `bench-tw-${Date.now().toString(36)}-${i}`, template: name } });
  if (created.status !== 201) throw new Error(`create: ${created.status} ${await created.text()}`);
  const ws = (await created.json()) as { id: string };
  for (;;) {
    const w = (await (await keel.api(`/api/workspaces/${ws.id}`)).json()) as { status: string };
    if (w.status === 'running') break;
    if (w.status === 'failed') throw new Error('workspace failed');
    await Bun.sleep(20);
  }
  const ms = performance.now() - t0;
  await keel.api(`/api/workspaces/${ws.id}?volumes=true`, { method: 'DELETE' });
  return ms;
}

function viaCli(i: number): number {
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-tpl-'));
  writeFileSync(join(dir, 'Dockerfile'), dockerfile(image));
  writeFileSync(join(dir, 'stamp.txt'), `${Date.now()}-${i}-${Math.random()}\n`);
  const tag = `keel-bench-template:${Date.now().toString(36)}-${i}`;
  const t0 = performance.now();
  docker('build', '-q', '--network', 'none', '-t', tag, dir);
  const id = docker('run', '-d', '--memory', '512m', '--cpus', '1', '--pids-limit', '256', '--init', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges', tag, '/bin/sh', '-c', 'while :; do sleep 3600; done');
  const ms = performance.now() - t0;
  docker('rm', '-f', id);
  docker('rmi', '-f', tag);
  rmSync(dir, { recursive: true, force: true });
  return ms;
}

export async function run(): Promise<Record<string, unknown>> {
  const keel = await startKeelProcess({ APP_QUOTA_TEMPLATES: '1000' });
  try {
    // The built-in base exists on both sides before timing (a first template may have to make it).
    await viaKeel(keel, -1);
    const keelMs: number[] = [];
    const cliMs: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      cliMs.push(viaCli(i));
      keelMs.push(await viaKeel(keel, i));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const result = { runs: RUNS, keelMs: round(median(keelMs)), cliMs: round(median(cliMs)), ratio: round(median(keelMs) / median(cliMs)), keelRuns: keelMs.map((x) => round(x)), cliRuns: cliMs.map((x) => round(x)) };
    console.table({ 'POST /api/templates to a running workspace': { medianMs: result.keelMs }, 'docker build + docker run -d': { medianMs: result.cliMs } });
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
