// Makes this machine ready for Keel, for both `npm test` (scripts/test.ts) and `npm run dev`
// (scripts/dev.ts): one module, so the two commands cannot drift apart.
//   - installs what is missing with apt-get (as root): docker.io, ffmpeg, nats-server,
//     busybox-static (the `minimal` image), git (workspace repos are cloned on the host),
//     golang-go (keeld, the workspace daemon, is built from daemon/ by scripts/daemon.ts);
//   - finds a Docker engine that answers, in this order: DOCKER_HOST, Docker's default socket,
//     a private engine kept in `dir`, another dockerd already running on this machine; or starts a
//     private dockerd in `dir` (vfs storage, iptables on as Docker's default) and leaves it running
//     on purpose so the next run reuses it (`bun scripts/engine.ts stop <dir>` stops it);
//   - starts a nats-server on loopback that accepts only one user and password (tests);
//   - starts a private PostgreSQL cluster on loopback with a password (tests), from Debian's packages.
// The compiled binary (src/bin.ts) never imports this file: only these scripts install anything.
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { buildDaemon } from './daemon';

export class MachineError extends Error {}

const APT_PACKAGES: Record<string, string> = {
  dockerd: 'docker.io',
  docker: 'docker.io',
  ffprobe: 'ffmpeg',
  ffmpeg: 'ffmpeg',
  'nats-server': 'nats-server',
  git: 'git',
  ldd: 'libc-bin', // finds the C library files the offline bun-typescript image needs
  go: 'golang-go', // builds keeld, the workspace daemon (scripts/daemon.ts)
};
/** What only the tests need: the dashboard's end-to-end tests drive Debian's Chromium (never a downloaded one). */
const TEST_APT_PACKAGES: Record<string, string> = { chromium: 'chromium', pg_ctlcluster: 'postgresql' };

const say = (line: string) => process.stderr.write(`keel: ${line}\n`);
const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
const run = (cmd: string, args: string[], env?: Record<string, string>) =>
  spawnSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env }, encoding: 'utf8' });

/** The apt packages this machine lacks (commands missing, or busybox-static not installed). */
export function missingPackages(extra: Record<string, string> = {}): string[] {
  const missing = new Set<string>();
  for (const [cmd, pkg] of Object.entries({ ...APT_PACKAGES, ...extra })) if (!has(cmd)) missing.add(pkg);
  // The minimal workspace image needs a statically linked busybox (a dynamic one may be on PATH).
  if (!/install ok installed/.test(run('dpkg-query', ['-W', '-f=${Status}', 'busybox-static']).stdout ?? '')) missing.add('busybox-static');
  return [...missing];
}

export function installMissing(extra: Record<string, string> = {}): void {
  const missing = missingPackages(extra);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0) throw new MachineError(`missing ${missing.join(', ')} and not root to apt-get install them`);
  say(`installing ${missing.join(' ')} with apt-get`);
  const env = { DEBIAN_FRONTEND: 'noninteractive' };
  const upd = run('apt-get', ['update', '-qq'], env);
  if (upd.status !== 0) throw new MachineError(`apt-get update failed: ${upd.stderr.trim().split('\n').pop()}`);
  const inst = run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], env);
  if (inst.status !== 0) throw new MachineError(`apt-get install ${missing.join(' ')} failed: ${inst.stderr.trim().split('\n').pop()}`);
}

export const DEFAULT_SOCKET = 'unix:///var/run/docker.sock';

/** True when a Docker engine answers GET /_ping at `host` (unix:// or tcp://) within the timeout. */
export async function engineAnswers(host: string, timeoutMs = 2000): Promise<boolean> {
  try {
    const signal = AbortSignal.timeout(timeoutMs);
    const res = host.startsWith('unix://')
      ? await fetch('http://docker/_ping', { unix: host.slice('unix://'.length), signal })
      : await fetch(`${host.replace(/^tcp:/, 'http:').replace(/\/$/, '')}/_ping`, { signal });
    return res.ok && (await res.text()) === 'OK';
  } catch {
    return false;
  }
}

