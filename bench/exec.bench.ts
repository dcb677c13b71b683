// Exec overhead: `true` run through Keel's API (HTTP + auth + ownership + engine exec with the pid
// wrapper + exit code) against `docker exec <container> true` with the docker CLI, same container,
// same run; and the same through `stream: true` (SSE until the `exit` event), against the JSON call.
// Prints medians, p99s and their ratios (API / CLI; below 1 means the API is faster).
import { round, summarize } from './lib';
import { startKeelProcess } from './keel-process';
import type { ExecResult } from '../clients/typescript/src';

const RUNS = Number(process.env.BENCH_EXEC_RUNS ?? 100);
const WARMUP = 10;

async function time(fn: () => Promise<void>, n: number): Promise<number[]> {
  for (let i = 0; i < WARMUP; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}

export async function run(): Promise<Record<string, unknown>> {
  const keel = await startKeelProcess();
  try {
    const ws = await keel.workspace(`bench-exec-${Date.now().toString(36)}`);
    const viaApi = async () => {
      const res = await keel.api(`/api/workspaces/${ws.id}/exec`, { method: 'POST', json: { command: 'true' } });
      const body = (await res.json()) as ExecResult;
      if (res.status !== 200 || body.exitCode !== 0) throw new Error(`exec failed: ${res.status}`);
    };
    const viaStream = async () => {
      const res = await keel.api(`/api/workspaces/${ws.id}/exec`, { method: 'POST', json: { command: 'true', stream: true } });
      const text = await res.text();
      if (res.status !== 200 || !text.includes('event: exit\ndata: {"exitCode":0')) throw new Error(`streaming exec failed: ${res.status}`);
    };
    const viaCli = async () => {
      const p = Bun.spawn(['docker', 'exec', ws.containerId, 'true'], { stdout: 'ignore', stderr: 'ignore' });
      if ((await p.exited) !== 0) throw new Error('docker exec failed');
    };
    // Interleave the two in halves so drift on the shared machine hits both alike.
    const apiSamples: number[] = [];
    const streamSamples: number[] = [];
    const cliSamples: number[] = [];
    for (let half = 0; half < 2; half++) {
      apiSamples.push(...(await time(viaApi, RUNS / 2)));
      streamSamples.push(...(await time(viaStream, RUNS / 2)));
      cliSamples.push(...(await time(viaCli, RUNS / 2)));
    }
    const pick = (s: ReturnType<typeof summarize>) => ({ medianMs: round(s.medianMs), p99Ms: round(s.p99Ms) });
    const api = pick(summarize(apiSamples));
    const stream = pick(summarize(streamSamples));
    const cli = pick(summarize(cliSamples));
    const result = {
      runs: RUNS,
      api,
      apiStream: stream,
      dockerCli: cli,
      medianRatio: round(api.medianMs / cli.medianMs),
      p99Ratio: round(api.p99Ms / cli.p99Ms),
      streamMedianRatio: round(stream.medianMs / api.medianMs),
      streamP99Ratio: round(stream.p99Ms / api.p99Ms),
    };
    console.table({ 'Keel API': api, 'Keel API, stream: true': stream, 'docker exec (CLI)': cli });
    console.log(
      `median ratio API/CLI ${result.medianRatio}, p99 ratio ${result.p99Ratio}; ` +
        `streaming/JSON median ratio ${result.streamMedianRatio}, p99 ratio ${result.streamP99Ratio}`,
    );
    return result;
  } finally {
    await keel.stop();
  }
}

if (import.meta.main) {
  await run();
  process.exit(0);
}
