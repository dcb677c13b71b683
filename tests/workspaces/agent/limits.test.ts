// The three limits of a turn, each with a small value set by its variable: model calls per message,
// tokens per session and wall time per turn. A limit ends the turn with its finishReason, never an error.
// The same platform also has Anthropic configured at an address where nothing listens.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { waitFor } from '../../helpers/docker';
import { createSession, deltas, readAll, send, startAgentRig, type AgentRig } from './agent-helpers';

let rig: AgentRig;

/** A loopback port nothing listens on (bound, then released). */
function closedPort(): number {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

beforeAll(async () => {
  rig = await startAgentRig('agent-limits', {
    APP_AGENT_MAX_STEPS: '3',
    APP_AGENT_MAX_SESSION_TOKENS: '1500',
    APP_AGENT_TURN_TIMEOUT_MS: '1500',
    ANTHROPIC_API_KEY: 'sk-ant-test-secret-value-123456',
    ANTHROPIC_BASE_URL: `http://127.0.0.1:${closedPort()}/v1`,
  });
}, 120_000);
afterAll(() => rig.close(), 60_000);

test('a model that keeps calling tools stops after APP_AGENT_MAX_STEPS calls with step-limit', async () => {
  const s = await createSession(rig, 'loop');
  const before = rig.fake.requests.length;
  const res = await send(rig, s.id, 'go');
  expect(res.status).toBe(200);
  const r = await res.json();
  expect(r.finishReason).toBe('step-limit');
  expect(rig.fake.requests.length - before).toBe(3);
  expect(r.toolCalls).toHaveLength(3);
  expect(r.toolCalls.every((c: any) => c.output.stdout === 'again\n')).toBe(true);
});

test('a turn that reaches the session token budget ends with token-limit, and the next one at once', async () => {
  const s = await createSession(rig, 'tools');
  const call = { tools: [{ name: 'run_command', input: { command: 'true' } }], usage: { prompt: 600, completion: 400 } };
  rig.fake.queue(call, call);
  const before = rig.fake.requests.length;
  const r = await (await send(rig, s.id, 'go')).json();
  expect(r.finishReason).toBe('token-limit');
  expect(r.usage).toEqual({ promptTokens: 1200, completionTokens: 800, totalTokens: 2000 });
  expect(rig.fake.requests.length - before).toBe(2);

  // The budget is spent: the next message ends at once, and the provider is not called.
  const next = await send(rig, s.id, 'more', { stream: true });
  expect(next.status).toBe(200);
  const evs = await readAll(next);
  expect(evs).toHaveLength(1);
  expect(evs[0]).toMatchObject({ event: 'done', data: { finishReason: 'token-limit', content: '', usage: { totalTokens: 0 } } });
  expect(rig.fake.requests.length - before).toBe(2);
  const session = await (await rig.api(`/api/agent/sessions/${s.id}`)).json();
  expect(session.usage.totalTokens).toBe(2000);
});

test('a turn that outlives APP_AGENT_TURN_TIMEOUT_MS ends with time-limit, its content kept and the provider call aborted', async () => {
  const s = await createSession(rig, 'slow');
  const aborts = rig.fake.aborts;
  const evs = await readAll(await send(rig, s.id, 'go', { stream: true }));
  const done = evs.at(-1)!;
  expect(done).toMatchObject({ event: 'done', data: { finishReason: 'time-limit' } });
  expect(done.data.content).toBe(deltas(evs));
  await waitFor('the provider to see the abort', () => rig.fake.aborts > aborts, 10_000, 20);
});

test('a provider that cannot be reached is 502 UPSTREAM_ERROR naming it, and the key stays secret', async () => {
  const res = await rig.api('/api/agent/sessions', { method: 'POST', json: { workspaceId: rig.ws, model: 'anthropic/claude-sonnet-4-5' } });
  expect(res.status).toBe(201);
  const s = await res.json();
  const reply = await send(rig, s.id, 'hi');
  expect(reply.status).toBe(502);
  const text = await reply.text();
  expect(text).not.toContain('sk-ant-test-secret');
  const body = JSON.parse(text);
  expect(body.error.code).toBe('UPSTREAM_ERROR');
  expect(body.error.details.provider).toBe('anthropic');
});
