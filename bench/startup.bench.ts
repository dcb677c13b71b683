// Start-up and idle memory: Keel with every service (`bun src/main.ts`, or a built binary with
// BENCH_STARTUP_BINARY) from process spawn to each service's first /health answer, the longest a
// /health waited while start-up ran, the time until every service logged "service listening", and the
// resident memory once idle. Baselines in the same run: a bare Bun process serving /health on one port
// (start) and a bare Bun.serve on as many ports as Keel listens on (memory), each in its own process.
// Keel and the baselines alternate, BENCH_STARTUP_RUNS times; figures are medians.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median, round } from './lib';

const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 5);
/** How long after start-up a process counts as idle before its memory is read. */
const SETTLE_MS = Number(process.env.BENCH_STARTUP_SETTLE_MS ?? 5000);
const BINARY = process.env.BENCH_STARTUP_BINARY;
const ROOT = join(import.meta.dir, '..');
const ALL = ['identity', 'workspaces', 'catalog', 'sources', 'workers', 'playback'] as const;
/** The services started (APP_SERVICES), every one unless BENCH_STARTUP_SERVICES names some. */
const SERVICES = (process.env.BENCH_STARTUP_SERVICES?.split(',') ?? [...ALL]) as (typeof ALL)[number][];
const PORT_VARS: Record<(typeof ALL)[number], string> = {
  identity: 'APP_IDENTITY_PORT',
  workspaces: 'APP_WORKSPACES_PORT',
  catalog: 'APP_CATALOG_PORT',
  sources: 'APP_SOURCES_PORT',
  workers: 'APP_WORKERS_PORT',
  playback: 'APP_PLAYBACK_PORT',
};

/** Ports free right now (bound with 0, then let go), so a poller can knock before the server logs them. */
function freePorts(n: number): number[] {
  const servers = Array.from({ length: n }, () => Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } }));
  const ports = servers.map((s) => s.port);
  for (const s of servers) s.stop(true);
  return ports;
}

/**
 * Resident memory of `pid` in MiB: all of it, and its anonymous part (heaps, JIT code: the process's
 * own). The rest is file pages, nearly all of them the Bun executable's code, shared by every Bun
 * process on the host and counted in each one's RSS.
 */
function memory(pid: number) {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1]);
  return { rssMiB: kb('Rss') / 1024, anonMiB: kb('Anonymous') / 1024 };
}

/**
 * Knocks at each port's /health every 2 ms from `t0` until `until()` and a first answer from each:
 * the first 200 per port (ms after t0), and the longest any answered /health took.
 */
async function pollHealth(ports: number[], t0: number, until: () => boolean, exited: () => boolean) {
  const first = new Map<number, number>();
  let slowest = 0;
  await Promise.all(
    ports.map(async (port) => {
      while (!exited() && performance.now() - t0 < 30_000 && (!first.has(port) || !until())) {
        const asked = performance.now();
        try {
          const res = await fetch(`http://127.0.0.1:${port}/health`);
          await res.arrayBuffer();
          if (res.status === 200) {
            if (!first.has(port)) first.set(port, performance.now() - t0);
            slowest = Math.max(slowest, performance.now() - asked);
          }
        } catch {
          // Not bound yet.
        }
        await Bun.sleep(2);
      }
    }),
  );
  return { first, slowest };
}

