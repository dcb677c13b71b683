// The workspace page's views in Debian's Chromium (playwright-core), every request outside the machine
// blocked, against a real engine: Files (upload, open, edit and save, download), Processes (start,
// live output, Kill), Snapshots (take, Fork) and Pause/Resume, found by the accessible names of
// CONTRACT.md ("Pages for every capability"), each checked against the API afterwards.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { closeAndClean, createRunning, waitStatus } from '../helpers/workspaces';
import { launchBrowser, screenshot, type TestBrowser } from './browser';

requireTestEnv('DOCKER_HOST');

const ENGINE_MS = 60_000;
let p: TestPlatform;
let b: TestBrowser;
let page: Page;
let outside: string[];
let messages: string[];
let ws = '';

const api = async (path: string, init: { method?: string; json?: unknown } = {}) => {
  const res = await p.api('workspaces', path, { ...init, as: 'alice' });
  return { status: res.status, body: (await res.json()) as any };
};

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_PORT_RANGE: '27800-27849' } });
  ws = (await createRunning(p, 'views', { as: 'alice' })).id;
  b = await launchBrowser();
  ({ page, outside, console: messages } = await b.page());
  await page.goto(p.url('workspaces') + '/ui');
  await page.getByLabel('Token', { exact: true }).fill(p.token('alice'));
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Workspaces', exact: true }).waitFor();
  await page.goto(p.url('workspaces') + `/ui#/w/${ws}`);
  await page.getByRole('heading', { name: 'views', exact: true }).waitFor();
}, 120_000);

afterAll(async () => {
  await b?.close();
  await closeAndClean(p);
}, 60_000);

test('Files: /workspace first; an upload is listed, a text file opens, is edited and saved, and downloads', async () => {
  const files = page.getByRole('region', { name: 'Files' });
  await files.getByText('/workspace', { exact: true }).waitFor();
  await files.getByLabel('Upload', { exact: true }).setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('first line\n') });
  await files.getByRole('button', { name: 'Open notes.txt', exact: true }).waitFor({ timeout: ENGINE_MS });
  expect((await (await p.api('workspaces', `/api/workspaces/${ws}/files?path=notes.txt`, { as: 'alice' })).text())).toBe('first line\n');

  await files.getByRole('button', { name: 'Open notes.txt', exact: true }).click();
  const editor = files.getByLabel('Editing /workspace/notes.txt');
  expect(await editor.inputValue()).toBe('first line\n');
  await editor.fill('edited in the browser\n');
  await files.getByRole('button', { name: 'Save', exact: true }).click();
  await files.getByText('Saved', { exact: true }).waitFor();
  expect((await (await p.api('workspaces', `/api/workspaces/${ws}/files?path=notes.txt`, { as: 'alice' })).text())).toBe('edited in the browser\n');

  const [download] = await Promise.all([page.waitForEvent('download'), files.getByRole('button', { name: 'Download notes.txt', exact: true }).click()]);
  expect(download.suggestedFilename()).toBe('notes.txt');
  expect(readFileSync((await download.path())!, 'utf8')).toBe('edited in the browser\n');
  await screenshot(page, 'workspace-files');
}, 90_000);

test('Processes: a started process shows its output live, and Kill ends it', async () => {
  const procs = page.getByRole('region', { name: 'Processes' });
  await procs.getByLabel('Process command', { exact: true }).fill('i=0; while true; do i=$((i+1)); echo tick-$i; sleep 0.2; done');
  await procs.getByRole('button', { name: 'Start', exact: true }).click();
  await procs.getByRole('log', { name: 'Process output' }).getByText(/tick-3/).waitFor({ timeout: ENGINE_MS });
  const kill = procs.getByRole('button', { name: /^Kill / });
  await kill.click();
  await procs.getByText(/^exited\b/).first().waitFor({ timeout: ENGINE_MS });
  const { body } = await api(`/api/workspaces/${ws}/processes`);
  expect(body.processes[0].status).toBe('exited');
  expect(body.processes[0].exitCode).toBe(137);
  await screenshot(page, 'workspace-processes');
}, 90_000);

test('Snapshots: Take snapshot lists it; Fork makes a workspace of its own', async () => {
  const snaps = page.getByRole('region', { name: 'Snapshots' });
  await snaps.getByLabel('Snapshot name', { exact: true }).fill('from-the-page');
  await snaps.getByRole('button', { name: 'Take snapshot', exact: true }).click();
  await snaps.getByRole('list', { name: 'Snapshots' }).getByText('from-the-page', { exact: true }).waitFor({ timeout: ENGINE_MS });
  expect((await api('/api/snapshots')).body.snapshots.map((s: { name: string }) => s.name)).toContain('from-the-page');

  await snaps.getByLabel('Snapshot name', { exact: true }).fill('forked');
  await snaps.getByRole('button', { name: 'Fork', exact: true }).click();
  await snaps.getByText('Forked: forked-1').waitFor({ timeout: ENGINE_MS });
  const forked = (await api('/api/workspaces')).body.workspaces.find((w: { name: string }) => w.name === 'forked-1');
  expect(forked).toBeDefined();
  await waitStatus(p, forked.id, 'running', { as: 'alice', timeoutMs: ENGINE_MS });
}, 120_000);

test('Pause and Resume follow the status', async () => {
  const article = page.getByRole('article');
  await article.getByRole('button', { name: 'Pause', exact: true }).click();
  await article.getByText('paused', { exact: true }).first().waitFor({ timeout: ENGINE_MS });
  expect((await api(`/api/workspaces/${ws}`)).body.status).toBe('paused');
  expect(await article.getByRole('button', { name: 'Pause', exact: true }).isDisabled()).toBe(true);
  await article.getByRole('button', { name: 'Resume', exact: true }).click();
  await article.getByText('running', { exact: true }).first().waitFor({ timeout: ENGINE_MS });
  expect((await api(`/api/workspaces/${ws}`)).body.status).toBe('running');
}, 90_000);

test('nothing left the machine, and the page broke no policy', () => {
  expect(outside).toEqual([]);
  expect(messages.filter((m) => /Content Security Policy|Refused to|pageerror/i.test(m))).toEqual([]);
});