/** dockerd processes running on this machine, with the unix socket each listens on (Docker's default when none is given). */
export function runningDockerds(): { pid: number; host: string }[] {
  const out: { pid: number; host: string }[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      continue; // gone meanwhile
    }
    if (!argv[0] || !/(^|\/)dockerd$/.test(argv[0])) continue;
    // One in another network namespace (a test's isolated engine) does not manage this one's iptables.
    try {
      if (readlinkSync(`/proc/${pid}/ns/net`) !== readlinkSync('/proc/self/ns/net')) continue;
    } catch {
      continue;
    }
    let host: string | undefined;
    argv.forEach((a, i) => {
      const v = a.startsWith('--host=') ? a.slice(7) : a.startsWith('-H=') ? a.slice(3) : a === '-H' || a === '--host' ? argv[i + 1] : undefined;
      if (v?.startsWith('unix://') && !host) host = v;
    });
    out.push({ pid: Number(pid), host: host ?? DEFAULT_SOCKET });
  }
  return out;
}

export interface PrivateEngineLayout {
  dir: string;
  host: string;
  socket: string;
  execRoot: string;
  dataRoot: string;
  pidfile: string;
  log: string;
}

/**
 * Where a private engine kept in `dir` lives. A unix socket path is limited to 107 bytes, and
 * containerd's sockets sit deeper in the exec root, so a long `dir` moves socket and exec root to
 * /run/keel-engine-<hash of dir> (the images, containers and volumes stay in `dir`).
 */
export function privateEngineLayout(dir: string): PrivateEngineLayout {
  const abs = resolve(dir);
  const runDir = abs.length > 60 ? `/run/keel-engine-${createHash('sha256').update(abs).digest('hex').slice(0, 12)}` : abs;
  const socket = join(runDir, 'docker.sock');
  return { dir: abs, host: `unix://${socket}`, socket, execRoot: join(runDir, 'exec'), dataRoot: join(abs, 'root'), pidfile: join(abs, 'dockerd.pid'), log: join(abs, 'dockerd.log') };
}

export interface EngineChoice {
  host: string;
  /** One line for the start-up message: where this engine comes from. */
  origin: string;
  /** Set when this run started the engine. */
  startedPid?: number;
}

export interface EngineOptions {
  /** Directory of the private engine (kept between runs). */
  dir: string;
  /** DOCKER_HOST as the user set it (undefined: unset). */
  dockerHost?: string;
  /**
   * Runs a started dockerd in a network namespace of its own (tests only): a second dockerd with
   * iptables on in the host's namespace would reset the chains and share docker0 with the first.
   */
  isolatedNetwork?: boolean;
  /** Look for other dockerds on this machine before starting one (default true). */
  findRunning?: boolean;
}

/** Finds an engine that answers, or starts a private dockerd in `dir`; throws MachineError saying why not. */
export async function ensureEngine(o: EngineOptions): Promise<EngineChoice> {
  if (o.dockerHost) {
    if (await engineAnswers(o.dockerHost)) return { host: o.dockerHost, origin: 'DOCKER_HOST' };
    say(`DOCKER_HOST=${o.dockerHost} does not answer; looking for another engine`);
  } else if (await engineAnswers(DEFAULT_SOCKET)) {
    return { host: DEFAULT_SOCKET, origin: "Docker's default socket" };
  }
  const layout = privateEngineLayout(o.dir);
  if (await engineAnswers(layout.host)) return { host: layout.host, origin: `private dockerd kept in ${layout.dir}, reused` };
  if (o.findRunning !== false && !o.isolatedNetwork) {
    // Two dockerds with iptables on cannot share a host's network: use the one that runs.
    const others = runningDockerds();
    for (const d of others) if (await engineAnswers(d.host)) return { host: d.host, origin: `dockerd already running on this machine (pid ${d.pid}), reused` };
    if (others.length) throw new MachineError(`a dockerd (pid ${others[0]!.pid}) runs but does not answer on ${others[0]!.host}; stop it, or set DOCKER_HOST to an engine that answers`);
  }
  return startPrivateEngine(layout, o.isolatedNetwork ?? false);
}

