// Agent turns under the actor's quotas (CONTRACT.md, "One tenant never stalls another"): a tool's
// command takes an exec slot, every turn a stream slot, sessions per actor are bounded, and so are
// tokens per UTC day; an early cancel kills the tool's command. Each test acts as its own actor, so
// one test's slots and tokens do not count against another's.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { sseReader } from '../../helpers/sse';
import { createSession, parse, send, startAgentRig, type AgentRig } from './agent-helpers';

let rig: AgentRig;

beforeAll(async () => {
  rig = await startAgentRig('agent-quotas', { APP_QUOTA_EXECS: '2', APP_QUOTA_STREAMS: '3', APP_QUOTA_SESSIONS: '5', APP_AGENT_DAILY_TOKENS: '2500' });
}, 120_000);
afterAll(() => rig.close(), 60_000);

/** Runs a command in the shared workspace as an admin (admins take no slot). */
async function shell(command: string): Promise<string> {
  const res = await rig.api(`/api/workspaces/${rig.ws}/exec`, { method: 'POST', json: { command }, as: 'admin' });
  expect(res.status).toBe(200);
  return ((await res.json()) as { stdout: string }).stdout;
}

/** A workspace of `actor` (it need not run: these sessions' models call no tool). */
async function workspaceOf(actor: string): Promise<string> {
  const res = await rig.api('/api/workspaces', { method: 'POST', as: actor, json: { name: `ws-${actor}`, template: 'minimal' } });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

const runCommand = (command: string) => JSON.stringify([{ name: 'run_command', input: { command } }]);

test('of N+1 concurrent tool commands of one actor, N run and the extra one is told the exec quota was hit', async () => {
  const sessions = await Promise.all([0, 1, 2].map(() => createSession(rig, 'tools')));
  const replies = Promise.all(sessions.map(async (s, i) => (await send(rig, s.id, runCommand(`sleep 4; echo ran-${i}`))).json()));
  // While they run, never more than two of the commands are in the workspace.
  let most = 0;
  const watch = (async () => {
    for (let t = 0; t < 15; t++) {
      const running = (await shell('ps -o args')).split('\n').filter((l) => l.trim() === 'sleep 4').length;
      most = Math.max(most, running);
      await Bun.sleep(150);
    }
  })();
  const [answers] = await Promise.all([replies, watch]);
  const outputs = answers.map((r: any) => r.toolCalls[0].output);
  expect(outputs.filter((o: any) => o.exitCode === 0)).toHaveLength(2);
  const refused = outputs.filter((o: any) => o.code === 'QUOTA_EXCEEDED');
  expect(refused).toHaveLength(1);
  expect(refused[0].error).toContain('execs');
  // The turn went on: the model read the refusal and answered.
  for (const r of answers) expect(r.finishReason).toBe('stop');
  expect(most).toBeGreaterThan(0);
  expect(most).toBeLessThanOrEqual(2);
}, 60_000);

test('a cancel right at the start of a turn kills the command its tool started', async () => {
  const s = await createSession(rig, 'tools', { as: 'alice' });
  // The cancel lands at different moments of the tool's start; wherever it lands, no command survives.
  for (const [i, delay] of [0, 10, 30, 60, 120, 250].entries()) {
    const asked = rig.fake.requests.length;
    const res = await send(rig, s.id, runCommand(`touch /tmp/cancel-${i}; sleep 32${i}`), { stream: true });
    await rig.fake.waitForRequests(asked + 1);
    await Bun.sleep(delay);
    const cancel = await rig.api(`/api/agent/sessions/${s.id}/cancel`, { method: 'POST' });
    expect(cancel.status).toBe(200);
    const evs = (await sseReader(res).collect(() => false)).map(parse);
    expect(evs.at(-1)).toMatchObject({ event: 'done' });
  }
  await Bun.sleep(2000);
  const ps = await shell('ps -o args');
  for (let i = 0; i < 6; i++) expect(ps).not.toContain(`sleep 32${i}`);
  // At least one of the commands had started when its turn was cancelled.
  expect(await shell('ls /tmp')).toContain('cancel-');
}, 60_000);

test('a turn without stream holds a stream slot until it ends; past the quota nothing starts', async () => {
  const ws = await workspaceOf('erin');
  const sessions = await Promise.all([0, 1, 2, 3].map(() => createSession(rig, 'slow', { as: 'erin', workspaceId: ws })));
  const asked = rig.fake.requests.length;
  const pending = sessions.slice(0, 3).map((s) => send(rig, s.id, 'go', { as: 'erin' }));
  await rig.fake.waitForRequests(asked + 3);
  const extra = sessions[3];
  for (const r of [await send(rig, extra.id, 'hi', { as: 'erin' }), await send(rig, extra.id, 'hi', { as: 'erin', stream: true })]) {
    expect(r.status).toBe(429);
    expect((await r.json()).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'streams', limit: 3 } });
  }
  expect(rig.fake.requests.length).toBe(asked + 3);
  expect((await (await rig.api(`/api/agent/sessions/${extra.id}`, { as: 'erin' })).json()).messages).toEqual([]);
  for (const s of sessions.slice(0, 3)) await rig.api(`/api/agent/sessions/${s.id}/cancel`, { method: 'POST', as: 'erin' });
  for (const r of await Promise.all(pending)) expect((await r.json()).finishReason).toBe('cancelled');
  // The turns ended: their slots are back.
  const sent = await send(rig, extra.id, 'hi again', { as: 'erin', stream: true });
  expect(sent.status).toBe(200);
  await rig.api(`/api/agent/sessions/${extra.id}/cancel`, { method: 'POST', as: 'erin' });
  await sseReader(sent).collect(() => false);
}, 60_000);

