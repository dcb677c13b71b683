// wrk (Debian's package) as the load generator of the HTTP benchmarks: one thread, N connections,
// a fixed duration, latency percentiles. A C client in its own process keeps the client's cost
// small and constant, so the server's figures are the server's (a fetch loop in Bun would compete
// with the server for the same cores and parse every answer).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface WrkResult {
  connections: number;
  seconds: number;
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Answers that were neither 2xx nor 3xx, and socket errors: a figure with either is refused. */
  non2xx: number;
  socketErrors: number;
}

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

/** wrk on PATH, installed with apt-get when missing and running as root; otherwise a clear failure. */
export function ensureWrk(): void {
  if (has('wrk')) return;
  if (process.getuid?.() !== 0) throw new Error('wrk is not installed and this is not root: apt-get install wrk');
  process.stderr.write('bench: installing wrk with apt-get\n');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update', '-qq'], ['install', '-y', '-qq', '--no-install-recommends', 'wrk']]) {
    const r = spawnSync('apt-get', args, { env, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`apt-get ${args[0]} failed: ${(r.stderr ?? '').trim().split('\n').pop()}`);
  }
  if (!has('wrk')) throw new Error('wrk is still not on PATH after apt-get install wrk');
}

const toMs = (v: string, unit: string) => Number(v) * ({ us: 0.001, ms: 1, s: 1000, m: 60_000 } as Record<string, number>)[unit]!;

export function parseWrk(out: string, connections: number, seconds: number): WrkResult {
  const pct = (p: string) => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(out);
    if (!m) throw new Error(`wrk printed no ${p}% latency:\n${out}`);
    return toMs(m[1]!, m[2]!);
  };
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
  const total = /(\d+) requests in/.exec(out);
  if (!rps || !total) throw new Error(`unexpected wrk output:\n${out}`);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    connections,
    seconds,
    requests: Number(total[1]),
    rps: Number(rps[1]),
    p50Ms: pct('50'),
    p99Ms: pct('99'),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    socketErrors: sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
  };
}

/**
 * One wrk run: `-t1 -c<connections> -d<seconds>s --latency`. `paths` (more than one) are requested
 * at random, through a Lua script. Refuses a run with any non-2xx/3xx answer or socket error.
 */
export async function wrk(opts: { url: string; paths: string[]; connections: number; seconds: number; headers?: Record<string, string> }): Promise<WrkResult> {
  const args = ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--latency'];
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}: ${v}`);
  let dir: string | undefined;
  if (opts.paths.length > 1) {
    dir = mkdtempSync(join(tmpdir(), 'keel-wrk-'));
    const script = join(dir, 'paths.lua');
    writeFileSync(
      script,
      `local paths = { ${opts.paths.map((p) => JSON.stringify(p)).join(', ')} }\n` +
        'math.randomseed(42)\nrequest = function() return wrk.format(nil, paths[math.random(#paths)]) end\n',
    );
    args.push('-s', script);
  }
  args.push(opts.url + opts.paths[0]);
  try {
    const proc = Bun.spawn(['wrk', ...args], { stdout: 'pipe', stderr: 'pipe' });
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    if ((await proc.exited) !== 0) throw new Error(`wrk failed: ${err.trim() || out}`);
    const r = parseWrk(out, opts.connections, opts.seconds);
    if (r.non2xx > 0 || r.socketErrors > 0) throw new Error(`wrk saw ${r.non2xx} non-2xx/3xx answers and ${r.socketErrors} socket errors:\n${out}`);
    return r;
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}
