// Makes this machine ready for the tests and benchmarks: installs what is missing (apt: docker.io,
// ffmpeg, nats-server, busybox-static, git), starts a private dockerd when DOCKER_HOST does not
// answer, starts nats-server on loopback, and fails with the reason when any of it cannot be done.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import { createServer } from 'node:net';

const APT_PACKAGES: Record<string, string> = {
  dockerd: 'docker.io',
  docker: 'docker.io',
  ffprobe: 'ffmpeg',
  ffmpeg: 'ffmpeg',
  'nats-server': 'nats-server',
  git: 'git',
};

function fail(reason: string): never {
  process.stderr.write(`keel: cannot prepare the test machine: ${reason}\n`);
  process.exit(1);
}

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
const run = (cmd: string, args: string[], env?: Record<string, string>) =>
  spawnSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env }, encoding: 'utf8' });

function installMissing() {
  const missing = new Set<string>();
  for (const [cmd, pkg] of Object.entries(APT_PACKAGES)) if (!has(cmd)) missing.add(pkg);
  // The minimal workspace image needs a statically linked busybox.
  if (!/install ok installed/.test(run('dpkg-query', ['-W', '-f=${Status}', 'busybox-static']).stdout ?? '')) missing.add('busybox-static');
  if (missing.size === 0) return;
  if (process.getuid?.() !== 0) fail(`missing ${[...missing].join(', ')} and not root to apt-get install them`);
  process.stderr.write(`keel: installing ${[...missing].join(' ')} with apt-get\n`);
  const env = { DEBIAN_FRONTEND: 'noninteractive' };
  const upd = run('apt-get', ['update', '-qq'], env);
  if (upd.status !== 0) fail(`apt-get update failed: ${upd.stderr.trim().split('\n').pop()}`);
  const inst = run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], env);
  if (inst.status !== 0) fail(`apt-get install ${[...missing].join(' ')} failed: ${inst.stderr.trim().split('\n').pop()}`);
}

function dockerAnswers(host: string | undefined): boolean {
  const r = run('docker', ['version', '--format', '{{.Server.Version}}'], host ? { DOCKER_HOST: host } : {});
  return r.status === 0 && r.stdout.trim().length > 0;
}

async function ensureDocker(): Promise<{ host: string; stop?: () => void }> {
  const given = process.env.DOCKER_HOST;
  if (dockerAnswers(given)) return { host: given ?? 'unix:///var/run/docker.sock' };
  const dir = '/tmp/keel-test-docker';
  const host = `unix://${dir}/docker.sock`;
  if (dockerAnswers(host)) return { host }; // left running by an earlier run: reuse it
  mkdirSync(dir, { recursive: true });
  process.stderr.write('keel: starting a private dockerd\n');
  const log = openSync(`${dir}/dockerd.log`, 'a');
  const child = spawn(
    'dockerd',
    ['--iptables=false', '--storage-driver=vfs', `--host=${host}`, `--data-root=${dir}/root`, `--exec-root=${dir}/exec`, `--pidfile=${dir}/dockerd.pid`],
    { stdio: ['ignore', log, log], detached: true },
  );
  child.unref();
  for (let i = 0; i < 60; i++) {
    if (dockerAnswers(host)) return { host, stop: () => child.kill('SIGTERM') };
    if (child.exitCode !== null) break;
    await Bun.sleep(500);
  }
  fail(`dockerd did not answer on ${host}; see ${dir}/dockerd.log`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function startNats(): Promise<{ url: string; stop: () => void }> {
  const port = await freePort();
  const child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  const url = `nats://127.0.0.1:${port}`;
  for (let i = 0; i < 50; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const sock = Bun.connect({ hostname: '127.0.0.1', port, socket: { open: (s) => (s.end(), resolve(true)), data() {}, error: () => resolve(false) } }).catch(() => resolve(false));
      void sock;
    });
    if (ok) return { url, stop: () => child.kill('SIGTERM') };
    await Bun.sleep(100);
  }
  child.kill('SIGKILL');
  fail('nats-server did not start');
}

export interface PreparedMachine {
  env: Record<string, string>;
  stop(): void;
}

export async function prepareMachine(): Promise<PreparedMachine> {
  installMissing();
  const docker = await ensureDocker();
  const nats = await startNats();
  return {
    env: { DOCKER_HOST: docker.host, KEEL_TEST_NATS_URL: nats.url },
    stop() {
      nats.stop();
      docker.stop?.();
    },
  };
}
