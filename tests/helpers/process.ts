// Runs Keel as a separate process (source or compiled binary) and reads the service URLs it logs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Subprocess } from 'bun';
import { mintToken } from '../../src/platform/auth/workspace-token';
import { keelInstance, removeInstanceObjects } from './docker';
import { freePortsEnv, TEST_SECRET } from './platform';

export const ROOT = join(import.meta.dir, '..', '..');
export const BUN = process.execPath;

export interface KeelProcess {
  proc: Subprocess<'ignore', 'pipe', 'pipe'>;
  urls: Record<string, string>;
  stdout: () => string;
  stderr: () => string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number>;
}


/** Starts `cmd` and waits until every service in APP_SERVICES has logged its URL. */
export async function startKeel(cmd: string[], env: Record<string, string>, services: string[]): Promise<KeelProcess> {
  const dataDir = env.APP_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'keel-proc-'));
  const proc = Bun.spawn(cmd, {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', APP_LOG_LEVEL: 'info', APP_API_SECRET: TEST_SECRET, APP_DATA_DIR: dataDir, APP_SERVICES: services.join(','), ...freePortsEnv(), ...env },
    stdout: 'pipe',
    stderr: 'pipe',
    stdin: 'ignore',
  });
  let out = '';
  let err = '';
  const urls: Record<string, string> = {};
  const pump = async (stream: ReadableStream<Uint8Array>, onText: (t: string) => void) => {
    const dec = new TextDecoder();
    for await (const chunk of stream) onText(dec.decode(chunk, { stream: true }));
  };
  void pump(proc.stdout, (t) => (out += t));
  void pump(proc.stderr, (t) => {
    err += t;
    for (const m of t.matchAll(/"msg":"service listening".*?"service":"(\w+)","url":"([^"]+)"/g)) urls[m[1]!] = m[2]!;
  });
  const deadline = Date.now() + 30_000;
  while (services.some((s) => !urls[s])) {
    if (proc.exitCode !== null) throw new Error(`keel exited with ${proc.exitCode}: ${err.slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`keel did not start in time: ${err.slice(-2000)}`);
    await Bun.sleep(50);
  }
  return {
    proc,
    urls,
    stdout: () => out,
    stderr: () => err,
    async stop() {
      proc.kill('SIGTERM');
      return await proc.exited;
    },
  };
}

/**
 * The workspaces service in a Keel process of its own, on a data dir of its own, for the tests that
 * kill it (SIGKILL: a crash) and start it again on the same data and settings. Calls are alice's.
 */
export function killableWorkspaces(name: string, env: Record<string, string>) {
  const dataDir = mkdtempSync(join(tmpdir(), `keel-${name}-`));
  const headers = { authorization: `Bearer ${mintToken(TEST_SECRET, { sub: 'alice', ttlSeconds: 900 })}`, 'content-type': 'application/json' };
  let keel: KeelProcess | undefined;
  let instance = '';
  const url = (path: string) => {
    if (!keel) throw new Error('Keel is not running');
    return keel.urls.workspaces + path;
  };
  const self = {
    dataDir,
    headers,
    /** The engine objects' instance label (known once Keel has started). */
    get instance() {
      return instance;
    },
    async start() {
      keel = await startKeel([BUN, 'src/main.ts'], { ...env, APP_DATA_DIR: dataDir }, ['workspaces']);
      instance = keelInstance(dataDir);
    },
    async kill(signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL') {
      keel?.proc.kill(signal);
      await keel?.proc.exited;
      keel = undefined;
    },
    async call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
      const res = await fetch(url(path), { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: res.status, body: await res.json() };
    },
    /** A request sent and not waited for: the one a kill cuts. */
    send(method: string, path: string, body?: unknown) {
      void fetch(url(path), { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }).catch(() => {});
    },
    /** Kills Keel, then removes its engine objects and its data dir. */
    async cleanup() {
      await self.kill();
      if (instance) await removeInstanceObjects(instance);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return self;
}
