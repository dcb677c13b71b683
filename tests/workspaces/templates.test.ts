// GET /api/templates over HTTP: the template registry as a user reads it before creating a workspace,
// against the real engine (whether each template's image is there) and against an engine that does
// not answer.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { docker, inspect } from '../helpers/docker';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';
import { closeAndClean, createRunning, errorCode } from '../helpers/workspaces';

// An image tag of this file's own, so the minimal image starts absent whatever other tests built.
const MINIMAL = `keel-test/minimal:templates-${process.pid}`;
let p: TestPlatform;
let away: TestPlatform | undefined;

interface Listed {
  templates: { name: string; description: string; offline: boolean; imagePresent: boolean | null }[];
  default: string;
}

const listTemplates = async (platform: TestPlatform): Promise<Listed> => {
  const res = await platform.api('workspaces', '/api/templates');
  expect(res.status).toBe(200);
  return (await res.json()) as Listed;
};
const entry = (l: Listed, name: string) => l.templates.find((t) => t.name === name);

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_WORKSPACE_MINIMAL_IMAGE: MINIMAL } });
});
afterAll(async () => {
  await away?.close();
  await closeAndClean(p);
  docker('rmi', '-f', MINIMAL);
});

describe('GET /api/templates', () => {
  test('lists every template with its description, whether Keel builds it offline, and the default', async () => {
    const l = await listTemplates(p);
    expect(l.templates.map((t) => t.name).sort()).toEqual(['bun-typescript', 'minimal']);
    expect(l.default).toBe('bun-typescript');
    for (const t of l.templates) expect(t.description.length).toBeGreaterThan(0);
    expect(entry(l, 'minimal')).toMatchObject({ offline: true, imagePresent: false });
    expect(entry(l, 'bun-typescript')!.offline).toBe(true);
  });

  test("says the minimal image is present once a workspace made the engine build it", async () => {
    expect(inspect('image', MINIMAL)).toBeNull();
    await createRunning(p, 'templates-minimal', { timeoutMs: 60_000 });
    expect(entry(await listTemplates(p), 'minimal')!.imagePresent).toBe(true);
  }, 90_000);

  test('refuses a request without a token in the envelope error model', async () => {
    const res = await p.api('workspaces', '/api/templates', { as: null });
    expect(res.status).toBe(401);
    expect(await errorCode(res)).toBe('UNAUTHORIZED');
  });

  test('is documented in OpenAPI as listTemplates with its response schema', async () => {
    const doc = (await (await fetch(p.url('workspaces') + '/openapi.json')).json()) as any;
    const op = doc.paths['/api/templates']?.get;
    expect(op?.operationId).toBe('listTemplates');
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '401']));
  });

  test('answers imagePresent null, not an error, when the engine does not answer', async () => {
    // Nothing listens on port 1: every engine call is refused at the socket.
    away = await startTestPlatform({ services: ['workspaces'], env: { DOCKER_HOST: 'tcp://127.0.0.1:1', APP_WORKSPACE_MINIMAL_IMAGE: MINIMAL } });
    const l = await listTemplates(away);
    expect(l.templates.map((t) => t.imagePresent)).toEqual([null, null]);
  }, 30_000);
});
