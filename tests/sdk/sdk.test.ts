// @keel/sdk as users get it: packed with npm, installed into a fresh Node project, run by `node`
// (not Bun) against a real Keel on the test Docker engine and the fake OpenAI-compatible provider:
// create, commands streamed, files (text, binary, a 50 MB stream) read back byte-identical,
// processes with stdin and kill, a preview fetched, pause/resume, a snapshot, an agent turn with an
// approval, a turn's stream cut and resumed, delete, and KeelError for an error answer.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FAKE_KEY, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { closeAndClean } from '../helpers/workspaces';
import { nodeProject, REPO, run } from './sdk-helpers';

let p: TestPlatform;
let fake: FakeOpenAI;
let project: Awaited<ReturnType<typeof nodeProject>>;

beforeAll(async () => {
  requireTestEnv('DOCKER_HOST');
  fake = startFakeOpenAI();
  [p, project] = await Promise.all([
    startTestPlatform({ services: ['workspaces'], env: { OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: FAKE_KEY, APP_AGENT_PROVIDER_RETRIES: '0', APP_WORKSPACE_PORT_RANGE: '23400-23489' } }),
    nodeProject(['sdk-script.mjs']),
  ]);
}, 120_000);
afterAll(async () => {
  await closeAndClean(p);
  fake?.close();
  project?.remove();
}, 60_000);

/** What the script saw: one node run against the platform (a workspace takes seconds; each test reads its part). */
let out: any;

beforeAll(async () => {
  const name = `sdk-${Date.now().toString(36)}`;
  const r = await run(['node', 'sdk-script.mjs'], { cwd: project.dir, env: { KEEL_URL: p.url('workspaces'), KEEL_TOKEN: p.token('alice'), WS_NAME: name }, timeoutMs: 110_000 });
  if (r.code !== 0 || r.err) throw new Error(`node sdk-script.mjs exited ${r.code}: ${r.err}`);
  out = JSON.parse(r.out.trim().split('\n').at(-1)!);
  out.name = name;
}, 120_000);

test('an error answer throws KeelError with the status, code and a message', () => {
  expect(out.notFound).toEqual({ isKeelError: true, status: 404, code: 'WORKSPACE_NOT_FOUND', hasMessage: true });
});

test('create resolves once running with the API fields and the methods; get and list give the same', () => {
  expect(out.created).toMatchObject({ status: 'running', name: out.name, template: 'minimal', hasCommands: true });
  expect(out.created.id).toMatch(/^ws_/);
  expect(out.listed).toBe(true);
  expect(out.got).toBe('running');
});

test('commands.run streams decoded text to the callbacks, with env and cwd; a non-zero exit and a timeout resolve', () => {
  expect(out.run).toEqual({ exitCode: 7, stdout: 'out héllo\n/tmp\n', stderr: 'err\n', streamedOut: 'out héllo\n/tmp\n', streamedErr: 'err\n', allText: true });
  expect(out.timeout).toEqual({ exitCode: 124, timedOut: true });
});

test('files: text, binary and a 50 MB stream come back byte-identical; list, move and remove', () => {
  expect(out.text).toBe('text ✓\n');
  expect(out.binaryEqual).toBe(true);
  expect(out.stream).toEqual({ size: 50 * 1024 * 1024, got: 50 * 1024 * 1024, equal: true });
  expect(out.list).toEqual(['a.txt:file:9', 'b.bin:file:4096', 'big.bin:file:52428800']);
  expect(out.moved).toEqual({ from: '/workspace/sdk/b.bin', to: '/workspace/sdk/moved/b.bin' });
  expect(out.afterMove).toEqual(['b.bin']);
  expect(out.removed).toBe('FILE_NOT_FOUND');
});

test('processes: stdin reaches the process, its output the callback; killed it waits with 137, ended with its code', () => {
  expect(out.process.echoed).toBe('ping\n');
  expect(out.process.wait).toEqual({ exitCode: 137 });
  expect(out.exited).toEqual({ exitCode: 3 });
});

test("a preview's url serves the workspace's HTTP server until revoked; processes are listed", () => {
  expect(out.preview).toMatchObject({ port: 8090, status: 200, body: 'previewed by the sdk' });
  expect(out.preview.url).toMatch(/^http:\/\/[0-9a-f]{40}\.localhost:\d+\/$/);
  expect(out.previewListed).toBe(true);
  expect(out.revoked).toMatchObject({ revoked: true });
  expect(out.afterRevoke).toBe(410);
  expect(out.processesListed).toBeGreaterThanOrEqual(3);
});

