// Overhead of the Bearer guard per request, measured through app.handle (no network) on the same
// route with and without the guard: verify (EdDSA) + live-session check, cached (default settings:
// verified-token cache and 2 s live cache, warm) and uncached (both caches off).
// The identity service is the real one (startPlatform, in-process bus); uncached means every request
// asks qry.identity.session (memory bus, and NATS too when KEEL_TEST_NATS_URL is set).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Elysia } from 'elysia';
import { startPlatform, type Platform } from '../src/main';
import type { Bus } from '../src/platform/bus/bus';
import { createAccessTokenVerifier, importJwks } from '../src/platform/auth/access-token';
import { bearerGuard } from '../src/platform/http/bearer-guard';
import { errorHandling } from '../src/platform/http/errors';
import { mintToken } from '../src/platform/auth/workspace-token';
import { printTable, round } from './lib';
import { problemErrorTable } from '../src/platform/platform.errors';

const SECRET = 'c'.repeat(64);

async function platform(bus: string) {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-bench-guard-'));
  const p = await startPlatform({
    ...process.env,
    NODE_ENV: 'test',
    APP_QUIET_TOKEN: '1',
    APP_DATA_DIR: dataDir,
    APP_API_SECRET: SECRET,
    APP_SERVICES: 'identity',
    APP_IDENTITY_PORT: '0',
    APP_BUS: bus,
  });
  return { p, close: async () => (await p.stop(), rmSync(dataDir, { recursive: true, force: true })) };
}

async function session(p: Platform) {
  const admin = mintToken(SECRET, { sub: 'bench', role: 'admin', ttlSeconds: 600 });
  const created = await fetch(p.urls.identity + '/actors', {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', policies: ['resource:work:read'] }),
  }).then((r) => r.json() as Promise<{ apiKey: string }>);
  const s = await fetch(p.urls.identity + '/sessions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiKey: created.apiKey }),
  }).then((r) => r.json() as Promise<{ accessToken: string }>);
  return s.accessToken;
}

function apps(bus: Bus) {
  const base = () => new Elysia().use(errorHandling('problem', { production: true, errors: problemErrorTable }));
  return {
    baseline: base().get('/works', () => ({ ok: true })),
    cached: base().use(bearerGuard({ service: 'bench', bus, liveCacheMs: 2000 })).get('/works', () => ({ ok: true }), { policy: 'resource:work:read' }),
    // Every request verifies the signature and asks the bus.
    uncached: base()
      .use(bearerGuard({ service: 'bench', bus, liveCacheMs: 0, verifiedCacheSize: 0 }))
      .get('/works', () => ({ ok: true }), { policy: 'resource:work:read' }),
  };
}

/** Mean microseconds per call over `n` sequential calls, after a warm-up. */
async function perCall(n: number, fn: () => Promise<unknown>) {
  for (let i = 0; i < Math.min(300, n / 5); i++) await fn();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await fn();
  return ((performance.now() - t0) * 1000) / n;
}

async function measure(bus: Bus, token: string, n: number) {
  const a = apps(bus);
  const req = (app: Elysia<any, any, any, any, any, any, any>) => async () => {
    const res = await app.handle(new Request('http://localhost/works', { headers: { authorization: `Bearer ${token}` } }));
    if (res.status !== 200) throw new Error(`bench request answered ${res.status}`);
    await res.arrayBuffer();
  };
  const baseline = await perCall(n, req(a.baseline));
  const cached = await perCall(n, req(a.cached));
  const uncached = await perCall(n, req(a.uncached));
  return {
    baselineUs: round(baseline),
    guardCachedUs: round(cached),
    guardUncachedUs: round(uncached),
    overheadCachedUs: round(cached - baseline),
    overheadUncachedUs: round(uncached - baseline),
    ratioCached: round(cached / baseline),
    ratioUncached: round(uncached / baseline),
  };
}

export async function run(): Promise<Record<string, unknown>> {
  const n = Number(process.env.BENCH_GUARD_N ?? 3000);
  const results: Record<string, unknown> = { method: 'app.handle, sequential, mean per request', requests: n };
  const rows: Record<string, unknown>[] = [];

  const mem = await platform('memory');
  try {
    const token = await session(mem.p);
    const m = await measure(mem.p.bus, token, n);
    // The signature check alone, through the guard's verifier with the keys already imported.
    const keys = await importJwks((await mem.p.bus.request('qry.identity.jwks', {})).keys);
    const verify = createAccessTokenVerifier({ keyFor: async (kid) => keys.get(kid), cacheSize: 0 });
    results.memory = { ...m, verifyOnlyUs: round(await perCall(n, () => verify(token))) };
    rows.push({ bus: 'memory', ...(results.memory as object) });
  } finally {
    await mem.close();
  }

  const natsUrl = process.env.KEEL_TEST_NATS_URL;
  if (natsUrl) {
    const nats = await platform(natsUrl);
    try {
      const token = await session(nats.p);
      results.nats = await measure(nats.p.bus, token, Math.min(n, 1500));
      rows.push({ bus: 'nats', ...(results.nats as object) });
    } finally {
      await nats.close();
    }
  } else {
    results.nats = 'not measured: KEEL_TEST_NATS_URL unset';
  }
  printTable('Bearer guard overhead (microseconds per request)', rows);
  return results;
}

if (import.meta.main) {
  console.log(JSON.stringify(await run(), null, 2));
  process.exit(0);
}
