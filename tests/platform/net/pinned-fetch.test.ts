// The pinned fetch against real listeners on loopback. DNS is the one outside system replaced: the
// resolver is a parameter of the platform function, so a name that rebinds (first an allowed address,
// then a refused one) is tested without a DNS server. Names here end in `.test`, which the system
// resolver never answers: a request that succeeds was dialled to the address the resolver gave.
// "Inside" stands for an address Keel keeps out of reach (127.0.0.2, denied by the policy here as the
// workspaces' guard denies Keel's own ports, metadata, other tenants' networks).
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TargetRefused, type Resolver, type TargetPolicy } from '../../../src/platform/net/address-policy';
import { createPinnedFetch } from '../../../src/platform/net/pinned-fetch';

let outside: ReturnType<typeof Bun.serve>;
let inside: ReturnType<typeof Bun.serve>;
const insideHits: string[] = [];
const policy: TargetPolicy = { denyPrivate: false, deny: { cidrs: ['127.0.0.2/32'] } };

beforeAll(() => {
  // Both on one port (the URL names one), on two loopback addresses.
  for (let attempt = 0; ; attempt++) {
    outside = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req) {
        const path = new URL(req.url).pathname;
        if (path === '/redirect') return new Response(null, { status: 302, headers: { location: `http://127.0.0.2:${outside.port}/secret` } });
        if (path === '/stream') {
          // One event now, the rest never: a caller reads the first while the answer stays open.
          return new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode('data: first\n\n')) }), { headers: { 'content-type': 'text/event-stream' } });
        }
        if (path === '/slow') await Bun.sleep(2000);
        return Response.json({ where: 'outside', host: req.headers.get('host'), method: req.method, body: req.method === 'POST' ? await req.text() : null });
      },
    });
    try {
      inside = Bun.serve({ hostname: '127.0.0.2', port: outside.port, fetch: (req) => (insideHits.push(req.url), new Response('inside')) });
      break;
    } catch (e) {
      outside.stop(true);
      if (attempt > 5) throw e;
    }
  }
});
afterAll(() => {
  outside.stop(true);
  inside.stop(true);
});

/** A resolver answering `answers` in turn, round and round; counts its calls. */
function rebinding(answers: string[]) {
  const r: { calls: number; resolve: Resolver } = { calls: 0, resolve: async () => [{ address: answers[r.calls++ % answers.length]!, family: 4 }] };
  return r;
}

test('a name is resolved once per request and the connection goes to the checked address, Host kept', async () => {
  const dns = rebinding(['127.0.0.1']);
  const pinned = createPinnedFetch({ policy, resolve: dns.resolve });
  const res = await pinned(`http://pinned.test:${outside.port}/hello`, { method: 'POST', body: 'ping', headers: { 'content-type': 'text/plain' } });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ where: 'outside', host: `pinned.test:${outside.port}`, method: 'POST', body: 'ping' });
  expect(dns.calls).toBe(1);
  pinned.close();
});

test('a name that rebinds from an allowed address to a refused one never reaches the refused one', async () => {
  const dns = rebinding(['127.0.0.1', '127.0.0.2']);
  const pinned = createPinnedFetch({ policy, resolve: dns.resolve });
  const outcomes: string[] = [];
  for (let i = 0; i < 6; i++) {
    try {
      const res = await pinned(`http://rebind.test:${outside.port}/`);
      outcomes.push(((await res.json()) as { where: string }).where);
    } catch (e) {
      expect(e).toBeInstanceOf(TargetRefused);
      outcomes.push((e as TargetRefused).refusal);
    }
  }
  expect(outcomes).toEqual(['outside', 'denied', 'outside', 'denied', 'outside', 'denied']);
  expect(dns.calls).toBe(6);
  expect(insideHits).toEqual([]);
  pinned.close();
});

test('a name resolving to a metadata or link-local address is refused before any connection', async () => {
  for (const [address, refusal] of [['169.254.169.254', 'metadata'], ['169.254.1.1', 'link-local'], ['100.100.100.200', 'metadata']] as const) {
    const pinned = createPinnedFetch({ policy, resolve: rebinding([address]).resolve });
    const err = await pinned(`http://meta.test:${outside.port}/`).catch((e) => e);
    expect(err).toBeInstanceOf(TargetRefused);
    expect(err.refusal).toBe(refusal);
  }
});

