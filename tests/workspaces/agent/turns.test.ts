// Turns through HTTP with the fake provider: the non-streaming reply, the SSE protocol, the durable
// event log (resume after a disconnect with nothing lost or repeated; a client that leaves stops
// nothing), cancel, one turn at a time, and provider failures as UPSTREAM_ERROR without credentials.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { waitFor } from '../../helpers/docker';
import { FAKE_KEY } from '../../helpers/fake-openai';
import { directConnection } from '../../helpers/platform';
import { sseReader } from '../../helpers/sse';
import { errorCode } from '../../helpers/workspaces';
import { createSession, deltas, parse, readAll, send, startAgentRig, type AgentRig } from './agent-helpers';

let rig: AgentRig;

beforeAll(async () => {
  // One retry of a failing provider call (the SDK waits about 2 s before it).
  rig = await startAgentRig('agent-turns', { APP_AGENT_PROVIDER_TIMEOUT_MS: '2000', APP_AGENT_PROVIDER_RETRIES: '1' }, { running: false });
}, 120_000);
afterAll(() => rig.close(), 60_000);

const getSession = async (id: string) => (await rig.api(`/api/agent/sessions/${id}`)).json();
const events = (id: string, init: { after?: number; lastEventId?: string } = {}) =>
  rig.api(`/api/agent/sessions/${id}/events${init.after !== undefined ? `?after=${init.after}` : ''}`, {
    headers: init.lastEventId !== undefined ? { 'last-event-id': init.lastEventId } : {},
  });

describe('replies', () => {
  test('without stream the answer is the Assistant reply with finishReason and usage', async () => {
    const s = await createSession(rig, 'echo');
    const res = await send(rig, s.id, 'hello world');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      id: expect.stringMatching(/^msg_/),
      role: 'assistant',
      content: 'You said: hello world',
      finishReason: 'stop',
      usage: { promptTokens: expect.any(Number), completionTokens: expect.any(Number), totalTokens: expect.any(Number) },
      toolCalls: [],
    });
  });

  test('with stream: delta events with ids, then one done whose content is the joined deltas', async () => {
    const s = await createSession(rig, 'echo');
    const res = await send(rig, s.id, 'one two three four', { stream: true });
    expect(res.status).toBe(200);
    const evs = await readAll(res);
    expect(evs.slice(0, -1).every((e) => e.event === 'delta')).toBe(true);
    expect(evs.filter((e) => e.event === 'done')).toHaveLength(1);
    const done = evs.at(-1)!;
    expect(done.event).toBe('done');
    expect(done.data).toMatchObject({ role: 'assistant', content: 'You said: one two three four', finishReason: 'stop' });
    expect(deltas(evs)).toBe(done.data.content);
    expect(evs.map((e) => e.id)).toEqual(evs.map((_, i) => i + 1));
    // The stored reply is the done event's.
    const stored = (await getSession(s.id)).messages.at(-1);
    expect(stored).toMatchObject({ id: done.data.id, content: done.data.content, finishReason: 'stop', usage: done.data.usage });
  });

  test('event ids keep increasing across the turns of a session', async () => {
    const s = await createSession(rig, 'echo');
    const first = await readAll(await send(rig, s.id, 'a b', { stream: true }));
    const second = await readAll(await send(rig, s.id, 'c d', { stream: true }));
    expect(second[0]!.id).toBe(first.at(-1)!.id + 1);
    expect((await getSession(s.id)).lastEventId).toBe(second.at(-1)!.id);
  });
});

