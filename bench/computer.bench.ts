// The workspace as a computer, against the engine reached directly, in the same run:
// (1) files: upload and download MB/s through Keel (PUT/GET .../files) against `docker cp` of the
//     same file to and from the same container;
// (2) processes: ms from POST .../processes (and from its 201) to the first stdout event of a follow, against
//     `docker exec <container> sh -c 'echo ready'` to its first output byte;
// (previews have their own: previews.bench.ts).
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { round, summarize } from './lib';
import { startKeelProcess } from './keel-process';

const MB = 1024 * 1024;
const FILE_MB = Number(process.env.BENCH_COMPUTER_MB ?? 100);
const FILE_RUNS = Number(process.env.BENCH_COMPUTER_FILE_RUNS ?? 3);
const PROCESS_RUNS = Number(process.env.BENCH_COMPUTER_PROCESS_RUNS ?? 20);

function docker(...args: string[]): void {
  const p = Bun.spawnSync(['docker', ...args], { stdout: 'ignore', stderr: 'pipe' });
  if (p.exitCode !== 0) throw new Error(`docker ${args[0]} failed: ${p.stderr.toString().slice(0, 300)}`);
}

async function seconds(fn: () => Promise<void> | void): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

export async function run(): Promise<Record<string, unknown>> {
  const keel = await startKeelProcess({ APP_QUOTA_PROCESSES: '1000000' });
  const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-computer-'));
  try {
    const ws = await keel.workspace(`bench-computer-${Date.now().toString(36)}`);
    const api = (path: string, init: RequestInit & { json?: unknown } = {}) => keel.api(`/api/workspaces/${ws.id}${path}`, init);

    // (1) Files: one file on the host, moved both ways by each path in turn.
    const src = join(scratch, 'payload.bin');
    const block = new Uint8Array(MB).map((_, i) => (i * 131) % 251);
    const writer = Bun.file(src).writer();
    for (let i = 0; i < FILE_MB; i++) writer.write(block);
    await writer.end();
    const bytes = statSync(src).size;
    const up = { keel: [] as number[], cp: [] as number[] };
    const down = { keel: [] as number[], cp: [] as number[] };
    for (let i = 0; i < FILE_RUNS; i++) {
      up.keel.push(
        await seconds(async () => {
          const res = await api('/files?path=bench/keel.bin', { method: 'PUT', body: Bun.file(src).stream() });
          if (res.status !== 200) throw new Error(`upload failed: ${res.status}`);
          await res.arrayBuffer();
        }),
      );
      up.cp.push(await seconds(() => docker('cp', src, `${ws.containerId}:/workspace/cp.bin`)));
      down.keel.push(
        await seconds(async () => {
          const res = await api('/files?path=bench/keel.bin');
          let n = 0;
          for await (const c of res.body!) n += c.byteLength;
          if (n !== bytes) throw new Error(`download short: ${n}`);
        }),
      );
      down.cp.push(await seconds(() => docker('cp', `${ws.containerId}:/workspace/cp.bin`, join(scratch, `back-${i}.bin`))));
      rmSync(join(scratch, `back-${i}.bin`), { force: true });
    }
    const mbps = (s: number[]) => round(bytes / MB / summarize(s).medianMs);
    const files = {
      megabytes: round(bytes / MB),
      runs: FILE_RUNS,
      uploadMBps: { keel: mbps(up.keel), dockerCp: mbps(up.cp) },
      downloadMBps: { keel: mbps(down.keel), dockerCp: mbps(down.cp) },
      uploadTimeRatio: round(summarize(up.keel).medianMs / summarize(up.cp).medianMs),
      downloadTimeRatio: round(summarize(down.keel).medianMs / summarize(down.cp).medianMs),
    };
    console.table({ upload: files.uploadMBps, download: files.downloadMBps });

    // (2) Processes: start to first output line, interleaved with docker exec.
    const viaKeel: number[] = [];
    const after201: number[] = [];
    const viaExec: number[] = [];
    for (let i = 0; i < PROCESS_RUNS + 3; i++) {
      const t0 = performance.now();
      const res = await api('/processes', { method: 'POST', json: { command: 'echo ready' } });
      const { id } = (await res.json()) as { id: string };
      const created = performance.now();
      const follow = await api(`/processes/${id}/output?follow=true`);
      const reader = follow.body!.getReader();
      let text = '';
      while (!text.includes('event: stdout')) {
        const r = await reader.read();
        if (r.done) throw new Error('no output');
        text += new TextDecoder().decode(r.value);
      }
      const keelMs = performance.now() - t0;
      const afterMs = performance.now() - created;
      await reader.cancel();
      const t1 = performance.now();
      const p = Bun.spawn(['docker', 'exec', ws.containerId, 'sh', '-c', 'echo ready'], { stdout: 'pipe', stderr: 'ignore' });
      await p.stdout.getReader().read();
      const execMs = performance.now() - t1;
      await p.exited;
      if (i >= 3) {
        viaKeel.push(keelMs);
        after201.push(afterMs);
        viaExec.push(execMs);
      }
    }
    const pk = summarize(viaKeel);
    const pe = summarize(viaExec);
    const pa = summarize(after201);
    const processes = {
      runs: PROCESS_RUNS,
      keel: { medianMs: round(pk.medianMs), p99Ms: round(pk.p99Ms) },
      /** From the 201 to the first stdout event of a follow opened then (issue 30: at most 10 ms). */
      after201: { medianMs: round(pa.medianMs), p99Ms: round(pa.p99Ms) },
      dockerExec: { medianMs: round(pe.medianMs), p99Ms: round(pe.p99Ms) },
      medianRatio: round(pk.medianMs / pe.medianMs),
    };
    console.table({ 'Keel start -> first stdout event': processes.keel, 'Keel 201 -> first stdout event': processes.after201, 'docker exec -> first byte': processes.dockerExec });

    return { files, processes };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    await keel.stop();
  }
}

if (import.meta.main) {
  await run();
  process.exit(0);
}