async function startPrivateEngine(l: PrivateEngineLayout, isolatedNetwork: boolean): Promise<EngineChoice> {
  if (!has('dockerd')) throw new MachineError('dockerd is not installed (apt-get install docker.io)');
  if (process.getuid?.() !== 0) throw new MachineError(`no Docker engine answers and starting one needs root; set DOCKER_HOST to an engine`);
  for (const d of [l.dir, l.dataRoot, l.execRoot]) mkdirSync(d, { recursive: true, mode: 0o700 });
  say(`starting a private dockerd in ${l.dir} (log: ${l.log})`);
  // Docker's default networking (iptables on): user-defined networks are then isolated from each other.
  const args = ['--storage-driver=vfs', `--host=${l.host}`, `--data-root=${l.dataRoot}`, `--exec-root=${l.execRoot}`, `--pidfile=${l.pidfile}`];
  const [cmd, argv] = isolatedNetwork ? ['unshare', ['--net', '--', 'dockerd', ...args]] : ['dockerd', args];
  const log = openSync(l.log, 'a');
  const child = spawn(cmd, argv as string[], { stdio: ['ignore', log, log], detached: true });
  child.unref();
  let exited = false;
  child.on('exit', () => (exited = true));
  for (let i = 0; i < 120 && !exited; i++) {
    if (await engineAnswers(l.host, 1000)) return { host: l.host, origin: `private dockerd started in ${l.dir} (pid ${child.pid}; left running for the next run)`, startedPid: child.pid };
    await Bun.sleep(500);
  }
  if (!exited) child.kill('SIGTERM');
  const tail = existsSync(l.log) ? readFileSync(l.log, 'utf8').trim().split('\n').slice(-3).join(' | ') : '';
  throw new MachineError(`the private dockerd did not answer on ${l.host}; see ${l.log}${tail ? `: ${tail.slice(0, 400)}` : ''}`);
}

/** Stops the private engine kept in `dir` (SIGTERM, then waits for it to go). False when none ran. */
export async function stopPrivateEngine(dir: string, timeoutMs = 30_000): Promise<boolean> {
  const l = privateEngineLayout(dir);
  let pid: number;
  try {
    pid = Number(readFileSync(l.pidfile, 'utf8').trim());
  } catch {
    return false;
  }
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (!pid || !alive()) return false;
  process.kill(pid, 'SIGTERM');
  const end = Date.now() + timeoutMs;
  while (alive() && Date.now() < end) await Bun.sleep(200);
  if (alive()) throw new MachineError(`dockerd ${pid} did not stop within ${timeoutMs / 1000} s`);
  return true;
}

/** A port on loopback that nothing listens on now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** A nats-server on loopback that refuses every client without its user and password. */
export async function startNats(): Promise<{ url: string; stop: () => void }> {
  const port = await freePort();
  const user = 'keel';
  const pass = randomBytes(12).toString('hex');
  const child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '--user', user, '--pass', pass], { stdio: 'ignore' });
  for (let i = 0; i < 50; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      Bun.connect({ hostname: '127.0.0.1', port, socket: { open: (s) => (s.end(), resolve(true)), data() {}, error: () => resolve(false) } }).catch(() => resolve(false));
    });
    if (ok) return { url: `nats://${user}:${pass}@127.0.0.1:${port}`, stop: () => child.kill('SIGTERM') };
    await Bun.sleep(100);
  }
  child.kill('SIGKILL');
  throw new MachineError('nats-server did not start');
}

/** The server programs of Debian's newest installed PostgreSQL (they are not on PATH there). */
function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))) : [];
  if (!versions.length) throw new MachineError('PostgreSQL is not installed (apt-get install postgresql)');
  return join(root, versions.sort((a, b) => Number(b) - Number(a))[0]!, 'bin');
}

/**
 * A private PostgreSQL cluster in a temporary directory, on loopback, whose one role `keel` logs in
 * with a random password (scram-sha-256); run as Debian's `postgres` user when we are root, since
 * PostgreSQL refuses to run as root. Durability settings are off: it lives for one test run. The URL
 * names the `postgres` database; tests create a database of their own in it.
 */