test('pause, resume, snapshot and fork', () => {
  expect(out.paused).toBe('paused');
  expect(out.resumed).toBe('running');
  expect(out.snapshot).toMatchObject({ name: 'sdk-snap', workspaceId: out.created.id });
  expect(out.fork).toEqual([{ name: 'sdk-fork-1', hasMethods: true }]);
  expect(out.snapshots).toEqual(['sdk-fork', 'sdk-snap']); // listed, then deleted (their images go with them)
});

test('an agent turn pauses on its approval, runs the call once approved and ends with done', () => {
  expect(out.cancelIdle).toMatchObject({ cancelled: false });
  expect(out.agent.types[0]).toBe('approval');
  expect(out.agent.types).toContain('tool');
  expect(out.agent.types.at(-1)).toBe('done');
  expect(out.agent.tool).toMatchObject({ exitCode: 0, stdout: 'approved-by-sdk\n' });
  expect(out.agent.done).toContain('approved-by-sdk');
  expect(out.agent.ids.every((id: string) => /^\d+$/.test(id))).toBe(true);
});

test("a turn's stream cut after its first event is resumed: nothing missed, nothing twice", () => {
  expect(out.resume.cut).toBe(true);
  expect(out.resume.types.at(-1)).toBe('done');
  expect(out.resume.ids).toEqual([...out.resume.ids].sort((a: number, b: number) => a - b));
  expect(new Set(out.resume.ids).size).toBe(out.resume.ids.length);
  expect(out.resume.deltas).toBe('You said: one two three four five six');
  expect(out.resume.done).toBe(out.resume.deltas);
});

test('delete removes the workspace', () => {
  expect(out.deleted).toMatchObject({ id: out.created.id, deleted: true });
  expect(out.afterDelete).toBe('WORKSPACE_NOT_FOUND');
});

test("the installed package's types: a strict NodeNext project compiles against them, and misuse does not", async () => {
  const program = `import { Keel, KeelError, type AgentEvent, type CommandResult, type WorkspaceData } from '@keel/sdk';
const keel = new Keel({ url: 'http://127.0.0.1:3100', token: 't' });
export async function main(): Promise<number> {
  const ws = await keel.workspaces.create({ name: 'n', template: 'minimal' });
  const data: WorkspaceData = ws.toJSON();
  const r: CommandResult = await ws.commands.run('ls', { onStdout: (t: string) => void t, timeoutMs: 5 });
  const bytes: Uint8Array = await ws.files.read('a');
  const s = await keel.agent.sessions.create({ workspaceId: ws.id, model: 'openai/x', toolApproval: ['run_command'] });
  for await (const e of s.send('hi')) {
    const ev: AgentEvent = e;
    if (ev.type === 'approval') await s.approve(ev.data.id);
    if (ev.type === 'delta') console.log(ev.data.content.length);
  }
  const scan = await keel.media.library.scan();
  const done = await scan.wait();
  try { await keel.workspaces.get('x'); } catch (err) { if (err instanceof KeelError) return err.status; }
  return r.exitCode + bytes.length + data.port + done.counts.seen;
}
`;
  writeFileSync(join(project.dir, 'ok.ts'), program);
  writeFileSync(join(project.dir, 'wrong.ts'), program.replace("const bytes: Uint8Array = await ws.files.read('a');", "const bytes: string = await ws.files.read('a');"));
  const tsconfig = (file: string) => ({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022', 'DOM'], types: [], strict: true, noEmit: true }, files: [file] });
  writeFileSync(join(project.dir, 'tsconfig.ok.json'), JSON.stringify(tsconfig('ok.ts')));
  writeFileSync(join(project.dir, 'tsconfig.wrong.json'), JSON.stringify(tsconfig('wrong.ts')));
  const tsc = join(REPO, 'node_modules/.bin/tsc');
  const ok = await run([tsc, '-p', 'tsconfig.ok.json'], { cwd: project.dir });
  expect(ok.out + ok.err).toBe('');
  expect(ok.code).toBe(0);
  const wrong = await run([tsc, '-p', 'tsconfig.wrong.json'], { cwd: project.dir });
  expect(wrong.out).toContain("is not assignable to type 'string'");
  expect(wrong.code).not.toBe(0);
}, 60_000);