test('past APP_QUOTA_SESSIONS sessions of one actor a new session is 429; a delete frees its place', async () => {
  const ws = await workspaceOf('dave');
  const made = [];
  for (let i = 0; i < 5; i++) made.push(await createSession(rig, 'echo', { as: 'dave', workspaceId: ws }));
  const sixth = await rig.api('/api/agent/sessions', { method: 'POST', as: 'dave', json: { workspaceId: ws, model: 'openai/echo' } });
  expect(sixth.status).toBe(429);
  expect((await sixth.json()).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'sessions', limit: 5 } });
  expect((await (await rig.api('/api/agent/sessions', { as: 'dave' })).json()).sessions).toHaveLength(5);
  // An admin is exempt, and a delete gives the place back.
  expect((await rig.api('/api/agent/sessions', { method: 'POST', as: 'admin', json: { workspaceId: ws, model: 'openai/echo' } })).status).toBe(201);
  expect((await rig.api(`/api/agent/sessions/${made[0].id}`, { method: 'DELETE', as: 'dave' })).status).toBe(200);
  expect((await rig.api('/api/agent/sessions', { method: 'POST', as: 'dave', json: { workspaceId: ws, model: 'openai/echo' } })).status).toBe(201);
});

test('of sessions created at the same moment past APP_QUOTA_SESSIONS, exactly the quota are made', async () => {
  const ws = await workspaceOf('frank');
  const answers = await Promise.all(
    Array.from({ length: 12 }, () => rig.api('/api/agent/sessions', { method: 'POST', as: 'frank', json: { workspaceId: ws, model: 'openai/echo' } })),
  );
  const statuses = answers.map((r) => r.status).sort();
  expect(statuses).toEqual([...Array(5).fill(201), ...Array(7).fill(429)]);
  expect((await (await rig.api('/api/agent/sessions', { as: 'frank' })).json()).sessions).toHaveLength(5);
});

test('past APP_AGENT_DAILY_TOKENS tokens of the day a new turn is 429 in every session, before the provider is called', async () => {
  const ws = await workspaceOf('carol');
  const a = await createSession(rig, 'echo', { as: 'carol', workspaceId: ws });
  const b = await createSession(rig, 'echo', { as: 'carol', workspaceId: ws });
  rig.fake.queue({ text: ['a ', 'long ', 'answer'], usage: { prompt: 2000, completion: 600 } });
  const first = await send(rig, a.id, 'spend', { as: 'carol' });
  expect(first.status).toBe(200);
  expect((await first.json()).usage.totalTokens).toBe(2600);

  const asked = rig.fake.requests.length;
  for (const r of [await send(rig, a.id, 'more', { as: 'carol' }), await send(rig, b.id, 'more', { as: 'carol', stream: true })]) {
    expect(r.status).toBe(429);
    expect((await r.json()).error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { quota: 'dailyTokens', limit: 2500 } });
  }
  expect(rig.fake.requests.length).toBe(asked);
  // Deleting the session does not give the tokens back.
  expect((await rig.api(`/api/agent/sessions/${a.id}`, { method: 'DELETE', as: 'carol' })).status).toBe(200);
  expect((await send(rig, b.id, 'again', { as: 'carol' })).status).toBe(429);
  expect(rig.fake.requests.length).toBe(asked);
  // Admins are exempt, and other actors have their own budget.
  expect((await send(rig, b.id, 'as admin', { as: 'admin' })).status).toBe(200);
  const other = await createSession(rig, 'echo');
  expect((await send(rig, other.id, 'hello')).status).toBe(200);
});
