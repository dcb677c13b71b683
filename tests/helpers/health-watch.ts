// Polls /health from a process of its own, so what it measures is the server's delay: a test
// process busy with a large answer, or pausing to collect a whole suite's garbage, would count its
// own pauses in the time a fetch took. Started as a script by watchHealth (no imports: it stays light).

export interface HealthReport {
  /** The slowest answer, in ms. */
  slowest: number;
  rounds: number;
  failures: string[];
  /** Answers slower than 250 ms: when they were asked (epoch ms), to which URL, how long they took. */
  slow: { at: number; url: string; ms: number }[];
}

/** Polls every URL's /health, all at once, every `everyMs`, until stop(); starts once the first round is done. */
export async function watchHealth(urls: string[], everyMs = 100): Promise<{ stop(): Promise<HealthReport> }> {
  const proc = Bun.spawn([process.execPath, import.meta.path], {
    env: { ...process.env, KEEL_HEALTH_URLS: JSON.stringify(urls), KEEL_HEALTH_EVERY_MS: String(everyMs) },
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'inherit',
  });
  const reader = proc.stdout.getReader();
  const dec = new TextDecoder();
  let out = '';
  while (!out.includes('\n')) {
    const r = await reader.read();
    if (r.done) throw new Error(`the /health watcher exited with ${await proc.exited}`);
    out += dec.decode(r.value, { stream: true });
  }
  return {
    async stop() {
      proc.stdin.end(); // its stdin closing is the signal to report
      for (;;) {
        const r = await reader.read();
        if (r.done) break;
        out += dec.decode(r.value, { stream: true });
      }
      expectExit(await proc.exited, out);
      return JSON.parse(out.split('\n')[1]!) as HealthReport;
    },
  };
}

function expectExit(code: number, out: string) {
  if (code !== 0) throw new Error(`the /health watcher exited with ${code}: ${out}`);
}

if (import.meta.main) {
  // The test that started it may be gone (it failed before stop()): nobody reads the report then.
  process.stdout.on('error', () => process.exit(0));
  const urls = JSON.parse(process.env.KEEL_HEALTH_URLS!) as string[];
  const everyMs = Number(process.env.KEEL_HEALTH_EVERY_MS);
  let stop = false;
  void (async () => {
    for await (const _ of Bun.stdin.stream());
    stop = true;
  })();
  const report: HealthReport = { slowest: 0, rounds: 0, failures: [], slow: [] };
  while (!stop) {
    await Promise.all(
      urls.map(async (u) => {
        const at = Date.now();
        const t0 = performance.now();
        try {
          const res = await fetch(`${u}/health`, { signal: AbortSignal.timeout(5000) });
          await res.arrayBuffer();
          if (res.status !== 200) report.failures.push(`${u}: ${res.status}`);
        } catch (e) {
          report.failures.push(`${u}: ${(e as Error).message}`);
        }
        const ms = performance.now() - t0;
        report.slowest = Math.max(report.slowest, ms);
        if (ms > 250) report.slow.push({ at, url: u, ms: Math.round(ms) });
      }),
    );
    if (report.rounds++ === 0) process.stdout.write('started\n');
    await Bun.sleep(everyMs);
  }
  try {
    process.stdout.write(JSON.stringify(report) + '\n');
  } catch {
    process.exit(0);
  }
}
