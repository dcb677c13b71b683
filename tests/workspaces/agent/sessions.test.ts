// Agent sessions through HTTP with the fake provider: create, list, get, delete; the context schema;
// models and providers; ownership (another actor's session is absent and the provider hears nothing);
// usage per turn and per session; what the model is shown on each turn; the OpenAPI description.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { errorCode } from '../../helpers/workspaces';
import { FAKE_KEY } from '../../helpers/fake-openai';
import { createSession, send, startAgentRig, type AgentRig } from './agent-helpers';

let rig: AgentRig;

beforeAll(async () => {
  rig = await startAgentRig('agent-sessions', {}, { running: false });
}, 120_000);
afterAll(() => rig.close(), 60_000);

const create = (body: unknown, as?: string) => rig.api('/api/agent/sessions', { method: 'POST', json: body, as });

describe('create', () => {
  test('a session is created active with no messages, its context and zero usage', async () => {
    const context = { system: 'You are terse.', instructions: ['answer in English'], notes: { repo: 'none yet' } };
    const res = await create({ workspaceId: rig.ws, model: 'openai/echo', context });
    expect(res.status).toBe(201);
    const body = await res.json();
    expect(res.headers.get('location')).toBe(`/api/agent/sessions/${body.id}`);
    expect(body).toEqual({
      id: expect.stringMatching(/^ses_/),
      workspaceId: rig.ws,
      model: 'openai/echo',
      status: 'active',
      toolApproval: 'never',
      mcpServers: [],
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
      busy: false,
      lastEventId: 0,
      context,
      messages: [],
    });
  });

  test('context is optional and defaults to an empty object', async () => {
    const res = await create({ workspaceId: rig.ws, model: 'openai/echo' });
    expect(res.status).toBe(201);
    expect((await res.json()).context).toEqual({});
  });

  test.each([
    ['missing workspaceId', { model: 'openai/echo' }],
    ['missing model', { workspaceId: 'x' }],
    ['a model without provider', { workspaceId: 'x', model: 'gpt-4o' }],
    ['an unknown context field', { workspaceId: 'x', model: 'openai/echo', context: { temperature: 2 } }],
    ['a context system that is not text', { workspaceId: 'x', model: 'openai/echo', context: { system: 42 } }],
    ['too many instructions', { workspaceId: 'x', model: 'openai/echo', context: { instructions: Array(51).fill('x') } }],
    ['an unknown body field', { workspaceId: 'x', model: 'openai/echo', extra: true }],
    ['a context of false', { workspaceId: 'x', model: 'openai/echo', context: false }],
    ['a context of text', { workspaceId: 'x', model: 'openai/echo', context: 'be brief' }],
    ['a context of null', { workspaceId: 'x', model: 'openai/echo', context: null }],
    ['a context that is a list', { workspaceId: 'x', model: 'openai/echo', context: [] }],
    ['context notes of false', { workspaceId: 'x', model: 'openai/echo', context: { notes: false } }],
    ['MCP server headers that are text', { workspaceId: 'x', model: 'openai/echo', mcpServers: [{ name: 'calc', url: 'http://example.com/mcp', headers: 'x' }] }],
  ])('%s is 400 INVALID_REQUEST', async (_, body) => {
    const res = await create(body);
    expect(res.status).toBe(400);
    expect(await errorCode(res)).toBe('INVALID_REQUEST');
  });

  test('a context that is not an object is refused naming /context, never taken as an empty one', async () => {
    for (const context of [false, 0, 'x', []]) {
      const res = await create({ workspaceId: rig.ws, model: 'openai/echo', context });
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(body.error).toMatchObject({ code: 'INVALID_REQUEST', details: { errors: [{ in: 'body', property: '/context' }] } });
    }
  });

  test('a provider that is not configured is 400 INVALID_REQUEST naming the configured providers', async () => {
    const res = await create({ workspaceId: rig.ws, model: 'anthropic/claude-sonnet-4-5' });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.code).toBe('INVALID_REQUEST');
    expect(body.error.message).toContain('configured providers: openai');
    expect(body.error.details.configured).toEqual(['openai']);
  });

  test("another actor's workspace is 404 WORKSPACE_NOT_FOUND", async () => {
    const res = await create({ workspaceId: rig.ws, model: 'openai/echo' }, 'bob');
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe('WORKSPACE_NOT_FOUND');
    expect((await create({ workspaceId: 'ws_nope', model: 'openai/echo' })).status).toBe(404);
  });

  test('no token is 401', async () => {
    expect((await create({ workspaceId: rig.ws, model: 'openai/echo' }, null as unknown as string)).status).toBe(401);
  });
});

