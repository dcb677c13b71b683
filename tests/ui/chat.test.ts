// The agent chat on a workspace's page, in Debian's Chromium with every request outside the machine
// blocked; the model is the tests' local OpenAI-compatible server (the one permitted double). By the
// contract's names: a `Message` field and a `Send` button whose reply streams in, with tool calls
// and their output; after a reload, a turn still running is followed, and `Cancel` ends it; a tool
// call waiting for approval shows with `Approve` and `Deny` buttons that decide it; a read whose
// connection breaks is sent again.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Locator, Page } from 'playwright-core';
import { FAKE_KEY, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { startTestPlatform, requireTestEnv, type TestPlatform } from '../helpers/platform';
import { sseReader } from '../helpers/sse';
import { closeAndClean, createRunning } from '../helpers/workspaces';
import { launchBrowser, screenshot, type TestBrowser } from './browser';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
let fake: FakeOpenAI;
let b: TestBrowser;
let page: Page;
let outside: string[];
let inFlight: Set<string>;
let failed: string[];

/** Waits for `what` to show; when it never does, says what the page and session `id` showed. */
async function shows(what: Locator, id: string) {
  await what.waitFor({ timeout: 30_000 }).catch(async (e) => {
    const alert = await page.getByRole('region', { name: 'Agent' }).getByRole('alert').textContent({ timeout: 1000 }).catch(() => '(no panel)');
    const session = await (await p.api('workspaces', `/api/agent/sessions/${id}`)).json();
    throw new Error(`${String(e)}\nthe panel's alert: ${alert}\nthe page waits on: ${[...inFlight].join(', ')}\nrequests that failed: ${failed.join(', ')}\nthe session: ${JSON.stringify(session)}`);
  });
}

async function openWorkspace(name: string) {
  await page.goto(p.url('workspaces') + '/ui#/');
  await page.getByRole('link', { name, exact: true }).click();
  await page.getByRole('heading', { name, exact: true }).waitFor();
}

beforeAll(async () => {
  fake = startFakeOpenAI({ slowMs: 50 });
  p = await startTestPlatform({
    services: ['workspaces'],
    env: { OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: FAKE_KEY, APP_AGENT_PROVIDER_RETRIES: '0', APP_WORKSPACE_PORT_RANGE: '24300-24349' },
  });
  b = await launchBrowser();
  ({ page, outside, inFlight, failed } = await b.page());
  await page.goto(p.url('workspaces') + '/ui');
  await page.getByLabel('Token', { exact: true }).fill(p.token('alice'));
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Workspaces', exact: true }).waitFor();
});

afterAll(async () => {
  await b?.close();
  await closeAndClean(p);
  fake?.close();
});

describe('agent chat', () => {
  test('Send streams the reply in, with the tool call and its output', async () => {
    await createRunning(p, 'chat-box', { timeoutMs: 60_000 });
    await openWorkspace('chat-box');
    const chat = page.getByRole('region', { name: 'Agent' });
    await chat.getByLabel('Model', { exact: true }).fill('openai/shell');
    await chat.getByLabel('Message', { exact: true }).fill('echo from-the-agent');
    await chat.getByRole('button', { name: 'Send', exact: true }).click();
    const conversation = chat.getByRole('log', { name: 'Conversation' });
    await conversation.getByText('echo from-the-agent', { exact: true }).first().waitFor();
    await conversation.getByText('run_command: echo from-the-agent').waitFor({ timeout: 30_000 });
    await conversation.getByText(/Tool output: .*from-the-agent/).waitFor({ timeout: 30_000 });
    // The tool's output is there to open.
    await conversation.getByText('run_command: echo from-the-agent').click();
    await conversation.getByText(/"stdout": "from-the-agent\\n"/).waitFor();
    expect(await chat.getByRole('button', { name: 'Send', exact: true }).isEnabled()).toBe(true);
    await page.getByRole('region', { name: 'Stats' }).getByText('CPU', { exact: true }).waitFor({ timeout: 30_000 });
    await screenshot(page, 'chat', { fullPage: true });

    // A reload shows the conversation again, and the next message goes to the same session.
    await page.reload();
    await page.getByRole('log', { name: 'Conversation' }).getByText(/Tool output: .*from-the-agent/).waitFor();
    expect(await page.getByRole('region', { name: 'Agent' }).getByLabel('Model', { exact: true }).isVisible()).toBe(false);
    const sessions = (await (await p.api('workspaces', '/api/agent/sessions')).json()) as { sessions: unknown[] };
    expect(sessions.sessions).toHaveLength(1);
  }, 120_000);

  test('a turn running before the page opened is followed, and Cancel ends it', async () => {
    const ws = await createRunning(p, 'chat-slow', { timeoutMs: 60_000 });
    const created = await p.api('workspaces', '/api/agent/sessions', { method: 'POST', json: { workspaceId: ws.id, model: 'openai/slow' } });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    // Start a turn and leave: the turn goes on without its client.
    const res = await p.api('workspaces', `/api/agent/sessions/${id}/messages`, { method: 'POST', json: { message: 'count for me', stream: true } });
    const r = sseReader(res);
    expect((await r.nextEvent())?.event).toBe('delta');
    await r.cancel();

    await openWorkspace('chat-slow');
    const chat = page.getByRole('region', { name: 'Agent' });
    const conversation = chat.getByRole('log', { name: 'Conversation' });
    await shows(conversation.getByText('count for me', { exact: true }), id);
    await conversation.getByText(/tick tick tick/).waitFor({ timeout: 30_000 });
    await chat.getByRole('button', { name: 'Cancel', exact: true }).click();
    await conversation.getByText('(cancelled)').waitFor({ timeout: 30_000 });
    const session = (await (await p.api('workspaces', `/api/agent/sessions/${id}`)).json()) as { busy: boolean; messages: { finishReason?: string | null }[] };
    expect(session.busy).toBe(false);
    expect(session.messages.at(-1)?.finishReason).toBe('cancelled');
    expect(outside).toEqual([]);
  }, 120_000);

  test('a call waiting for approval shows with Approve and Deny buttons, and each decides it', async () => {
    const ws = await createRunning(p, 'chat-approve', { timeoutMs: 60_000 });
    const created = await p.api('workspaces', '/api/agent/sessions', { method: 'POST', json: { workspaceId: ws.id, model: 'openai/tools', toolApproval: 'always' } });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const ask = (command: string) => JSON.stringify([{ name: 'run_command', input: { command } }]);
    // The turn starts outside the page and waits; the page follows it.
    const res = await p.api('workspaces', `/api/agent/sessions/${id}/messages`, { method: 'POST', json: { message: ask('echo approved-in-ui'), stream: true } });
    const r = sseReader(res);
    expect((await r.nextEvent(20_000))?.event).toBe('approval');
    await r.cancel();

    await openWorkspace('chat-approve');
    const chat = page.getByRole('region', { name: 'Agent' });
    const conversation = chat.getByRole('log', { name: 'Conversation' });
    const card = conversation.getByRole('group', { name: 'Approval of run_command' });
    await shows(card.getByText('Waiting for approval: run_command: echo approved-in-ui'), id);
    await screenshot(page, 'chat-approval', { fullPage: true });
    await card.getByRole('button', { name: 'Approve', exact: true }).click();
    await conversation.getByText(/Tool output: .*approved-in-ui/).waitFor({ timeout: 30_000 });
    expect(await card.count()).toBe(0);

    // The next call, sent from the page, is denied with a reason the model reads.
    await chat.getByLabel('Message', { exact: true }).fill(ask('touch /tmp/denied-in-ui'));
    await chat.getByRole('button', { name: 'Send', exact: true }).click();
    await card.getByText('Waiting for approval: run_command: touch /tmp/denied-in-ui').waitFor({ timeout: 30_000 });
    await card.getByLabel('Reason', { exact: true }).fill('not from the dashboard');
    await card.getByRole('button', { name: 'Deny', exact: true }).click();
    await conversation.getByText(/Tool output: .*not from the dashboard/).waitFor({ timeout: 30_000 });
    const approvals = (await (await p.api('workspaces', `/api/agent/sessions/${id}/approvals?status=all`)).json()) as { approvals: { status: string; reason: string | null }[] };
    expect(approvals.approvals.map((a) => [a.status, a.reason])).toEqual([
      ['approved', null],
      ['denied', 'not from the dashboard'],
    ]);
    expect(outside).toEqual([]);
  }, 120_000);

  test("Session lists the workspace's sessions: each opens its own history, and New session starts another", async () => {
    await openWorkspace('chat-box');
    const chat = page.getByRole('region', { name: 'Agent' });
    const conversation = chat.getByRole('log', { name: 'Conversation' });
    await conversation.getByText('echo from-the-agent', { exact: true }).first().waitFor();
    const picker = chat.getByLabel('Session', { exact: true });
    await picker.selectOption({ label: 'New session' });
    await chat.getByLabel('Model', { exact: true }).waitFor();
    expect(await conversation.getByText('echo from-the-agent').count()).toBe(0);
    await chat.getByLabel('Model', { exact: true }).fill('openai/shell');
    await chat.getByLabel('Message', { exact: true }).fill('echo second-session');
    await chat.getByRole('button', { name: 'Send', exact: true }).click();
    await conversation.getByText(/Tool output: .*second-session/).waitFor({ timeout: 30_000 });
    // Two sessions listed, the new one chosen; the first still opens with its own history.
    const options = await picker.locator('option').allTextContents();
    expect(options.filter((o) => o.includes('openai/shell'))).toHaveLength(2);
    await picker.selectOption({ index: 0 });
    await conversation.getByText('echo from-the-agent', { exact: true }).first().waitFor();
    expect(await conversation.getByText('echo second-session', { exact: true }).count()).toBe(0);
    const ws = ((await (await p.api('workspaces', '/api/workspaces')).json()) as { workspaces: { id: string; name: string }[] }).workspaces.find((w) => w.name === 'chat-box')!;
    const listed = (await (await p.api('workspaces', `/api/agent/sessions?workspaceId=${ws.id}`)).json()) as { sessions: unknown[] };
    expect(listed.sessions).toHaveLength(2);
  }, 120_000);

  test('a read whose connection breaks is asked again: the panel still shows', async () => {
    // Chromium on the engine's machine aborts what is in flight (ERR_NETWORK_CHANGED) whenever the
    // engine adds a workspace network; the page's GETs are sent again. Here two breaks in a row of
    // the session list; the panel opens on the latest session (the one the test above started).
    let breaks = 2;
    const before = failed.length;
    await page.route('**/api/agent/sessions?workspaceId=*', (route) => (breaks-- > 0 ? route.abort('connectionreset') : route.continue()));
    try {
      await openWorkspace('chat-box');
      await page.getByRole('region', { name: 'Agent' }).getByRole('log', { name: 'Conversation' }).getByText('echo second-session', { exact: true }).first().waitFor();
      expect(breaks).toBeLessThan(0);
      expect(failed.slice(before).filter((f) => f.includes('/api/agent/sessions?workspaceId=') && f.endsWith('ERR_CONNECTION_RESET'))).toHaveLength(2);
    } finally {
      await page.unroute('**/api/agent/sessions?workspaceId=*');
    }
  }, 60_000);
});