async function keelRun() {
  const ports = freePorts(SERVICES.length + 1);
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-startup-'));
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    APP_DATA_DIR: dataDir,
    APP_API_SECRET: 'b'.repeat(64),
    APP_SERVICES: SERVICES.join(','),
    APP_QUIET_TOKEN: '1',
    APP_LOG_LEVEL: 'info',
    APP_PREVIEW_PORT: String(ports[SERVICES.length]),
  };
  SERVICES.forEach((s, i) => (env[PORT_VARS[s]] = String(ports[i])));
  const t0 = performance.now();
  const proc = Bun.spawn(BINARY ? [BINARY] : [process.execPath, 'src/main.ts'], { cwd: ROOT, env, stdout: 'ignore', stderr: 'pipe' });
  let err = '';
  let listening = 0;
  let readyMs = NaN;
  void (async () => {
    const dec = new TextDecoder();
    for await (const chunk of proc.stderr) {
      err += dec.decode(chunk, { stream: true });
      const n = err.match(/"msg":"service listening"/g)?.length ?? 0;
      if (n > listening && (listening = n) === SERVICES.length) readyMs = performance.now() - t0;
    }
  })();
  try {
    const servicePorts = ports.slice(0, SERVICES.length);
    const { first, slowest } = await pollHealth(servicePorts, t0, () => listening === SERVICES.length, () => proc.exitCode !== null);
    if (proc.exitCode !== null || first.size < SERVICES.length) throw new Error(`keel did not start: ${err.slice(-1500)}`);
    await Bun.sleep(SETTLE_MS);
    return { healthMs: Math.max(...first.values()), slowestHealthMs: slowest, readyMs, ...memory(proc.pid) };
  } finally {
    proc.kill('SIGTERM');
    await proc.exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** A bare Bun process: `ports.length` Bun.serve answering /health, nothing else. */
async function bareRun(portCount: number) {
  const ports = freePorts(portCount);
  const script = `for (const port of ${JSON.stringify(ports)}) Bun.serve({ hostname: '127.0.0.1', port, fetch: () => Response.json({ status: 'ok' }) });`;
  const t0 = performance.now();
  const proc = Bun.spawn([process.execPath, '-e', script], { stdout: 'ignore', stderr: 'inherit' });
  try {
    const { first } = await pollHealth(ports.slice(0, 1), t0, () => true, () => proc.exitCode !== null);
    await Bun.sleep(SETTLE_MS);
    return { healthMs: first.get(ports[0]!) ?? NaN, ...memory(proc.pid) };
  } finally {
    proc.kill('SIGTERM');
    await proc.exited;
  }
}

export async function run(): Promise<Record<string, unknown>> {
  const keel: Awaited<ReturnType<typeof keelRun>>[] = [];
  const bareStart: number[] = [];
  const bareRss: number[] = [];
  const bareAnon: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    keel.push(await keelRun());
    bareStart.push((await bareRun(1)).healthMs);
    // As many ports as Keel listens on: its six services and the preview listener.
    const bare = await bareRun(SERVICES.length + 1);
    bareRss.push(bare.rssMiB);
    bareAnon.push(bare.anonMiB);
  }
  const m = (f: (k: (typeof keel)[number]) => number) => round(median(keel.map(f)), 1);
  const result = {
    runs: RUNS,
    settleMs: SETTLE_MS,
    what: BINARY ? `binary ${BINARY}` : 'bun src/main.ts',
    services: SERVICES.join(','),
    keelHealthMs: m((k) => k.healthMs),
    keelSlowestHealthMs: m((k) => k.slowestHealthMs),
    keelReadyMs: m((k) => k.readyMs),
    keelIdleRssMiB: m((k) => k.rssMiB),
    keelIdleAnonMiB: m((k) => k.anonMiB),
    bareStartHealthMs: round(median(bareStart), 1),
    bareServeRssMiB: round(median(bareRss), 1),
    bareServeAnonMiB: round(median(bareAnon), 1),
    healthRatio: round(median(keel.map((k) => k.healthMs)) / median(bareStart)),
    rssRatio: round(median(keel.map((k) => k.rssMiB)) / median(bareRss)),
  };
  console.table({
    [`Keel, ${SERVICES.length} services (${result.what})`]: {
      'last first /health (ms)': result.keelHealthMs,
      'slowest /health (ms)': result.keelSlowestHealthMs,
      'all listening (ms)': result.keelReadyMs,
      'idle RSS (MiB)': result.keelIdleRssMiB,
      'of which anonymous (MiB)': result.keelIdleAnonMiB,
    },
    'bare Bun process, 1 port': { 'last first /health (ms)': result.bareStartHealthMs },
    [`bare Bun.serve, ${SERVICES.length + 1} ports`]: { 'idle RSS (MiB)': result.bareServeRssMiB, 'of which anonymous (MiB)': result.bareServeAnonMiB },
  });
  console.log(`/health: ${result.healthRatio}x a bare Bun process start; idle RSS: ${result.rssRatio}x a bare Bun.serve (aims: 150 ms, 60 MB)`);
  return result;
}

if (import.meta.main) {
  await run();
  process.exit(0);
}