describe('list, get and delete', () => {
  test('the list has counts and usage but no messages; get has the history with timestamps', async () => {
    const s = await createSession(rig, 'echo');
    expect((await send(rig, s.id, 'one')).status).toBe(200);
    expect((await send(rig, s.id, 'two')).status).toBe(200);
    const list = (await (await rig.api('/api/agent/sessions')).json()).sessions as any[];
    const entry = list.find((e) => e.id === s.id);
    expect(entry).toMatchObject({ id: s.id, workspaceId: rig.ws, model: 'openai/echo', status: 'active', messageCount: 4, busy: false });
    expect(entry.messages).toBeUndefined();
    expect(entry.usage.totalTokens).toBeGreaterThan(0);

    const got = await (await rig.api(`/api/agent/sessions/${s.id}`)).json();
    expect(got.messages.map((m: any) => [m.role, m.content])).toEqual([
      ['user', 'one'],
      ['assistant', 'You said: one'],
      ['user', 'two'],
      ['assistant', 'You said: two'],
    ]);
    for (const m of got.messages) expect(m.timestamp).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);
    expect(got.messages[1]).toMatchObject({ finishReason: 'stop', toolCalls: [], usage: { promptTokens: expect.any(Number) } });
    expect(entry.usage).toEqual(got.usage);
  });

  test('?workspaceId= lists the sessions of one workspace', async () => {
    const s = await createSession(rig, 'echo');
    const mine = (await (await rig.api(`/api/agent/sessions?workspaceId=${rig.ws}`)).json()).sessions;
    expect(mine.map((e: any) => e.id)).toContain(s.id);
    expect(mine.every((e: any) => e.workspaceId === rig.ws)).toBe(true);
    expect((await (await rig.api('/api/agent/sessions?workspaceId=ws_other')).json()).sessions).toEqual([]);
  });

  test("the session's usage is the sum of its turns' usage", async () => {
    const s = await createSession(rig, 'echo');
    const a = await (await send(rig, s.id, 'first message')).json();
    const b = await (await send(rig, s.id, 'second')).json();
    const got = await (await rig.api(`/api/agent/sessions/${s.id}`)).json();
    for (const k of ['promptTokens', 'completionTokens', 'totalTokens'] as const) expect(got.usage[k]).toBe(a.usage[k] + b.usage[k]);
    expect(a.usage.totalTokens).toBe(a.usage.promptTokens + a.usage.completionTokens);
  });

  test('delete removes the session, its messages and its events', async () => {
    const s = await createSession(rig, 'echo');
    await send(rig, s.id, 'hello');
    const res = await rig.api(`/api/agent/sessions/${s.id}`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: s.id, deleted: true });
    expect((await rig.api(`/api/agent/sessions/${s.id}`)).status).toBe(404);
    expect((await rig.api(`/api/agent/sessions/${s.id}/events`)).status).toBe(404);
    expect((await rig.api(`/api/agent/sessions/${s.id}`, { method: 'DELETE' })).status).toBe(404);
  });

  test('an unknown session is 404 SESSION_NOT_FOUND', async () => {
    const res = await rig.api('/api/agent/sessions/ses_nope');
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe('SESSION_NOT_FOUND');
  });
});

