// A second private Docker engine for the several-engines tests, in a network namespace of its own
// (keel-test-b): its own socket, data root, bridge (--bip) and address pool, so it behaves like an
// engine on another machine. Never in the shared engine's namespace: a second dockerd there flushes
// the first one's iptables chains and claims docker0, breaking every other test run on the machine.
// Idempotent: a run that finds it answering reuses it; stop() and start() are for engine-down tests.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const NETNS = 'keel-test-b';
export const NETNS_PATH = `/run/netns/${NETNS}`;
const DIR = '/tmp/keel-test-docker-b';
export const SOCKET = join(DIR, 'docker.sock');
export const HOST = `unix://${SOCKET}`;
const PIDFILE = join(DIR, 'docker.pid');

function sh(argv: string[]): { code: number; out: string } {
  const r = Bun.spawnSync(argv, { stdout: 'pipe', stderr: 'pipe' });
  return { code: r.exitCode ?? -1, out: (r.stdout.toString() + r.stderr.toString()).trim() };
}

/** `docker <args>` against the second engine. */
export function dockerB(...args: string[]): { code: number; stdout: string } {
  const r = Bun.spawnSync(['docker', ...args], { env: { ...process.env, DOCKER_HOST: HOST }, stdout: 'pipe', stderr: 'pipe' });
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString().trim() };
}

const answers = () => dockerB('version', '--format', '{{.Server.Version}}').code === 0;

function pid(): number | null {
  if (!existsSync(PIDFILE)) return null;
  const n = Number(readFileSync(PIDFILE, 'utf8').trim());
  // The pid of a killed dockerd can have been given to another process since: only a dockerd counts.
  try {
    return n > 0 && readFileSync(`/proc/${n}/comm`, 'utf8').trim() === 'dockerd' ? n : null;
  } catch {
    return null;
  }
}

/** Starts the second engine (and its namespace) unless it answers already. */
export async function startSecondEngine(timeoutMs = 60_000): Promise<string> {
  if (answers()) return HOST;
  if (!existsSync(NETNS_PATH)) {
    const made = sh(['ip', 'netns', 'add', NETNS]);
    if (made.code !== 0 && !existsSync(NETNS_PATH)) throw new Error(`ip netns add ${NETNS} failed: ${made.out}`);
  }
  sh(['ip', 'netns', 'exec', NETNS, 'ip', 'link', 'set', 'lo', 'up']);
  mkdirSync(join(DIR, 'exec'), { recursive: true });
  const until = Date.now() + timeoutMs;
  let child: ReturnType<typeof Bun.spawn> | null = null;
  let exits = 0;
  while (Date.now() < until) {
    if (answers()) return HOST;
    // A dockerd that ended before answering (a restart after a kill can meet the old one's leftovers
    // for a moment) is started again, up to three times, rather than waited for in vain.
    if (!pid() && (!child || (child.exitCode !== null && exits++ < 3))) child = spawnDockerd();
    await Bun.sleep(250);
  }
  throw new Error(`the second dockerd did not answer within ${timeoutMs / 1000} s; the end of ${LOG}:\n${logTail()}`);
}

const LOG = join(DIR, 'dockerd.log');

/** dockerd in the namespace, its output appended to LOG (every start of a run kept for a failure's report). */
function spawnDockerd() {
  const fd = openSync(LOG, 'a');
  try {
    const child = Bun.spawn(
      [
        'nsenter', `--net=${NETNS_PATH}`, 'dockerd',
        '--storage-driver=vfs', '--host', HOST, '--data-root', join(DIR, 'data'), '--exec-root', join(DIR, 'exec'),
        '--pidfile', PIDFILE, '--bip', '10.250.0.1/24', '--default-address-pool', 'base=10.251.0.0/16,size=24',
      ],
      { stdout: fd, stderr: fd, stdin: 'ignore' },
    );
    // Left running for the next run, as the shared engine is.
    child.unref();
    return child;
  } finally {
    closeSync(fd);
  }
}

function logTail(lines = 20): string {
  try {
    return readFileSync(LOG, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * Stops the second engine and waits until it is gone: SIGTERM as an operator would (dockerd stops its
 * containers first), or SIGKILL as a crash or a cut-off machine (nothing is told before it goes).
 */
export async function stopSecondEngine(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM', timeoutMs = 60_000): Promise<void> {
  const p = pid();
  if (!p) return;
  process.kill(p, signal);
  const until = Date.now() + timeoutMs;
  while (Date.now() < until && existsSync(`/proc/${p}`)) await Bun.sleep(200);
  if (existsSync(`/proc/${p}`)) throw new Error('the second dockerd did not stop');
}

/** Removes every object an instance made on the second engine. */
export function removeInstanceObjectsB(instance: string) {
  const filter = `label=dev.keel.instance=${instance}`;
  const ids = dockerB('ps', '-aq', '--filter', filter).stdout.split('\n').filter(Boolean);
  if (ids.length) dockerB('rm', '-f', '-v', ...ids);
  const vols = dockerB('volume', 'ls', '-q', '--filter', filter).stdout.split('\n').filter(Boolean);
  if (vols.length) dockerB('volume', 'rm', '-f', ...vols);
  const nets = dockerB('network', 'ls', '-q', '--filter', filter).stdout.split('\n').filter(Boolean);
  if (nets.length) dockerB('network', 'rm', ...nets);
}
