// A service's port before its app exists (src/platform/http/listener.ts): /health answers at once,
// every other request waits for the app, and a start-up that fails answers the waiting ones with 503.
import { afterEach, expect, test } from 'bun:test';
import { Elysia } from 'elysia';
import { openListener, type Listener } from '../../../src/platform/http/listener';
import { systemClock } from '../../../src/platform/runtime';
import pkg from '../../../package.json';

let listener: Listener | undefined;
afterEach(async () => {
  await listener?.server.stop(true);
  listener = undefined;
});

const open = () => (listener = openListener({ hostname: '127.0.0.1', port: 0, maxRequestBodySize: 1024, clock: systemClock }));
const url = (l: Listener, path: string) => `http://127.0.0.1:${l.server.port}${path}`;
/** Settles within `ms`, or answers 'pending'. */
const within = <T>(p: Promise<T>, ms: number) => Promise.race([p, Bun.sleep(ms).then(() => 'pending' as const)]);

test('GET /health answers ok with the probe fields before any app is attached', async () => {
  const l = open();
  const res = await fetch(url(l, '/health'));
  expect(res.status).toBe(200);
  const body = (await res.json()) as Record<string, unknown>;
  expect(body).toEqual({ status: 'ok', timestamp: expect.any(Number), uptime: expect.any(Number), version: pkg.version });
  expect(Math.abs((body.timestamp as number) - Date.now())).toBeLessThan(5000);
});

test('any other request waits for the app, then gets its answer', async () => {
  const l = open();
  const waiting = fetch(url(l, '/hello'));
  expect(await within(waiting, 300)).toBe('pending');
  l.attach(new Elysia().get('/hello', () => 'from the app'));
  const res = await waiting;
  expect(res.status).toBe(200);
  expect(await res.text()).toBe('from the app');
});

test('once attached, /health is the app own route and the app sees its server', async () => {
  const l = open();
  const app = new Elysia().get('/health', () => ({ status: 'from the app' }));
  l.attach(app);
  expect(app.server).toBe(l.server);
  expect(await (await fetch(url(l, '/health'))).json()).toEqual({ status: 'from the app' });
});

test('a start-up that fails answers the waiting requests with 503 and closes the port', async () => {
  const l = open();
  const waiting = fetch(url(l, '/hello'));
  expect(await within(waiting, 200)).toBe('pending');
  await l.abandon();
  expect((await waiting).status).toBe(503);
  await expect(fetch(url(l, '/health'))).rejects.toThrow();
});

test('a POST to /health is not the probe: it waits for the app like any request', async () => {
  const l = open();
  const waiting = fetch(url(l, '/health'), { method: 'POST' });
  expect(await within(waiting, 200)).toBe('pending');
  l.attach(new Elysia().post('/health', () => 'posted'));
  expect(await (await waiting).text()).toBe('posted');
});

test('once attached, a route answers whatever the Host header names, a short one included', async () => {
  const l = open();
  l.attach(new Elysia().get('/api/things/:id', ({ params }) => `thing ${params.id}`));
  for (const host of ['x', 'keel.example:8080']) {
    const res = await fetch(url(l, '/api/things/7'), { headers: { host } });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('thing 7');
  }
});