describe('ownership', () => {
  test("another actor's session is 404 SESSION_NOT_FOUND everywhere and the provider hears nothing", async () => {
    const s = await createSession(rig, 'echo');
    const before = rig.fake.requests.length;
    const calls: [string, string, unknown?][] = [
      ['GET', `/api/agent/sessions/${s.id}`],
      ['POST', `/api/agent/sessions/${s.id}/messages`, { message: 'hi from bob' }],
      ['POST', `/api/agent/sessions/${s.id}/messages`, { message: 'hi from bob', stream: true }],
      ['GET', `/api/agent/sessions/${s.id}/events`],
      ['POST', `/api/agent/sessions/${s.id}/cancel`],
      ['DELETE', `/api/agent/sessions/${s.id}`],
    ];
    for (const [method, path, json] of calls) {
      const res = await rig.api(path, { method, json, as: 'bob' });
      expect(res.status).toBe(404);
      expect(await errorCode(res)).toBe('SESSION_NOT_FOUND');
    }
    const bobs = (await (await rig.api('/api/agent/sessions', { as: 'bob' })).json()).sessions;
    expect(bobs.find((e: any) => e.id === s.id)).toBeUndefined();
    expect(rig.fake.requests.length).toBe(before);
    // The owner's session is untouched.
    expect((await rig.api(`/api/agent/sessions/${s.id}`)).status).toBe(200);
  });

  test("an admin sees and acts on everyone's sessions", async () => {
    const s = await createSession(rig, 'echo');
    const list = (await (await rig.api('/api/agent/sessions', { as: 'admin' })).json()).sessions;
    expect(list.find((e: any) => e.id === s.id)).toBeDefined();
    const res = await send(rig, s.id, 'admin here', { as: 'admin' });
    expect(res.status).toBe(200);
  });
});

describe('what the model is shown', () => {
  test('the context is system text on every turn, with the history and the new message', async () => {
    const s = await createSession(rig, 'echo', { context: { system: 'Be brief.', instructions: ['never delete files'], notes: { repo: 'lives in /workspace/app' } } });
    await send(rig, s.id, 'first');
    await send(rig, s.id, 'second');
    const req = rig.fake.requests.at(-1)!;
    const system = String(req.messages[0]!.content);
    expect(req.messages[0]!.role).toBe('system');
    expect(system).toContain(rig.ws);
    expect(system).toContain('Be brief.');
    expect(system).toContain('- never delete files');
    expect(system).toContain('repo: lives in /workspace/app');
    expect(req.messages.slice(1).map((m) => [m.role, m.content])).toEqual([
      ['user', 'first'],
      ['assistant', 'You said: first'],
      ['user', 'second'],
    ]);
  });

  test('the provider gets the configured key and the model name, through Chat Completions with tools', async () => {
    const s = await createSession(rig, 'echo');
    await send(rig, s.id, 'hi');
    const req = rig.fake.requests.at(-1)!;
    expect(req.authorization).toBe(`Bearer ${FAKE_KEY}`);
    expect(req.model).toBe('echo');
    expect(req.tools.map((t) => t.function.name).sort()).toEqual(['list_directory', 'read_file', 'run_command', 'write_file']);
    const run = req.tools.find((t) => t.function.name === 'run_command')!.function.parameters;
    expect(run.properties.command.type).toBe('string');
    expect(run.required).toContain('command');
  });
});

test('everything after the first slash is the provider\'s model name', async () => {
  const s = await createSession(rig, 'meta-llama/Llama-3.1-8B-Instruct:q4');
  expect(s.model).toBe('openai/meta-llama/Llama-3.1-8B-Instruct:q4');
  await send(rig, s.id, 'hi');
  expect(rig.fake.requests.at(-1)!.model).toBe('meta-llama/Llama-3.1-8B-Instruct:q4');
});

test('the OpenAPI description has every agent route and its error responses', async () => {
  const doc = await (await fetch(rig.p.url('workspaces') + '/openapi.json')).json();
  const paths = doc.paths;
  expect(Object.keys(paths['/api/agent/sessions']).sort()).toEqual(['get', 'post']);
  expect(Object.keys(paths['/api/agent/sessions/{id}']).sort()).toEqual(['delete', 'get']);
  expect(paths['/api/agent/sessions/{id}/messages'].post.responses).toHaveProperty('409');
  expect(paths['/api/agent/sessions/{id}/messages'].post.responses).toHaveProperty('502');
  expect(paths['/api/agent/sessions/{id}/messages'].post.responses['200'].content).toHaveProperty('text/event-stream');
  expect(paths['/api/agent/sessions/{id}/events'].get.responses['200'].content).toHaveProperty('text/event-stream');
  expect(paths['/api/agent/sessions/{id}/cancel'].post.responses).toHaveProperty('404');
});
