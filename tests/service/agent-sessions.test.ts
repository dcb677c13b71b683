// Agent sessions on a temp SQLite file, the memory bus and engine, through app.handle, with the fake
// OpenAI provider of tests/helpers/fake-openai.ts: create, list, get, delete and a turn's messages and
// usage, in about a second. Tools that run in a workspace need the real engine: tests/workspaces/agent.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { FAKE_KEY, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { startServiceApp, type ServiceApp } from '../helpers/service-app';

let s: ServiceApp;
let fake: FakeOpenAI;
let ws: string;

beforeAll(async () => {
  fake = startFakeOpenAI();
  s = await startServiceApp('workspaces', { env: { OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: FAKE_KEY, APP_AGENT_PROVIDER_RETRIES: '0' } });
  const res = await s.api('/api/workspaces', { method: 'POST', json: { name: 'agent', template: 'minimal' } });
  expect(res.status).toBe(201);
  ws = ((await res.json()) as any).id;
});
afterAll(async () => {
  await s.close();
  fake.close();
});

const create = (body: unknown, as?: string | null) => s.api('/api/agent/sessions', { method: 'POST', as, json: body });
const send = (id: string, message: string) => s.api(`/api/agent/sessions/${id}/messages`, { method: 'POST', json: { message } });

describe('creating a session', () => {
  test('a session is created active with no messages, its context and zero usage', async () => {
    const context = { system: 'You are terse.' };
    const res = await create({ workspaceId: ws, model: 'openai/echo', context });
    expect(res.status).toBe(201);
    const body = (await res.json()) as any;
    expect(res.headers.get('location')).toBe(`/api/agent/sessions/${body.id}`);
    expect(body).toMatchObject({ workspaceId: ws, model: 'openai/echo', status: 'active', busy: false, context, messages: [], usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } });
  });

  test('a context that is not an object is 400 INVALID_REQUEST naming /context', async () => {
    const res = await create({ workspaceId: ws, model: 'openai/echo', context: 'just-a-string' });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(JSON.parse(text).error.code).toBe('INVALID_REQUEST');
    expect(text).toContain('/context');
    expect(text).not.toContain('just-a-string');
  });

  test("another actor's workspace is 404 WORKSPACE_NOT_FOUND; no token is 401", async () => {
    const res = await create({ workspaceId: ws, model: 'openai/echo' }, 'bob');
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.code).toBe('WORKSPACE_NOT_FOUND');
    expect((await create({ workspaceId: ws, model: 'openai/echo' }, null)).status).toBe(401);
  });
});

describe('turns, list and delete', () => {
  test("a turn answers through the provider; get has the history and the usage is the sum of the turns'", async () => {
    const session = (await (await create({ workspaceId: ws, model: 'openai/echo' })).json()) as any;
    const a = (await (await send(session.id, 'one')).json()) as any;
    const b = (await (await send(session.id, 'two')).json()) as any;
    const got = (await (await s.api(`/api/agent/sessions/${session.id}`)).json()) as any;
    expect(got.messages.map((m: any) => [m.role, m.content])).toEqual([
      ['user', 'one'],
      ['assistant', 'You said: one'],
      ['user', 'two'],
      ['assistant', 'You said: two'],
    ]);
    expect(got.usage.totalTokens).toBe(a.usage.totalTokens + b.usage.totalTokens);
    const entry = ((await (await s.api(`/api/agent/sessions?workspaceId=${ws}`)).json()) as any).sessions.find((e: any) => e.id === session.id);
    expect(entry).toMatchObject({ messageCount: 4, usage: got.usage });
    expect(entry.messages).toBeUndefined();
  });

  test('delete removes the session; it is 404 afterwards', async () => {
    const session = (await (await create({ workspaceId: ws, model: 'openai/echo' })).json()) as any;
    expect((await s.api(`/api/agent/sessions/${session.id}`, { method: 'DELETE' })).status).toBe(200);
    const gone = await s.api(`/api/agent/sessions/${session.id}`);
    expect(gone.status).toBe(404);
  });
});
