// Workspace-API calls the workspace tests share: a workspace's view, waiting for a status, a
// running `minimal` workspace, error codes, the admin's stream counters, and the clean-up after.
import { expect } from 'bun:test';
import { keelInstance, removeInstanceObjects, waitFor } from './docker';
import type { TestPlatform } from './platform';

/** Stops the platform, then removes every container, volume and network its Keel made on the engine, and its firewall rules. */
export async function closeAndClean(p: TestPlatform | undefined): Promise<void> {
  if (!p) return;
  const instance = keelInstance(p.dataDir); // read first: close removes the data dir
  await p.close();
  await removeInstanceObjects(instance);
}

/** GET /api/workspaces/{id} as `as`: the HTTP status and the body. */
export async function getWorkspace(p: Pick<TestPlatform, 'api'>, id: string, as = 'alice'): Promise<{ status: number; body: any }> {
  const res = await p.api('workspaces', `/api/workspaces/${id}`, { as });
  return { status: res.status, body: await res.json() };
}

/** Polls until template `id` is built at `version` (a failed build throws its reason); its view then. */
export function templateBuilt(p: Pick<TestPlatform, 'api'>, id: string, opts: { version?: number; as?: string } = {}): Promise<any> {
  const version = opts.version ?? 1;
  return waitFor(`template ${id} at version ${version}`, async () => {
    const t = (await (await p.api('workspaces', `/api/templates/${id}`, { as: opts.as ?? 'alice' })).json()) as any;
    if (t.status === 'failed') throw new Error(`build failed: ${t.reason}`);
    return t.status === 'ready' && t.version === version ? t : null;
  }, 120_000);
}

/** Polls until the workspace has `status`; its view then. */
export function waitStatus(p: Pick<TestPlatform, 'api'>, id: string, status: string, opts: { as?: string; timeoutMs?: number } = {}): Promise<any> {
  return waitFor(
    `workspace ${id} to be ${status}`,
    async () => {
      const r = await getWorkspace(p, id, opts.as);
      return r.status === 200 && r.body.status === status ? r.body : null;
    },
    opts.timeoutMs ?? 30_000,
  );
}

/** Creates a `minimal` workspace (`body` adds or overrides fields) and waits until it runs; its view then. */
export async function createRunning(
  p: Pick<TestPlatform, 'api'>,
  name: string,
  opts: { as?: string; body?: Record<string, unknown>; timeoutMs?: number } = {},
): Promise<any> {
  const res = await p.api('workspaces', '/api/workspaces', { method: 'POST', json: { name, template: 'minimal', ...opts.body }, as: opts.as });
  expect(res.status).toBe(201);
  const { id } = (await res.json()) as { id: string };
  return waitStatus(p, id, 'running', opts);
}

/** The `error.code` of an answer in the workspace envelope. */
export async function errorCode(res: Response): Promise<string> {
  return ((await res.json()) as { error: { code: string } }).error.code;
}

export interface StreamCounters {
  engineStreams: number;
  followers: number;
  execs: number;
  workspaces: { workspaceId: string; followers: number }[];
}

/** GET /api/system/streams as an admin: what Keel holds open for logs and exec. */
export async function streamCounters(p: TestPlatform): Promise<StreamCounters> {
  const res = await p.api('workspaces', '/api/system/streams', { as: 'admin' });
  expect(res.status).toBe(200);
  return (await res.json()) as StreamCounters;
}
