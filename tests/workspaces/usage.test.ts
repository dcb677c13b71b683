// GET /api/usage: what an actor spent, read through HTTP after real work: agent turns' tokens by model
// (the fake OpenAI-compatible provider), the wall time of commands run in a real workspace (exec and
// the agent's run_command), and the minutes its workspace ran, which stop growing once it is stopped.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { waitStatus } from '../helpers/workspaces';
import { createSession, send, startAgentRig, type AgentRig } from './agent/agent-helpers';

let rig: AgentRig;

beforeAll(async () => {
  rig = await startAgentRig('usage');
}, 120_000);
afterAll(() => rig.close(), 60_000);

const usage = async (query = '', as?: string) => {
  const res = await rig.api(`/api/usage${query}`, { as });
  expect(res.status).toBe(200);
  return res.json();
};

test('an actor that did nothing has zero usage for the current UTC day', async () => {
  const u = await usage('', 'nobody');
  const day = new Date().toISOString().slice(0, 10);
  expect(u).toEqual({ actor: 'nobody', from: `${day}T00:00:00.000Z`, to: expect.stringMatching(/T00:00:00\.000Z$/), tokens: { byModel: {}, total: 0 }, execSeconds: 0, runningMinutes: 0 });
});

test('tokens by model, command seconds and running minutes add up after real work', async () => {
  const before = await usage();
  const exec = await rig.api(`/api/workspaces/${rig.ws}/exec`, { method: 'POST', json: { command: 'sleep 1.2' } });
  expect(exec.status).toBe(200);
  const big = await createSession(rig, 'big');
  expect((await send(rig, big.id, 'hello')).status).toBe(200);
  const shell = await createSession(rig, 'shell');
  const reply = await (await send(rig, shell.id, 'sleep 1')).json();
  expect(reply.toolCalls[0].output.exitCode).toBe(0);

  const u = await usage();
  expect(u.actor).toBe('alice');
  expect(u.tokens.byModel['openai/big']).toEqual({ promptTokens: 600, completionTokens: 400, totalTokens: 1000 });
  expect(u.tokens.byModel['openai/shell']).toEqual({ promptTokens: reply.usage.promptTokens, completionTokens: reply.usage.completionTokens, totalTokens: reply.usage.totalTokens });
  expect(u.tokens.total).toBe(before.tokens.total + 1000 + reply.usage.totalTokens);
  // The exec and the agent's command, each at least its sleep (generous bounds: a loaded machine).
  expect(u.execSeconds - before.execSeconds).toBeGreaterThanOrEqual(2.2);
  expect(u.execSeconds - before.execSeconds).toBeLessThan(60);
  expect(u.runningMinutes).toBeGreaterThan(0);
  expect(u.runningMinutes).toBeGreaterThanOrEqual(before.runningMinutes);
  // Nothing of it falls in a range long past.
  expect(await usage('?from=2020-01-01&to=2020-01-31')).toMatchObject({ from: '2020-01-01T00:00:00.000Z', to: '2020-02-01T00:00:00.000Z', tokens: { total: 0 }, execSeconds: 0, runningMinutes: 0 });
}, 60_000);

test("only admins read another actor's usage", async () => {
  const denied = await rig.api('/api/usage?actor=alice', { as: 'mallory' });
  expect(denied.status).toBe(403);
  expect((await denied.json()).error.code).toBe('FORBIDDEN');
  const mine = await usage();
  const asAdmin = await usage('?actor=alice', 'admin');
  expect(asAdmin.actor).toBe('alice');
  expect(asAdmin.tokens).toEqual(mine.tokens);
  expect(asAdmin.execSeconds).toBe(mine.execSeconds);
});

test('bad ranges are refused without echoing them', async () => {
  for (const q of ['?from=yesterday', '?from=2026-13-45', '?from=2026-11-02&to=2026-11-01T00:00:00Z']) {
    const res = await rig.api(`/api/usage${q}`);
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.code).toBe('INVALID_REQUEST');
    expect(JSON.stringify(body)).not.toContain('yesterday');
  }
});

test('running minutes stop growing once the workspace is stopped', async () => {
  const res = await rig.api(`/api/workspaces/${rig.ws}/stop`, { method: 'POST' });
  expect(res.status).toBeLessThan(300);
  await waitStatus(rig.p, rig.ws, 'stopped', { timeoutMs: 60_000 });
  const first = await usage();
  await Bun.sleep(1500);
  const second = await usage();
  expect(first.runningMinutes).toBeGreaterThan(0);
  expect(second.runningMinutes).toBe(first.runningMinutes);
}, 90_000);
