// A template people built works wherever a template is named: over MCP (`list_templates` shows it with
// its status, `create_workspace` starts from it, another actor's private one is TEMPLATE_NOT_FOUND),
// a fork of a workspace made from it (the copies run as the template says). A named USER is read from
// the image's /etc/passwd and /etc/group, and that user owns the workspace's volume. A build step has
// no network (loopback only): metadata and the Keel host are out of reach.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { waitFor } from '../../helpers/docker';
import { closeAndClean, templateBuilt, waitStatus } from '../../helpers/workspaces';

requireTestEnv('DOCKER_HOST');

let p: TestPlatform;
const clients: Client[] = [];
const post = (path: string, json: unknown, as = 'alice') => p.api('workspaces', path, { method: 'POST', json, as });

async function connect(as: string): Promise<Client> {
  const client = new Client({ name: 'keel-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(p.url('workspaces') + '/mcp'), { requestInit: { headers: { authorization: `Bearer ${p.token(as)}` } } }));
  clients.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>) {
  const r = (await client.callTool({ name, arguments: args })) as { content: { type: string; text: string }[]; isError?: boolean };
  return { isError: r.isError === true, value: JSON.parse(r.content[0]!.text) };
}

const exec = async (id: string, command: string) => (await (await post(`/api/workspaces/${id}/exec`, { command })).json()) as { exitCode: number; stdout: string };

/** Alice's template from `body`, built and ready. */
async function buildTemplate(body: Record<string, unknown>) {
  const res = await post('/api/templates', body);
  expect(res.status).toBe(202);
  await templateBuilt(p, ((await res.json()) as { id: string }).id);
}

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_AUTO_STOP_MINUTES: '0' } });
  await buildTemplate({
    name: 'everywhere',
    dockerfile: 'FROM keel/minimal\nUSER root\nCOPY mark.txt /opt/mark.txt\nUSER 1300:1300\nWORKDIR /opt\nENV MARK=from-the-image\n',
    files: { 'mark.txt': 'marked\n' },
  });
}, 180_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await closeAndClean(p);
}, 60_000);

test('MCP: list_templates shows it beside the built-ins; create_workspace starts from it; another actor gets TEMPLATE_NOT_FOUND', async () => {
  const alice = await connect('alice');
  const listed = await call(alice, 'list_templates', {});
  expect(listed.isError).toBe(false);
  expect(listed.value.templates.find((t: any) => t.name === 'everywhere')).toMatchObject({ builtIn: false, public: false, owner: 'alice', status: 'ready', version: 1 });
  expect(listed.value.templates.filter((t: any) => t.builtIn).map((t: any) => t.name).sort()).toEqual(['bun-typescript', 'minimal']);

  const created = await call(alice, 'create_workspace', { name: 'mcp-everywhere', template: 'everywhere' });
  expect(created.isError).toBe(false);
  await waitStatus(p, created.value.id, 'running', { as: 'alice', timeoutMs: 90_000 });
  const ran = await call(alice, 'exec', { id: created.value.id, command: 'cat mark.txt; id -u; echo $MARK' });
  expect(ran.value).toMatchObject({ exitCode: 0, stdout: 'marked\n1300\nfrom-the-image\n' });

  const bob = await connect('bob');
  expect((await call(bob, 'list_templates', {})).value.templates.some((t: any) => t.name === 'everywhere')).toBe(false);
  const refused = await call(bob, 'create_workspace', { name: 'bob-everywhere', template: 'everywhere' });
  expect(refused.isError).toBe(true);
  expect(refused.value.error.code).toBe('TEMPLATE_NOT_FOUND');
}, 120_000);

test('a fork of a workspace made from it: each copy runs as the template says, with the source files', async () => {
  const src = (await (await post('/api/workspaces', { name: 'fork-src', template: 'everywhere' })).json()) as { id: string };
  await waitStatus(p, src.id, 'running', { as: 'alice', timeoutMs: 90_000 });
  expect((await exec(src.id, 'echo in-the-volume > /workspace/note')).exitCode).toBe(0);
  const res = await post(`/api/workspaces/${src.id}/fork`, { name: 'forked', count: 2 });
  expect(res.status).toBe(201);
  const forks = ((await res.json()) as { workspaces: { id: string }[] }).workspaces;
  expect(forks.length).toBe(2);
  for (const f of forks) {
    await waitStatus(p, f.id, 'running', { as: 'alice', timeoutMs: 90_000 });
    const r = await exec(f.id, 'cat mark.txt /workspace/note; id -u; pwd');
    expect(r).toMatchObject({ exitCode: 0, stdout: 'marked\nin-the-volume\n1300\n/opt\n' });
  }
}, 240_000);

test("a named USER runs as its uid and primary gid from the image's files, and owns /workspace", async () => {
  await buildTemplate({
    name: 'named-user',
    dockerfile: [
      'FROM keel/minimal',
      'USER root',
      "RUN echo 'dev:x:1700:1701:dev:/workspace:/bin/sh' >> /etc/passwd && echo 'dev:x:1701:' >> /etc/group",
      'USER dev',
      '',
    ].join('\n'),
  });
  const ws = (await (await post('/api/workspaces', { name: 'named-user-1', template: 'named-user' })).json()) as { id: string };
  await waitStatus(p, ws.id, 'running', { as: 'alice', timeoutMs: 90_000 });
  const r = await exec(ws.id, 'id -un; id -u; id -g; touch /workspace/mine && stat -c %u /workspace/mine');
  expect(r).toMatchObject({ exitCode: 0, stdout: 'dev\n1700\n1701\n1700\n' });
}, 180_000);