describe('the event log', () => {
  // Read past the service, in the platform's database: its PostgreSQL database on the PostgreSQL pass.
  test('a turn is stored as it was streamed: session totals, messages, event log and usage record', async () => {
    const s = await createSession(rig, 'echo');
    const evs = await readAll(await send(rig, s.id, 'kept in the database', { stream: true }));
    const total = evs.at(-1)!.data.usage.totalTokens;
    const db = directConnection(rig.p);
    try {
      // PostgreSQL's integers are bigint, read raw as text.
      const [session] = await db.all<{ owner: string; total_tokens: unknown }>('SELECT owner, total_tokens FROM agent_sessions WHERE id = ?', [s.id]);
      expect({ owner: session?.owner, total: Number(session?.total_tokens) }).toEqual({ owner: 'alice', total });
      const messages = await db.all('SELECT role, content, finish_reason FROM agent_messages WHERE session_id = ? ORDER BY ordinal', [s.id]);
      expect(messages).toEqual([
        { role: 'user', content: 'kept in the database', finish_reason: null },
        { role: 'assistant', content: 'You said: kept in the database', finish_reason: 'stop' },
      ]);
      const log = await db.all<{ seq: unknown; event: string }>('SELECT seq, event FROM agent_events WHERE session_id = ? ORDER BY seq', [s.id]);
      expect(log.map((r) => [Number(r.seq), r.event])).toEqual(evs.map((e) => [e.id, e.event]));
      const usage = await db.all<{ actor: string; total: unknown }>('SELECT actor, input_tokens + output_tokens AS total FROM agent_usage WHERE session_id = ?', [s.id]);
      expect(usage.map((u) => ({ actor: u.actor, total: Number(u.total) }))).toEqual([{ actor: 'alice', total }]);
    } finally {
      await db.close();
    }
  });

  test('a client that disconnects stops nothing, and resumes from Last-Event-ID with nothing lost or repeated', async () => {
    const s = await createSession(rig, 'echo');
    const words = Array.from({ length: 30 }, (_, i) => `w${i} `);
    rig.fake.queue({ text: words, delayMs: 20, usage: { prompt: 7, completion: 30 } });
    const aborts = rig.fake.aborts;
    const res = await send(rig, s.id, 'go', { stream: true });
    const reader = sseReader(res);
    const seen = [parse((await reader.nextEvent())!), parse((await reader.nextEvent())!), parse((await reader.nextEvent())!)];
    await reader.cancel(); // the client goes away mid-turn

    const rest = await readAll(await events(s.id, { lastEventId: String(seen.at(-1)!.id) }));
    const all = [...seen, ...rest];
    expect(all.map((e) => e.id)).toEqual(all.map((_, i) => i + 1));
    expect(all.at(-1)).toMatchObject({ event: 'done', data: { finishReason: 'stop', content: words.join('') } });
    expect(deltas(all)).toBe(words.join(''));
    expect(rig.fake.aborts).toBe(aborts); // the provider call ran to its end

    // The whole log replays the same events.
    const replay = await readAll(await events(s.id, { after: 0 }));
    expect(replay).toEqual(all);
  });

  test('?after=N replays the events after N; Last-Event-ID wins over it', async () => {
    const s = await createSession(rig, 'echo');
    const all = await readAll(await send(rig, s.id, 'a b c d e', { stream: true }));
    expect(await readAll(await events(s.id, { after: 2 }))).toEqual(all.slice(2));
    expect(await readAll(await rig.api(`/api/agent/sessions/${s.id}/events?after=1`, { headers: { 'last-event-id': '4' } }))).toEqual(all.slice(4));
  });

  test('with no turn in flight the events stream ends at once after the replay', async () => {
    const s = await createSession(rig, 'echo');
    const all = await readAll(await send(rig, s.id, 'x', { stream: true }));
    expect(await readAll(await events(s.id, { after: all.at(-1)!.id }))).toEqual([]);
  });

  test('a Last-Event-ID that is not an id is 400 INVALID_REQUEST', async () => {
    const s = await createSession(rig, 'echo');
    const res = await events(s.id, { lastEventId: 'abc' });
    expect(res.status).toBe(400);
    expect(await errorCode(res)).toBe('INVALID_REQUEST');
  });

  test('a follower that joins mid-turn gets the past events, then the live ones, to the done', async () => {
    const s = await createSession(rig, 'echo');
    const words = Array.from({ length: 20 }, (_, i) => `v${i} `);
    rig.fake.queue({ text: words, delayMs: 20 });
    const res = await send(rig, s.id, 'go', { stream: true });
    const first = await sseReader(res).nextEvent();
    expect(first?.event).toBe('delta');
    const follower = await readAll(await events(s.id));
    expect(deltas(follower)).toBe(words.join(''));
    expect(follower.at(-1)!.event).toBe('done');
  });
});

