// Workspace events on the bus: Keel runs with the NATS bus against a real nats-server, and a plain
// NATS client (as a webhook service in another process would) sees evt.workspace.* after each change.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';
import { docker, waitFor } from '../../helpers/docker';
import { closeAndClean } from '../../helpers/workspaces';

let nats: ReturnType<typeof Bun.spawn> | undefined;
let client: NatsConnection;
let p: TestPlatform;
const seen: { subject: string; data: any }[] = [];

beforeAll(async () => {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  nats = Bun.spawn(['nats-server', '-a', '127.0.0.1', '-p', String(port)], { stdout: 'ignore', stderr: 'ignore' });
  const url = `nats://127.0.0.1:${port}`;
  client = await waitFor('nats-server to accept clients', () => connect({ servers: url }).catch(() => null), 10_000, 100);
  const sub = client.subscribe('evt.workspace.>');
  void (async () => {
    for await (const m of sub) seen.push({ subject: m.subject, data: JSON.parse(new TextDecoder().decode(m.data)) });
  })();
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_BUS: url } });
}, 60_000);

afterAll(async () => {
  await closeAndClean(p);
  await client?.close();
  nats?.kill();
});

const eventsOf = (id: string) => seen.filter((e) => e.data.workspace.id === id).map((e) => e.subject);

test('create, start, a stop behind Keel\'s back and delete are published as evt.workspace.*', async () => {
  const res = await p.api('workspaces', '/api/workspaces', { method: 'POST', json: { name: 'evented', template: 'minimal' }, as: 'erin' });
  const { id } = (await res.json()) as any;
  await waitFor('started', () => eventsOf(id).includes('evt.workspace.started'));
  const created = seen.find((e) => e.subject === 'evt.workspace.created' && e.data.workspace.id === id)!;
  expect(created.data).toMatchObject({ event: 'workspace.created', owner: 'erin', workspace: { id, name: 'evented', status: 'creating' } });
  expect(new Date(created.data.timestamp).toISOString()).toBe(created.data.timestamp);

  const w = (await (await p.api('workspaces', `/api/workspaces/${id}`, { as: 'erin' })).json()) as any;
  docker('kill', w.containerId);
  await waitFor('stopped', () => eventsOf(id).includes('evt.workspace.stopped'));
  expect(seen.find((e) => e.subject === 'evt.workspace.stopped' && e.data.workspace.id === id)!.data.workspace.status).toBe('stopped');

  await p.api('workspaces', `/api/workspaces/${id}/restart`, { method: 'POST', as: 'erin' });
  await waitFor('restarted', () => eventsOf(id).includes('evt.workspace.restarted'));

  await p.api('workspaces', `/api/workspaces/${id}?volumes=true`, { method: 'DELETE', as: 'erin' });
  await waitFor('deleted', () => eventsOf(id).includes('evt.workspace.deleted'));
  expect(eventsOf(id)).toEqual([
    'evt.workspace.created',
    'evt.workspace.started',
    'evt.workspace.stopped',
    'evt.workspace.restarted',
    'evt.workspace.started',
    'evt.workspace.deleted',
  ]);
});

test('a failure is published as evt.workspace.failed with its reason', async () => {
  const res = await p.api('workspaces', '/api/workspaces', {
    method: 'POST',
    json: { name: 'fails', template: 'minimal', repo: { url: 'http://127.0.0.1:1/none.git' } },
  });
  const { id } = (await res.json()) as any;
  await waitFor('failed', () => eventsOf(id).includes('evt.workspace.failed'));
  const failed = seen.find((e) => e.subject === 'evt.workspace.failed' && e.data.workspace.id === id)!;
  expect(failed.data.workspace.status).toBe('failed');
  expect(failed.data.workspace.reason).toContain('git clone failed');
});