test('a build step has no network: only the loopback interface, and neither the metadata address nor the Keel host answers', async () => {
  const keelPort = new URL(p.url('workspaces')).port;
  const res = await post('/api/templates', {
    name: 'no-net',
    dockerfile: [
      'FROM keel/minimal',
      `RUN echo "nets: $(ls /sys/class/net | tr '\\n' ' ')"; for u in http://169.254.169.254/ http://172.17.0.1:${keelPort}/ http://10.0.2.2:${keelPort}/; do wget -q -T 2 -O /dev/null $u && echo "reached $u" || echo "unreachable $u"; done; : ${Date.now()}`, // a fresh step: no cache hit hides its output
      '',
    ].join('\n'),
  });
  expect(res.status).toBe(202);
  const { id, buildId } = (await res.json()) as any;
  const log = await waitFor('the build to end', async () => {
    const l = (await (await p.api('workspaces', `/api/templates/${id}/builds/${buildId}/logs`, { as: 'alice' })).json()) as any;
    return l.status === 'building' ? null : l;
  }, 120_000);
  expect(log.status).toBe('ready');
  const messages = (log.lines as { message: string }[]).map((l) => l.message.trim());
  expect(messages).toContain('nets: lo');
  expect(messages.filter((m) => m.startsWith('reached'))).toEqual([]);
  expect(messages.filter((m) => m.startsWith('unreachable')).length).toBe(3);
}, 120_000);

test("Keel's images of another actor are not bases: FROM or COPY --from another's template or a snapshot is 400 naming the line; one's own version is", async () => {
  const mine = ((await (await p.api('workspaces', '/api/templates', { as: 'alice' })).json()) as any).templates.find((t: any) => t.name === 'everywhere');
  const image = `keel-template:${mine.id}-v${mine.version}`;
  const refused = async (dockerfile: string, line: number) => {
    const res = await post('/api/templates', { name: `steal-${line}`, dockerfile }, 'bob');
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.error).toMatchObject({ code: 'INVALID_REQUEST', details: { line } });
  };
  await refused(`FROM ${image}\n`, 1);
  await refused(`FROM keel/minimal\nCOPY --from=${image} /opt/mark.txt /stolen\n`, 2);
  await refused('FROM keel/minimal\nRUN true\nCOPY --from=keel-snapshot:snap_anything / /stolen\n', 3);
  await refused('FROM --platform=linux/amd64 keel-snapshot:snap_anything AS s\n', 1);
  // Alice's own version is hers to build on.
  const own = await post('/api/templates', { name: 'on-mine', dockerfile: `FROM ${image}\nRUN cat /opt/mark.txt && : ${Date.now()}\n` }); // a fresh step: no cache hit from an earlier run
  expect(own.status).toBe(202);
  const { id, buildId } = (await own.json()) as any;
  const log = await waitFor('the build to end', async () => {
    const l = (await (await p.api('workspaces', `/api/templates/${id}/builds/${buildId}/logs`, { as: 'alice' })).json()) as any;
    return l.status === 'building' ? null : l;
  }, 120_000);
  expect(log.status).toBe('ready');
  expect((log.lines as { message: string }[]).some((l) => l.message.trim() === 'marked')).toBe(true);
  // The USER comes from the base (1300:1300, not the Dockerfile): /workspace was made that user's after the build.
  expect((log.lines as { message: string }[]).some((l) => l.message === "keel: making /workspace the base image's USER's (1300:1300)")).toBe(true);
  const ws = (await (await post('/api/workspaces', { name: 'on-mine-1', template: 'on-mine' })).json()) as { id: string };
  await waitStatus(p, ws.id, 'running', { as: 'alice', timeoutMs: 90_000 });
  expect(await exec(ws.id, 'id -u; touch /workspace/mine && stat -c %u /workspace/mine')).toMatchObject({ exitCode: 0, stdout: '1300\n1300\n' });
}, 180_000);

test("an image's ENTRYPOINT is part of its command, not a wrapper of Keel's: the workspace runs it with CMD as its arguments", async () => {
  await buildTemplate({
    name: 'with-entrypoint',
    dockerfile: [
      'FROM keel/minimal',
      'USER root',
      "RUN printf '#!/bin/sh\\necho \"entry: $*\" > /tmp/entry.log\\nexec sleep 3600\\n' > /entry.sh && chmod 755 /entry.sh",
      'USER 1000:1000',
      'ENTRYPOINT ["/entry.sh"]',
      'CMD ["a", "b c"]',
      '',
    ].join('\n'),
  });
  const ws = (await (await post('/api/workspaces', { name: 'entrypoint-1', template: 'with-entrypoint' })).json()) as { id: string };
  await waitStatus(p, ws.id, 'running', { as: 'alice', timeoutMs: 90_000 });
  const r = await waitFor('the entrypoint ran', async () => {
    const out = await exec(ws.id, 'cat /tmp/entry.log 2>/dev/null');
    return out.stdout ? out : null;
  }, 30_000);
  expect(r.stdout).toBe('entry: a b c\n');
}, 180_000);