export async function startPostgres(): Promise<{ url: string; stop: () => void }> {
  const bin = postgresBin();
  const dir = mkdtempSync(join(tmpdir(), 'keel-pg-'));
  const pass = randomBytes(12).toString('hex');
  writeFileSync(join(dir, 'password'), pass, { mode: 0o600 });
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const id = (flag: string) => run('id', [flag, 'postgres']);
    if (id('-u').status !== 0) throw new MachineError('the postgres user is missing (apt-get install postgresql creates it)');
    const [uid, gid] = [Number(id('-u').stdout), Number(id('-g').stdout)];
    chownSync(dir, uid, gid);
    chownSync(join(dir, 'password'), uid, gid);
  }
  const as = (cmd: string, args: string[]) => (asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args]) as [string, string[]];
  const data = join(dir, 'data');
  const init = run(...as(join(bin, 'initdb'), ['-D', data, '-U', 'keel', `--pwfile=${join(dir, 'password')}`, '--auth=scram-sha-256', '-E', 'UTF8', '--no-sync']));
  if (init.status !== 0) throw new MachineError(`initdb failed: ${init.stderr.trim().split('\n').pop()}`);
  const port = await freePort();
  const options = ['-h', '127.0.0.1', '-p', String(port), '-k', dir, '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=300'];
  const log = openSync(join(dir, 'postgres.log'), 'a');
  const child = spawn(...as(join(bin, 'postgres'), ['-D', data, ...options]), { stdio: ['ignore', log, log], detached: true });
  const stop = () => {
    run(...as(join(bin, 'pg_ctl'), ['stop', '-D', data, '-m', 'immediate', '-s']));
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 100; i++) {
    if (run(...as(join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-q'])).status === 0) {
      return { url: `postgres://keel:${pass}@127.0.0.1:${port}/postgres`, stop };
    }
    await Bun.sleep(100);
  }
  const why = readFileSync(join(dir, 'postgres.log'), 'utf8').trim().split('\n').pop();
  stop();
  throw new MachineError(`PostgreSQL did not start: ${why}`);
}

/** keeld for the workspaces (scripts/daemon.ts), a failed build said as the machine's error. */
function daemon(): void {
  try {
    buildDaemon();
  } catch (e) {
    throw new MachineError((e as Error).message);
  }
}

/** The private engine of `npm test`, shared by every test run on this machine (left running). */
export const TEST_ENGINE_DIR = '/tmp/keel-test-docker';

export interface PreparedMachine {
  env: Record<string, string>;
  engine: EngineChoice;
  stop(): void;
}

/**
 * What every test run on this machine shares: packages, the workspace daemon's binary and an engine.
 * `npm test` makes them once before its two lanes of `bun test` start side by side, so none races for them.
 */
export async function prepareTestEngine(): Promise<EngineChoice> {
  installMissing(TEST_APT_PACKAGES);
  daemon();
  return ensureEngine({ dir: TEST_ENGINE_DIR, dockerHost: process.env.DOCKER_HOST || undefined });
}

/** `npm test`: packages, an engine (DOCKER_HOST, or the shared private test engine), a NATS server with a password. */
export async function prepareTestMachine(): Promise<PreparedMachine> {
  const engine = await prepareTestEngine();
  const nats = await startNats();
  const postgres = await startPostgres().catch((e) => {
    nats.stop();
    throw e;
  });
  return {
    env: { DOCKER_HOST: engine.host, KEEL_TEST_NATS_URL: nats.url, KEEL_TEST_POSTGRES_URL: postgres.url },
    engine,
    stop: () => (nats.stop(), postgres.stop()),
  };
}

/** Where `npm run dev` keeps its private engine, and where `npm run engine:*` looks for it. */
export const devEngineDir = (dataDir: string) => resolve(dataDir, 'engine');

/** `npm run dev`: packages and an engine (DOCKER_HOST, the default socket, or a private one in <dataDir>/engine). */
export async function prepareDevMachine(dataDir: string): Promise<EngineChoice> {
  installMissing();
  daemon();
  return ensureEngine({ dir: devEngineDir(dataDir), dockerHost: process.env.DOCKER_HOST || undefined });
}
