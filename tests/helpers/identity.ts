// Shared steps of the identity tests: an admin creating actors, opening sessions, and a small
// guarded app built from the real bearerGuard plugin on a platform's bus.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Elysia, t } from 'elysia';
import { importJWK, SignJWT, type JWK } from 'jose';
import type { Bus } from '../../src/platform/bus/bus';
import { bearerGuard, type BearerGuardOptions } from '../../src/platform/http/bearer-guard';
import { loadCatalogConfig } from '../../src/services/catalog/catalog.config';
import { errorHandling } from '../../src/platform/http/errors';
import { startTestPlatform, type TestPlatform } from './platform';
import { problemErrorTable } from '../../src/platform/platform.errors';

export const SCAN = 'resource:asset:scan';
export const READ = 'resource:work:read';
/** The catalog's own budget for POST /scan (media spec: 5/s, burst 20 per actor), as the catalog configures it. */
const SCAN_BUDGET = loadCatalogConfig({}).scanBudget;

export async function createActor(p: TestPlatform, policies: string[] = [SCAN], name = 'scanner') {
  const res = await p.api('identity', '/actors', { method: 'POST', as: 'admin', json: { name, policies } });
  if (res.status !== 201) throw new Error(`create actor: ${res.status} ${await res.text()}`);
  return (await res.json()) as { actor: { id: string; policies: string[] }; apiKey: string };
}

export interface Pair {
  session: { id: string; actorId: string; expiresAt: number; refreshExpiresAt: number };
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
}

/** POST /sessions as a client without a token: the raw answer. */
export const postSession = (p: TestPlatform, body: unknown) => p.api('identity', '/sessions', { method: 'POST', as: null, json: body });

export async function openSession(p: TestPlatform, apiKey: string): Promise<Pair> {
  const res = await postSession(p, { apiKey });
  if (res.status !== 201) throw new Error(`open session: ${res.status} ${await res.text()}`);
  return res.json();
}

/** A platform running only identity, with one actor holding `policies` and a session of it. */
export async function identityWithSession(policies: string[] = [SCAN]) {
  const p = await startTestPlatform({ services: ['identity'] });
  const a = await createActor(p, policies);
  return { p, actorId: a.actor.id, s: await openSession(p, a.apiKey) };
}

export const refresh = (p: TestPlatform, refreshToken: string) =>
  p.api('identity', '/sessions/refresh', { method: 'POST', as: null, json: { refreshToken } });

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A media-like app guarded by the real plugin: POST /scan (scan policy, scan budget), GET /works (read policy). */
export function startGuardedApp(bus: Bus, opts: Partial<BearerGuardOptions> = {}) {
  const app = new Elysia()
    .use(errorHandling('problem', { production: false, errors: problemErrorTable }))
    .use(bearerGuard({ service: 'media-test', bus, limits: { scan: SCAN_BUDGET }, ...opts }))
    .post('/scan', ({ principal, body }) => ({ actorId: principal.actorId, sessionId: principal.sessionId, path: body.path }), {
      policy: SCAN,
      rateLimit: 'scan',
      body: t.Object({ path: t.String({ minLength: 1 }) }),
    })
    .get('/works', ({ principal }) => ({ actorId: principal.actorId }), { policy: READ });
  app.listen({ hostname: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${app.server!.port}`;
  return {
    url,
    scan: (token?: string) =>
      fetch(url + '/scan', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? bearer(token) : {}) },
        body: JSON.stringify({ path: 'movies/a.mkv' }),
      }),
    works: (token: string) => fetch(url + '/works', { headers: bearer(token) }),
    stop: () => app.stop(true),
  };
}

/** The identity service's current private key, read from its data dir, to forge tokens a real key signed. */
export async function signingKeyOf(p: TestPlatform) {
  const keys = JSON.parse(readFileSync(join(p.dataDir, 'identity-keys.json'), 'utf8')) as { kid: string; jwk: JWK; retiredAt: number | null }[];
  const k = keys.find((x) => x.retiredAt === null)!;
  return { kid: k.kid, jwk: k.jwk, privateKey: await importJWK(k.jwk, 'EdDSA') };
}

/** Signs claims with the identity key, defaults being those of a genuine access token. */
export async function forge(p: TestPlatform, claims: Record<string, unknown>, header: Record<string, unknown> = {}) {
  const key = await signingKeyOf(p);
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: 'keel-identity', aud: 'keel-media', iat: now, exp: now + 300, policies: [SCAN], ...claims })
    .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: 'at+jwt', ...header })
    .sign(key.privateKey);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
