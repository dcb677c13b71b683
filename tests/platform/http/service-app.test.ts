// The stack every service starts from (platform/http/service-app.ts), seen from outside on the
// real platform: the same probes, OpenAPI description and error model on each of the five services.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { SERVICE_NAMES } from '../../../src/platform/config';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';

let p: TestPlatform;
beforeAll(async () => {
  p = await startTestPlatform({ services: [...SERVICE_NAMES], env: { DOCKER_HOST: 'unix:///nonexistent/docker.sock' } });
});
afterAll(() => p.close());

const MEDIA = SERVICE_NAMES.filter((s) => s !== 'workspaces');

describe.each([...SERVICE_NAMES])('the %s service', (name) => {
  test('answers /version naming itself', async () => {
    const res = await fetch(p.url(name) + '/version');
    expect(res.status).toBe(200);
    expect((await res.json()).component).toBe(name);
  });

  test('answers /health with its timestamp and uptime', async () => {
    const body = await (await fetch(p.url(name) + '/health')).json();
    expect(body.status).toBe('ok');
    expect(body.uptime).toBeGreaterThan(0);
    expect(Math.abs(body.timestamp - Date.now())).toBeLessThan(60_000);
  });

  test('publishes an OpenAPI 3.0 description that lists its probes once under the probes tag', async () => {
    const doc = (await (await fetch(p.url(name) + '/openapi.json')).json()) as any;
    expect(doc.openapi).toMatch(/^3\.0\./);
    expect(doc.paths['/health'].get.tags).toEqual(['probes']);
    expect(doc.tags.filter((t: { name: string }) => t.name === 'probes')).toHaveLength(1);
  });
});

test('an unknown route answers in each service\'s own error model', async () => {
  const ws = await fetch(p.url('workspaces') + '/nope');
  expect(ws.status).toBe(404);
  expect((await ws.json()).error.code).toBe('NOT_FOUND');
  for (const name of MEDIA) {
    const res = await fetch(p.url(name) + '/nope');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toStartWith('application/problem+json');
    expect((await res.json()).code).toBe('not-found');
  }
});