test('loopback literals and names are refused when the policy denies private addresses', async () => {
  const pinned = createPinnedFetch({ policy: { denyPrivate: true }, resolve: rebinding(['127.0.0.1']).resolve });
  for (const url of [`http://127.0.0.1:${outside.port}/`, `http://loop.test:${outside.port}/`, `http://[::ffff:127.0.0.1]:${outside.port}/`]) {
    const err = await pinned(url).catch((e) => e);
    expect(err, url).toBeInstanceOf(TargetRefused);
    expect(err.refusal).toBe('private');
  }
});

test('a redirect is not followed: the 3xx is the answer, and its target is never requested', async () => {
  const pinned = createPinnedFetch({ policy, resolve: rebinding(['127.0.0.1']).resolve });
  const res = await pinned(`http://pinned.test:${outside.port}/redirect`);
  expect(res.status).toBe(302);
  expect(res.headers.get('location')).toContain('/secret');
  const err = await pinned(`http://pinned.test:${outside.port}/redirect`, { redirect: 'error' }).catch((e) => e);
  expect(err).toBeInstanceOf(TypeError);
  expect(insideHits).toEqual([]);
  pinned.close();
});

test('an answer streams: the first event is read while the answer is still open', async () => {
  const pinned = createPinnedFetch({ policy, resolve: rebinding(['127.0.0.1']).resolve });
  const res = await pinned(`http://pinned.test:${outside.port}/stream`);
  expect(res.headers.get('content-type')).toBe('text/event-stream');
  const reader = res.body!.getReader();
  const first = await Promise.race([reader.read(), Bun.sleep(3000).then(() => null)]);
  expect(new TextDecoder().decode(first!.value)).toBe('data: first\n\n');
  await reader.cancel();
  pinned.close();
});

test('an aborted request rejects with the signal reason', async () => {
  const pinned = createPinnedFetch({ policy, resolve: rebinding(['127.0.0.1']).resolve });
  const started = performance.now();
  const err = await pinned(`http://pinned.test:${outside.port}/slow`, { signal: AbortSignal.timeout(200) }).catch((e) => e);
  expect(err.name).toBe('TimeoutError');
  expect(performance.now() - started).toBeLessThan(1500);
  pinned.close();
});

test('only http and https URLs are fetched', async () => {
  const pinned = createPinnedFetch({ policy });
  expect(await pinned('file:///etc/passwd').catch((e) => e)).toBeInstanceOf(TypeError);
});

test('https: the connection goes to the checked address, and the certificate is verified against the name', async () => {
  // A self-signed certificate for secure.test, made by openssl on the spot.
  const dir = mkdtempSync(join(tmpdir(), 'keel-pinned-tls-'));
  const made = Bun.spawnSync(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=secure.test', '-addext', 'subjectAltName=DNS:secure.test'], { stderr: 'pipe' });
  expect(made.exitCode).toBe(0);
  const cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
  const tls = Bun.serve({ hostname: '127.0.0.1', port: 0, tls: { cert, key: readFileSync(join(dir, 'key.pem'), 'utf8') }, fetch: (req) => Response.json({ host: req.headers.get('host') }) });
  try {
    const pinned = createPinnedFetch({ policy, resolve: rebinding(['127.0.0.1']).resolve, ca: cert });
    const res = await pinned(`https://secure.test:${tls.port}/`);
    expect(await res.json()).toEqual({ host: `secure.test:${tls.port}` });
    // Dialled to the same address under another name: the certificate does not name it.
    const wrong = await pinned(`https://other.test:${tls.port}/`).catch((e) => e);
    expect(wrong).toBeInstanceOf(Error);
    expect(String(wrong.code ?? wrong.message)).toContain('ALTNAME');
    // Not trusted at all without the CA: the check is not skipped.
    const untrusted = await createPinnedFetch({ policy, resolve: rebinding(['127.0.0.1']).resolve })(`https://secure.test:${tls.port}/`).catch((e) => e);
    expect(untrusted).toBeInstanceOf(Error);
    pinned.close();
  } finally {
    tls.stop(true);
    rmSync(dir, { recursive: true, force: true });
  }
});