describe('cancel and one turn at a time', () => {
  test('a message while a turn runs is 409 SESSION_BUSY; cancel ends the turn as cancelled, partial content kept', async () => {
    const s = await createSession(rig, 'slow');
    const aborts = rig.fake.aborts;
    const res = await send(rig, s.id, 'go', { stream: true });
    const reader = sseReader(res);
    const seen = [parse((await reader.nextEvent())!), parse((await reader.nextEvent())!)];

    for (const stream of [false, true]) {
      const busy = await send(rig, s.id, 'another', { stream });
      expect(busy.status).toBe(409);
      expect(await errorCode(busy)).toBe('SESSION_BUSY');
    }
    expect((await getSession(s.id)).busy).toBe(true);

    const cancel = await rig.api(`/api/agent/sessions/${s.id}/cancel`, { method: 'POST' });
    expect(cancel.status).toBe(200);
    expect(await cancel.json()).toEqual({ id: s.id, cancelled: true });

    const rest = (await reader.collect(() => false)).map(parse);
    const all = [...seen, ...rest];
    const done = all.at(-1)!;
    expect(done).toMatchObject({ event: 'done', data: { finishReason: 'cancelled' } });
    expect(done.data.content).toBe(deltas(all));
    expect(done.data.content.startsWith('tick tick ')).toBe(true);
    // The provider request was aborted: the fake saw its client go away.
    await waitFor('the provider to see the abort', () => rig.fake.aborts > aborts, 10_000, 20);

    const stored = await getSession(s.id);
    expect(stored.busy).toBe(false);
    expect(stored.messages.at(-1)).toMatchObject({ role: 'assistant', finishReason: 'cancelled', content: done.data.content });
    // The session takes messages again.
    rig.fake.queue({ text: ['fine'] });
    expect(await (await send(rig, s.id, 'after')).json()).toMatchObject({ content: 'fine', finishReason: 'stop' });
  });

  test('of messages sent at the same moment, one starts a turn and the others are 409 SESSION_BUSY', async () => {
    const s = await createSession(rig, 'echo');
    rig.fake.queue({ text: ['only ', 'one'], delayMs: 50 });
    const answers = await Promise.all(Array.from({ length: 5 }, () => send(rig, s.id, 'race')));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409]);
    const messages = (await getSession(s.id)).messages;
    expect(messages.map((m: any) => m.role)).toEqual(['user', 'assistant']);
  });

  test('cancel with no turn in flight answers cancelled: false', async () => {
    const s = await createSession(rig, 'echo');
    const res = await rig.api(`/api/agent/sessions/${s.id}/cancel`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: s.id, cancelled: false });
  });

  test('a non-streaming send whose client leaves still runs to its end', async () => {
    const s = await createSession(rig, 'echo');
    rig.fake.queue({ text: ['late ', 'answer'], delayMs: 100 });
    const aborts = rig.fake.aborts;
    const ac = new AbortController();
    const asked = rig.fake.requests.length + 1;
    const pending = rig.api(`/api/agent/sessions/${s.id}/messages`, { method: 'POST', json: { message: 'go' }, signal: ac.signal }).catch((e) => e);
    await rig.fake.waitForRequests(asked);
    ac.abort();
    expect(await pending).toBeInstanceOf(Error);
    const done = await waitFor('the turn to end', async () => {
      const m = (await getSession(s.id)).messages.at(-1);
      return m?.finishReason ? m : null;
    });
    expect(done).toMatchObject({ finishReason: 'stop', content: 'late answer' });
    expect(rig.fake.aborts).toBe(aborts);
  });

  test('deleting a session with a turn in flight cancels the turn', async () => {
    const s = await createSession(rig, 'slow');
    const aborts = rig.fake.aborts;
    const res = await send(rig, s.id, 'go', { stream: true });
    await sseReader(res).nextEvent();
    expect((await rig.api(`/api/agent/sessions/${s.id}`, { method: 'DELETE' })).status).toBe(200);
    await waitFor('the provider to see the abort', () => rig.fake.aborts > aborts, 10_000, 20);
    expect((await rig.api(`/api/agent/sessions/${s.id}`)).status).toBe(404);
  });
});

