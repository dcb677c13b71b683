// A Keel server in its own process for benchmarks (so its RSS is its own), started like the tests'
// (tests/helpers/process.ts), with a temp data dir and helpers to create a running `minimal` workspace.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintToken } from '../src/platform/auth/workspace-token';
import { BUN, startKeel } from '../tests/helpers/process';
import type { CreatedWorkspace, WorkspaceWithStats } from '../clients/typescript/src';

const SECRET = 'b'.repeat(64);
/** Benchmarks measure one actor's load (1,000 followers, 50 workspaces): the per-actor limits are lifted. */
const UNLIMITED = {
  APP_RATE_LIMIT_AUTHENTICATED: '1000000',
  APP_QUOTA_WORKSPACES: '1000000',
  APP_QUOTA_RUNNING: '1000000',
  APP_QUOTA_EXECS: '1000000',
  APP_QUOTA_STREAMS: '1000000',
  APP_QUOTA_SESSIONS: '1000000',
  APP_AGENT_DAILY_TOKENS: '1000000000000',
};

export interface KeelProcess {
  url: string;
  /** Every service's URL (the workspaces one is `url`). */
  urls: Record<string, string>;
  dataDir: string;
  /** APP_API_SECRET of the process: signs its workspace-API tokens. */
  secret: string;
  pid: number;
  token(sub?: string, admin?: boolean): string;
  api(path: string, init?: RequestInit & { json?: unknown; as?: string }): Promise<Response>;
  /** Resident set size of the server process, in bytes. */
  rss(): number;
  /** Creates a workspace (`minimal` unless told) and waits until it runs; returns its id and container id. */
  workspace(name: string, template?: string): Promise<{ id: string; containerId: string }>;
  stop(): Promise<void>;
}

export async function startKeelProcess(env: Record<string, string> = {}, services: string[] = ['workspaces']): Promise<KeelProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-'));
  const keel = await startKeel(
    [BUN, 'src/main.ts'],
    { APP_DATA_DIR: dataDir, APP_API_SECRET: SECRET, APP_QUIET_TOKEN: '1', ...UNLIMITED, ...env },
    services,
  );
  const url = keel.urls.workspaces!;
  const proc = keel.proc;

  const token = (sub = 'bench', admin = false) => mintToken(SECRET, { sub, ttlSeconds: 3600, role: admin ? 'admin' : undefined });
  const api: KeelProcess['api'] = (path, init = {}) => {
    const { json, as, ...rest } = init;
    const headers = new Headers(rest.headers);
    headers.set('authorization', `Bearer ${token(as ?? 'bench', as === 'admin')}`);
    if (json !== undefined) headers.set('content-type', 'application/json');
    return fetch(url + path, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body });
  };

  const created: string[] = [];
  return {
    url,
    urls: keel.urls,
    dataDir,
    secret: SECRET,
    pid: proc.pid,
    token,
    api,
    rss() {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'));
      return m ? Number(m[1]) * 1024 : NaN;
    },
    async workspace(name, template = 'minimal') {
      const res = await api('/api/workspaces', { method: 'POST', json: { name, template } });
      if (res.status !== 201) throw new Error(`create failed: ${res.status} ${await res.text()}`);
      const { id } = (await res.json()) as CreatedWorkspace;
      created.push(id);
      const until = Date.now() + 120_000;
      for (;;) {
        const w = (await (await api(`/api/workspaces/${id}`)).json()) as WorkspaceWithStats;
        if (w.status === 'running' && w.containerId) return { id, containerId: w.containerId };
        if (w.status === 'failed' || Date.now() > until) throw new Error(`workspace did not run: ${w.status}`);
        await Bun.sleep(200);
      }
    },
    async stop() {
      for (const id of created) await api(`/api/workspaces/${id}?volumes=true`, { method: 'DELETE' }).catch(() => undefined);
      await keel.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
