// The machine preparation both `npm test` and `npm run dev` use (scripts/machine.ts), without
// reinstalling apt packages: an engine that answers is reused; where none answers a private dockerd
// is started in its directory (vfs, iptables on), reused by the next run, and stopped on request.
// The dockerd started here runs in a network namespace of its own: a second dockerd with iptables
// on in the host's namespace would reset the chains of the shared test engine.
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import {
  engineAnswers,
  ensureEngine,
  missingPackages,
  privateEngineLayout,
  runningDockerds,
  startNats,
  stopPrivateEngine,
} from '../../scripts/machine';
import { requireTestEnv } from '../helpers/platform';
import { createEngine } from '../../src/services/workspaces/engine/docker';
import { buildMinimalImage } from '../../src/services/workspaces/images/minimal-image';

const shared = requireTestEnv('DOCKER_HOST');
const dir = mkdtempSync(join(tmpdir(), 'keel-eng-'));
const dead = `unix://${dir}/nobody-listens.sock`;

afterAll(async () => {
  await stopPrivateEngine(dir).catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

describe('finding an engine', () => {
  test('the packages the two commands install are all present on this machine', () => {
    expect(missingPackages()).toEqual([]);
  });

  test('an engine that answers is used as it is, and nothing is started', async () => {
    expect(await engineAnswers(shared)).toBe(true);
    const e = await ensureEngine({ dir, dockerHost: shared });
    expect(e).toEqual({ host: shared, origin: 'DOCKER_HOST' });
    expect(await engineAnswers(privateEngineLayout(dir).host, 500)).toBe(false);
  });

  test('a socket nobody listens on does not answer, quickly', async () => {
    expect(await engineAnswers(dead, 500)).toBe(false);
    expect(await engineAnswers('tcp://127.0.0.1:1', 500)).toBe(false);
  });

  test('a dockerd already running on this machine is found and reused rather than a second one started', async () => {
    const found = runningDockerds();
    expect(found.map((d) => d.host)).toContain(shared);
    const e = await ensureEngine({ dir, dockerHost: dead });
    expect(e.host).toBe((await Promise.all(found.map(async (d) => ((await engineAnswers(d.host!)) ? d.host : null)))).find(Boolean)!);
    expect(e.origin).toContain('already running on this machine');
    expect(e.startedPid).toBeUndefined();
  });

  test('a long data directory keeps the engine data there and moves its sockets to /run', () => {
    const l = privateEngineLayout('/srv/' + 'a-very-long-directory-name/'.repeat(4) + 'engine');
    expect(l.dataRoot.startsWith('/srv/')).toBe(true);
    expect(l.socket).toMatch(/^\/run\/keel-engine-[0-9a-f]{12}\/docker\.sock$/);
    expect(privateEngineLayout('/tmp/d/engine').host).toBe('unix:///tmp/d/engine/docker.sock');
  });
});

describe('a private dockerd', () => {
  let started: Awaited<ReturnType<typeof ensureEngine>>;

  test('is started in its directory when no engine answers, with vfs storage and iptables on', async () => {
    started = await ensureEngine({ dir, dockerHost: dead, isolatedNetwork: true });
    const l = privateEngineLayout(dir);
    expect(started.host).toBe(l.host);
    expect(started.startedPid).toBeGreaterThan(0);
    expect(started.origin).toContain(`private dockerd started in ${dir}`);
    const info = Bun.spawnSync(['docker', 'info', '--format', '{{.Driver}} {{.DockerRootDir}}'], { env: { ...process.env, DOCKER_HOST: started.host }, stdout: 'pipe' });
    expect(info.stdout.toString().trim()).toBe(`vfs ${l.dataRoot}`);
    // iptables on (Docker's default): the engine made its chains in its own network namespace.
    const chains = Bun.spawnSync(['nsenter', '-t', String(started.startedPid), '-n', 'iptables', '-S', 'DOCKER-ISOLATION-STAGE-1'], { stdout: 'pipe', stderr: 'pipe' });
    expect(chains.stderr.toString()).toBe('');
    expect(chains.stdout.toString()).toContain('-N DOCKER-ISOLATION-STAGE-1');
  }, 90_000);

  test('runs a container', async () => {
    const engine = createEngine(started.host);
    await buildMinimalImage(engine, 'keel/minimal:first-run-test', '/bin/busybox');
    const r = Bun.spawnSync(['docker', 'run', '--rm', 'keel/minimal:first-run-test', 'echo', 'hello from the private engine'], { env: { ...process.env, DOCKER_HOST: started.host }, stdout: 'pipe', stderr: 'pipe' });
    expect(r.stderr.toString()).toBe('');
    expect(r.stdout.toString()).toBe('hello from the private engine\n');
  }, 60_000);

  test('is reused by the next run while it answers', async () => {
    const again = await ensureEngine({ dir, dockerHost: dead, isolatedNetwork: true });
    expect(again.host).toBe(started.host);
    expect(again.startedPid).toBeUndefined();
    expect(again.origin).toBe(`private dockerd kept in ${dir}, reused`);
  });

  test('stops on request, and stopping one that does not run says so', async () => {
    expect(await stopPrivateEngine(dir)).toBe(true);
    expect(await engineAnswers(started.host, 500)).toBe(false);
    expect(await stopPrivateEngine(dir)).toBe(false);
  }, 40_000);
});

describe('the test NATS server', () => {
  test('accepts its user and password, and refuses a client without them', async () => {
    const nats = await startNats();
    try {
      const u = new URL(nats.url);
      expect(u.username).toBe('keel');
      expect(u.password.length).toBeGreaterThan(16);
      const ok = await connect({ servers: `${u.hostname}:${u.port}`, user: u.username, pass: u.password });
      await ok.close();
      const refused = await connect({ servers: `${u.hostname}:${u.port}`, maxReconnectAttempts: 0, reconnect: false }).then(
        async (c) => (await c.close(), null),
        (e: Error) => e,
      );
      expect(String(refused)).toMatch(/AUTHORIZATION_VIOLATION|Authorization/i);
    } finally {
      nats.stop();
    }
  });
});

describe('the compiled binary', () => {
  test('installs nothing: no file under src/ imports scripts/ or runs apt-get', async () => {
    const offenders: string[] = [];
    for await (const f of new Bun.Glob('src/**/*.ts').scan({ cwd: join(import.meta.dir, '../..') })) {
      const text = await Bun.file(join(import.meta.dir, '../..', f)).text();
      if (/from ['"][./]*scripts\//.test(text) || /apt-get|dpkg/.test(text)) offenders.push(f);
    }
    expect(offenders).toEqual([]);
  });
});
