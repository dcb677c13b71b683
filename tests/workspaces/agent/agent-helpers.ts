// What the agent tests share: a platform wired to the fake provider, one `minimal` workspace, and
// small calls (create a session, send a message, read a stream to its end).
import { expect } from 'bun:test';
import { FAKE_KEY, startFakeOpenAI, type FakeOpenAI } from '../../helpers/fake-openai';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { sseReader, type SseFrame } from '../../helpers/sse';
import { closeAndClean, createRunning } from '../../helpers/workspaces';

export interface AgentRig {
  p: TestPlatform;
  fake: FakeOpenAI;
  /** A `minimal` workspace of alice (running, unless the rig was started with `running: false`). */
  ws: string;
  api(path: string, init?: Parameters<TestPlatform['api']>[2]): Promise<Response>;
  close(): Promise<void>;
}

/**
 * `running: false` for tests whose model never calls a tool: the workspace need only exist (sessions
 * bind to it), so they do not wait for its container.
 */
export async function startAgentRig(name: string, env: Record<string, string> = {}, opts: { running?: boolean; slowMs?: number } = {}): Promise<AgentRig> {
  const fake = startFakeOpenAI({ slowMs: opts.slowMs });
  const p = await startTestPlatform({
    services: ['workspaces'],
    env: { OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: FAKE_KEY, APP_AGENT_PROVIDER_RETRIES: '0', ...env },
  });
  let ws: string;
  if (opts.running === false) {
    const res = await p.api('workspaces', '/api/workspaces', { method: 'POST', json: { name, template: 'minimal' } });
    expect(res.status).toBe(201);
    ws = ((await res.json()) as { id: string }).id;
  } else ws = (await createRunning(p, name, { timeoutMs: 90_000 })).id;
  return {
    p,
    fake,
    ws,
    api: (path, init) => p.api('workspaces', path, init),
    async close() {
      await closeAndClean(p);
      fake.close();
    },
  };
}

export async function createSession(rig: AgentRig, model: string, opts: { as?: string; context?: unknown; workspaceId?: string } = {}): Promise<any> {
  const res = await rig.api('/api/agent/sessions', {
    method: 'POST',
    as: opts.as,
    json: { workspaceId: opts.workspaceId ?? rig.ws, model: `openai/${model}`, ...(opts.context !== undefined ? { context: opts.context } : {}) },
  });
  expect(res.status).toBe(201);
  return res.json();
}

export const send = (rig: AgentRig, id: string, message: string, opts: { stream?: boolean; as?: string } = {}) =>
  rig.api(`/api/agent/sessions/${id}/messages`, { method: 'POST', as: opts.as, json: { message, ...(opts.stream ? { stream: true } : {}) } });

/** Every event of a stream until it ends (comments skipped), with data parsed. */
export async function readAll(res: Response, timeoutMs = 30_000): Promise<{ id: number; event: string; data: any }[]> {
  expect(res.headers.get('content-type')).toContain('text/event-stream');
  const frames = await sseReader(res).collect(() => false, timeoutMs);
  return frames.map(parse);
}

export const parse = (f: SseFrame) => ({ id: Number(f.id), event: f.event ?? 'message', data: JSON.parse(f.data!) });

export const deltas = (events: { event: string; data: any }[]) =>
  events
    .filter((e) => e.event === 'delta')
    .map((e) => e.data.content)
    .join('');
