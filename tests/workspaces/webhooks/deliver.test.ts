// deliver.ts against a real receiver on 127.0.0.1. DNS is the one outside system replaced here: the
// resolver is injected, so "a name that resolves to link-local" is tested without a DNS server. The
// socket is dialled to the address the resolver gave and was checked (no second lookup).
import { afterAll, expect, test } from 'bun:test';
import { createDeliverer, type Resolver } from '../../../src/services/workspaces/webhooks/deliver';
import { startReceiver } from './receiver';

const receiver = startReceiver();
afterAll(() => receiver.stop());

const names: Record<string, string[]> = {
  'receiver.test': ['127.0.0.1'],
  'metadata.test': ['169.254.169.254'],
  'mapped-metadata.test': ['::ffff:169.254.169.254'],
  'mixed.test': ['127.0.0.1', '169.254.169.254'],
  'alibaba.test': ['100.100.100.200'],
};
let lookups = 0;
const resolve: Resolver = async (host) => {
  lookups++;
  const found = names[host];
  if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

const send = (url: string, opts: { denyPrivate?: boolean; timeoutMs?: number; maxResponseBytes?: number } = {}) =>
  createDeliverer({ policy: { denyPrivate: opts.denyPrivate ?? false }, timeoutMs: opts.timeoutMs ?? 5000, resolve, maxResponseBytes: opts.maxResponseBytes }).send({
    url,
    headers: { 'content-type': 'application/json', 'x-test': 'yes' },
    body: '{"event":"ping"}',
  });

test('a name is resolved once and the request reaches the checked address with the name as Host', async () => {
  const before = receiver.received.length;
  const n = lookups;
  const r = await send(`http://receiver.test:${receiver.port}/named`);
  expect(r.status).toBe(204);
  expect(r.error).toBeNull();
  expect(lookups - n).toBe(1);
  const got = receiver.received[before]!;
  expect(got.path).toBe('/named');
  expect(got.headers.host).toBe(`receiver.test:${receiver.port}`);
  expect(got.raw).toBe('{"event":"ping"}');
  expect(got.headers['x-test']).toBe('yes');
});

test('a name that resolves to a link-local or metadata address is refused before any connection', async () => {
  const before = receiver.received.length;
  for (const host of ['metadata.test', 'mapped-metadata.test', 'alibaba.test']) {
    const r = await send(`http://${host}:${receiver.port}/`);
    expect(r.status).toBeNull();
    expect(r.error?.kind).toBe('refused');
  }
  expect(receiver.received.length).toBe(before);
});

test('a name with one refused address among its answers is refused', async () => {
  const r = await send(`http://mixed.test:${receiver.port}/`);
  expect(r.error?.kind).toBe('refused');
});

test('loopback is refused after resolution when private targets are denied, literal or named', async () => {
  for (const url of [`http://receiver.test:${receiver.port}/`, `http://127.0.0.1:${receiver.port}/`]) {
    const r = await send(url, { denyPrivate: true });
    expect(r.error?.kind).toBe('refused');
    expect(r.error?.message).toContain('loopback');
  }
});

test('a name that does not resolve is a dns error', async () => {
  const r = await send('http://nowhere.test/');
  expect(r.error?.kind).toBe('dns');
});

test('redirects are not followed: the 3xx is the answer', async () => {
  receiver.answer = () => ({ status: 302, headers: { location: 'http://169.254.169.254/' } });
  const before = receiver.received.length;
  const r = await send(receiver.url);
  receiver.answer = undefined;
  expect(r.status).toBe(302);
  expect(receiver.received.length).toBe(before + 1);
});

test('a receiver slower than the time limit is a timeout', async () => {
  receiver.answer = () => ({ status: 200, delayMs: 1500 });
  const r = await send(receiver.url, { timeoutMs: 300 });
  receiver.answer = undefined;
  expect(r.status).toBeNull();
  expect(r.error?.kind).toBe('timeout');
});

test('a large answer is read only up to the cap, and the snippet kept is 1 KiB', async () => {
  receiver.answer = () => ({ status: 500, body: 'x'.repeat(5 * 1024 * 1024) });
  const r = await send(receiver.url, { maxResponseBytes: 64 * 1024 });
  receiver.answer = undefined;
  expect(r.status).toBe(500);
  expect(r.bodySnippet.length).toBe(1024);
});

test('Retry-After is reported with the status', async () => {
  receiver.answer = () => ({ status: 429, headers: { 'retry-after': '7' } });
  const r = await send(receiver.url);
  receiver.answer = undefined;
  expect(r.status).toBe(429);
  expect(r.retryAfter).toBe('7');
});

test('a closed port is a network error', async () => {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  const r = await send(`http://127.0.0.1:${port}/`);
  expect(r.error?.kind).toBe('network');
});
