// Tool calls that wait for a person (toolApproval): the turn pauses visibly (session status, an
// `approval` event, the approvals list), an approved call runs in the real workspace, a denied one
// never runs and the model reads the reason, only the named tools wait, an undecided call is denied
// after APP_AGENT_APPROVAL_TIMEOUT, cancel ends a waiting turn, and another actor sees nothing.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { sseReader } from '../../helpers/sse';
import { parse, readAll, send, startAgentRig, type AgentRig } from './agent-helpers';

let rig: AgentRig;

beforeAll(async () => {
  // Long enough that the other tests decide well before it, short enough for the timeout test.
  rig = await startAgentRig('agent-approvals', { APP_AGENT_APPROVAL_TIMEOUT: '6' });
}, 120_000);
afterAll(() => rig.close(), 60_000);

async function session(toolApproval: unknown): Promise<string> {
  const res = await rig.api('/api/agent/sessions', { method: 'POST', json: { workspaceId: rig.ws, model: 'openai/tools', toolApproval } });
  expect(res.status).toBe(201);
  const s = await res.json();
  expect(s.toolApproval).toEqual(toolApproval);
  return s.id;
}

const calls = (...c: { name: string; input: unknown }[]) => JSON.stringify(c);
const runCommand = (command: string) => ({ name: 'run_command', input: { command } });

async function exec(command: string): Promise<string> {
  const res = await rig.api(`/api/workspaces/${rig.ws}/exec`, { method: 'POST', json: { command } });
  expect(res.status).toBe(200);
  return (await res.json()).stdout;
}

/** Sends a streamed message and reads events up to the first `approval` one. */
async function pauseOn(sessionId: string, message: string) {
  const reader = sseReader(await send(rig, sessionId, message, { stream: true }));
  const seen: ReturnType<typeof parse>[] = [];
  for (;;) {
    const f = await reader.nextEvent(20_000);
    if (!f) throw new Error(`stream ended before an approval event: ${JSON.stringify(seen)}`);
    seen.push(parse(f));
    if (seen.at(-1)!.event === 'approval') return { approval: seen.at(-1)!.data, seen, reader };
  }
}

async function rest(reader: Awaited<ReturnType<typeof pauseOn>>['reader']) {
  return (await reader.collect(() => false, 30_000)).map(parse);
}

const decide = (sessionId: string, aid: string, body: unknown, as?: string) =>
  rig.api(`/api/agent/sessions/${sessionId}/approvals/${aid}`, { method: 'POST', json: body, as });

test('a call that needs approval pauses the turn until it is approved, then runs in the workspace', async () => {
  const id = await session('always');
  const { approval, seen, reader } = await pauseOn(id, calls(runCommand('echo approved-ran > /tmp/approved && cat /tmp/approved')));
  expect(approval).toEqual({ id: expect.any(String), toolCallId: expect.any(String), name: 'run_command', input: { command: 'echo approved-ran > /tmp/approved && cat /tmp/approved' } });
  expect(seen.filter((e) => e.event === 'tool')).toEqual([]);

  const s = await (await rig.api(`/api/agent/sessions/${id}`)).json();
  expect(s).toMatchObject({ status: 'awaiting_approval', busy: true });
  const list = await (await rig.api(`/api/agent/sessions/${id}/approvals`)).json();
  expect(list.approvals).toEqual([expect.objectContaining({ id: approval.id, name: 'run_command', status: 'pending', reason: null, decidedAt: null })]);
  // Nothing ran yet.
  expect(await exec('cat /tmp/approved 2>/dev/null || echo absent')).toBe('absent\n');

  const res = await decide(id, approval.id, { decision: 'approve' });
  expect(res.status).toBe(200);
  expect(await res.json()).toMatchObject({ id: approval.id, status: 'approved' });

  const after = await rest(reader);
  const tool = after.find((e) => e.event === 'tool')!;
  expect(tool.data).toMatchObject({ id: approval.toolCallId, name: 'run_command', output: { exitCode: 0, stdout: 'approved-ran\n' } });
  const done = after.at(-1)!;
  expect(done.event).toBe('done');
  expect(done.data.finishReason).toBe('stop');
  expect(done.data.content).toContain('approved-ran');
  // The event log holds the approval event in its place, ids increasing.
  const log = await readAll(await rig.api(`/api/agent/sessions/${id}/events`));
  expect(log.map((e) => e.event)).toEqual(['approval', 'tool', ...log.slice(2, -1).map(() => 'delta'), 'done']);
  expect(log.map((e) => e.id)).toEqual(log.map((_, i) => i + 1));
  expect((await (await rig.api(`/api/agent/sessions/${id}`)).json()).status).toBe('active');
  expect((await (await rig.api(`/api/agent/sessions/${id}/approvals`)).json()).approvals).toEqual([]);
  expect((await (await rig.api(`/api/agent/sessions/${id}/approvals?status=all`)).json()).approvals).toEqual([expect.objectContaining({ id: approval.id, status: 'approved' })]);
  // Decided once: a second decision is refused.
  expect((await decide(id, approval.id, { decision: 'deny' })).status).toBe(409);
}, 60_000);