describe('provider failures', () => {
  test('a failing provider is 502 UPSTREAM_ERROR with its status and reason', async () => {
    const s = await createSession(rig, 'fail-500');
    const res = await send(rig, s.id, 'hi');
    expect(res.status).toBe(502);
    const body = await res.json();
    expect(body.error.code).toBe('UPSTREAM_ERROR');
    expect(body.error.message).toContain('fake provider failure 500');
    expect(body.error.details).toMatchObject({ provider: 'openai', status: 500, attempts: 2 });
    // The turn is over and stored as failed; the session takes messages again.
    const stored = await getSession(s.id);
    expect(stored.busy).toBe(false);
    expect(stored.messages.map((m: any) => [m.role, m.finishReason ?? null])).toEqual([
      ['user', null],
      ['assistant', 'error'],
    ]);
  });

  test('a rate limit is 502 UPSTREAM_ERROR saying so', async () => {
    const s = await createSession(rig, 'fail-429');
    const res = await send(rig, s.id, 'hi');
    expect(res.status).toBe(502);
    expect((await res.json()).error).toMatchObject({ code: 'UPSTREAM_ERROR', details: { status: 429 } });
  });

  test('a rate-limited call is retried (APP_AGENT_PROVIDER_RETRIES) and the turn goes on', async () => {
    const s = await createSession(rig, 'echo');
    const before = rig.fake.requests.length;
    rig.fake.queue({ status: 429, error: 'slow down' });
    const r = await (await send(rig, s.id, 'hello')).json();
    expect(r).toMatchObject({ content: 'You said: hello', finishReason: 'stop' });
    expect(rig.fake.requests.length - before).toBe(2);
  });

  test('a provider that keeps failing is 502 after its retries, with the number of attempts', async () => {
    const s = await createSession(rig, 'fail-503');
    const before = rig.fake.requests.length;
    const res = await send(rig, s.id, 'hello');
    expect(res.status).toBe(502);
    expect((await res.json()).error.details).toMatchObject({ provider: 'openai', status: 503, attempts: 2 });
    expect(rig.fake.requests.length - before).toBe(2);
  });

  test("the provider's reason never carries the credentials", async () => {
    const s = await createSession(rig, 'fail-401');
    const res = await send(rig, s.id, 'hi');
    expect(res.status).toBe(502);
    const text = await res.text();
    expect(text).toContain('Incorrect API key provided');
    expect(text).not.toContain(FAKE_KEY);
    expect(text).not.toContain(FAKE_KEY.slice(3, 20));
  });

  test('with stream: a failure is one error event with the error body, and the stream ends', async () => {
    const s = await createSession(rig, 'fail-503');
    const evs = await readAll(await send(rig, s.id, 'hi', { stream: true }));
    expect(evs).toEqual([{ id: 1, event: 'error', data: { error: { code: 'UPSTREAM_ERROR', message: expect.stringContaining('503'), details: expect.any(Object) } } }]);
  });

  test('a provider that goes silent is aborted and the turn fails with UPSTREAM_ERROR', async () => {
    const s = await createSession(rig, 'stall');
    const aborts = rig.fake.aborts;
    const res = await send(rig, s.id, 'hi');
    expect(res.status).toBe(502);
    const body = await res.json();
    expect(body.error.code).toBe('UPSTREAM_ERROR');
    expect(body.error.message).toContain('sent nothing for 2000 ms');
    await waitFor('the provider to see the abort', () => rig.fake.aborts > aborts, 10_000, 20);
  });

  test('a connection that breaks mid-answer ends with an error event after the deltas it sent', async () => {
    const s = await createSession(rig, 'drop');
    const evs = await readAll(await send(rig, s.id, 'hi', { stream: true }));
    expect(evs.at(-1)!.event).toBe('error');
    expect(evs.at(-1)!.data.error.code).toBe('UPSTREAM_ERROR');
    expect(evs.filter((e) => e.event === 'done')).toHaveLength(0);
    const stored = (await getSession(s.id)).messages.at(-1);
    expect(stored).toMatchObject({ finishReason: 'error', content: deltas(evs) });
  });
});