test('a denied call never runs and the model reads the reason; the turn goes on', async () => {
  const id = await session(['run_command']);
  const reply = send(rig, id, calls(runCommand('touch /tmp/denied-ran')));
  let aid = '';
  for (let i = 0; i < 200 && !aid; i++) {
    const list = await (await rig.api(`/api/agent/sessions/${id}/approvals`)).json();
    aid = list.approvals[0]?.id ?? '';
    if (!aid) await Bun.sleep(50);
  }
  expect(aid).not.toBe('');
  const res = await decide(id, aid, { decision: 'deny', reason: 'not on Fridays' });
  expect(res.status).toBe(200);
  expect(await res.json()).toMatchObject({ status: 'denied', reason: 'not on Fridays' });
  const answer = await (await reply).json();
  expect(answer.finishReason).toBe('stop');
  expect(answer.content).toContain('not on Fridays');
  expect(answer.toolCalls).toEqual([expect.objectContaining({ name: 'run_command', output: { denied: true, reason: expect.stringContaining('not on Fridays') } })]);
  // The model was told in a tool message.
  const toolMessage = rig.fake.requests.at(-1)!.messages.find((m) => m.role === 'tool')!;
  expect(String(toolMessage.content)).toContain('not on Fridays');
  expect(await exec('test -e /tmp/denied-ran && echo ran || echo absent')).toBe('absent\n');
}, 60_000);

test('only the named tools wait for approval', async () => {
  const id = await session(['write_file']);
  const evs = await readAll(await send(rig, id, calls(runCommand('echo free')), { stream: true }));
  expect(evs.some((e) => e.event === 'approval')).toBe(false);
  expect(evs.find((e) => e.event === 'tool')!.data.output).toMatchObject({ stdout: 'free\n' });
  expect(evs.at(-1)!.event).toBe('done');
}, 60_000);

test('a session without toolApproval runs its tools at once, and a bad policy is refused', async () => {
  const res = await rig.api('/api/agent/sessions', { method: 'POST', json: { workspaceId: rig.ws, model: 'openai/tools' } });
  expect((await res.json()).toolApproval).toBe('never');
  for (const toolApproval of ['sometimes', [], ['bad name!']]) {
    const bad = await rig.api('/api/agent/sessions', { method: 'POST', json: { workspaceId: rig.ws, model: 'openai/tools', toolApproval } });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.code).toBe('INVALID_REQUEST');
  }
});

test('an undecided call is denied after APP_AGENT_APPROVAL_TIMEOUT and the turn goes on', async () => {
  const id = await session('always');
  const { reader } = await pauseOn(id, calls(runCommand('touch /tmp/timed-out-ran')));
  const after = await rest(reader);
  const done = after.at(-1)!;
  expect(done.event).toBe('done');
  expect(done.data.toolCalls[0].output).toMatchObject({ denied: true, reason: expect.stringContaining('APP_AGENT_APPROVAL_TIMEOUT') });
  expect(done.data.content).toContain('no decision within 6 s');
  expect((await (await rig.api(`/api/agent/sessions/${id}/approvals?status=all`)).json()).approvals[0]).toMatchObject({ status: 'denied' });
  expect(await exec('test -e /tmp/timed-out-ran && echo ran || echo absent')).toBe('absent\n');
}, 60_000);

test('cancel ends a turn that waits for approval; the call is denied and never runs', async () => {
  const id = await session('always');
  const { approval, reader } = await pauseOn(id, calls(runCommand('touch /tmp/cancelled-ran')));
  const res = await rig.api(`/api/agent/sessions/${id}/cancel`, { method: 'POST' });
  expect(await res.json()).toEqual({ id, cancelled: true });
  const after = await rest(reader);
  expect(after.at(-1)).toMatchObject({ event: 'done', data: { finishReason: 'cancelled' } });
  const s = await (await rig.api(`/api/agent/sessions/${id}`)).json();
  expect(s).toMatchObject({ status: 'active', busy: false });
  expect((await decide(id, approval.id, { decision: 'approve' })).status).toBe(409);
  expect(await exec('test -e /tmp/cancelled-ran && echo ran || echo absent')).toBe('absent\n');
  // The session takes messages again; the cancelled call is not replayed to the model.
  rig.fake.queue({ text: ['again'] });
  expect((await (await send(rig, id, 'hello')).json()).content).toBe('again');
}, 60_000);

test("another actor's approvals are 404, and an unknown approval is 404", async () => {
  const id = await session('always');
  const { approval, reader } = await pauseOn(id, calls(runCommand('echo mine')));
  expect((await rig.api(`/api/agent/sessions/${id}/approvals`, { as: 'mallory' })).status).toBe(404);
  const theirs = await decide(id, approval.id, { decision: 'approve' }, 'mallory');
  expect(theirs.status).toBe(404);
  expect((await theirs.json()).error.code).toBe('SESSION_NOT_FOUND');
  const unknown = await decide(id, 'apr_nope', { decision: 'approve' });
  expect(unknown.status).toBe(404);
  expect((await unknown.json()).error.code).toBe('APPROVAL_NOT_FOUND');
  expect((await decide(id, approval.id, { decision: 'maybe' })).status).toBe(400);
  expect((await decide(id, approval.id, { decision: 'approve' })).status).toBe(200);
  expect((await rest(reader)).at(-1)!.event).toBe('done');
}, 60_000);
