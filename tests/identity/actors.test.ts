// Actors and their API keys through HTTP: admin only, keys shown once and stored hashed, rotation,
// disabling and policy changes ending sessions, problem+json for every error.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { directConnection, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { bearer, createActor, openSession, postSession, READ, refresh, SCAN, startGuardedApp } from '../helpers/identity';

let p: TestPlatform;
let guard: ReturnType<typeof startGuardedApp>;

beforeAll(async () => {
  p = await startTestPlatform({ services: ['identity'] });
  guard = startGuardedApp(p.bus, { liveCacheMs: 0 });
});
afterAll(async () => {
  guard.stop();
  await p.close();
});

/** An actor's row as stored, read past the service: from PostgreSQL on its pass, else the SQLite file. */
async function storedActor(id: string): Promise<Record<string, unknown>> {
  const db = directConnection(p);
  try {
    return (await db.all('select * from identity_actors where id = ?', [id]))[0]!;
  } finally {
    await db.close();
  }
}

describe('creating actors', () => {
  test('an admin creates an actor and receives its API key once', async () => {
    const res = await p.api('identity', '/actors', { method: 'POST', as: 'admin', json: { name: 'ingest', policies: [SCAN, READ] } });
    expect(res.status).toBe(201);
    const { actor, apiKey } = await res.json();
    expect(apiKey).toMatch(/^keel_ak_[A-Za-z0-9_-]{43}$/);
    expect(actor).toMatchObject({ name: 'ingest', policies: [READ, SCAN].sort(), disabled: false, apiKeyHint: apiKey.slice(0, 12) });
    const got = await p.api('identity', `/actors/${actor.id}`, { as: 'admin' });
    expect(got.status).toBe(200);
    const text = await got.text();
    expect(text).not.toContain(apiKey);
    expect(JSON.parse(text).actor.id).toBe(actor.id);
  });

  test('only the SHA-256 of the API key is stored', async () => {
    const { actor, apiKey } = await createActor(p);
    const row = await storedActor(actor.id);
    expect(row.api_key_hash).toBe(createHash('sha256').update(apiKey).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(apiKey.slice(8));
  });

  test('without a token 401 unauthenticated; with a non-admin workspace token 403 forbidden', async () => {
    const anon = await p.api('identity', '/actors', { method: 'POST', as: null, json: { name: 'x', policies: [] } });
    expect(anon.status).toBe(401);
    expect(anon.headers.get('content-type')).toBe('application/problem+json');
    expect((await anon.json()).code).toBe('unauthenticated');
    const alice = await p.api('identity', '/actors', { method: 'POST', as: 'alice', json: { name: 'x', policies: [] } });
    expect(alice.status).toBe(403);
    expect((await alice.json()).code).toBe('forbidden');
  });

  test('an admin token signed with another secret answers 401', async () => {
    const { mintToken } = await import('../../src/platform/auth/workspace-token');
    const forged = mintToken('b'.repeat(64), { sub: 'admin', role: 'admin', ttlSeconds: 60 });
    const res = await fetch(p.url('identity') + '/actors', { headers: bearer(forged) });
    expect(res.status).toBe(401);
  });

  test('an access token with admin:identity may administer; one without it may not', async () => {
    const boss = await openSession(p, (await createActor(p, ['admin:identity'])).apiKey);
    const res = await fetch(p.url('identity') + '/actors', { method: 'POST', headers: { ...bearer(boss.accessToken), 'content-type': 'application/json' }, body: JSON.stringify({ name: 'made-by-boss', policies: [READ] }) });
    expect(res.status).toBe(201);
    const worker = await openSession(p, (await createActor(p, [SCAN])).apiKey);
    const denied = await fetch(p.url('identity') + '/actors', { headers: bearer(worker.accessToken) });
    expect(denied.status).toBe(403);
    expect((await denied.json()).code).toBe('forbidden');
  });

  test('an unknown policy answers 422 validation without echoing it', async () => {
    const res = await p.api('identity', '/actors', { method: 'POST', as: 'admin', json: { name: 'x', policies: ['root:everything-s3cr3t'] } });
    expect(res.status).toBe(422);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ code: 'validation', on: 'body' });
    expect(text).not.toContain('s3cr3t');
  });

  test('answers that carry an API key tell caches not to store them', async () => {
    const created = await p.api('identity', '/actors', { method: 'POST', as: 'admin', json: { name: 'cached', policies: [SCAN] } });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const { actor } = await created.json();
    const rotated = await p.api('identity', `/actors/${actor.id}/keys/rotate`, { method: 'POST', as: 'admin' });
    expect(rotated.status).toBe(200);
    expect(rotated.headers.get('cache-control')).toBe('no-store');
  });

  test('an unknown actor answers 404 IDENTITY_ACTOR_NOT_FOUND', async () => {
    const res = await p.api('identity', '/actors/act_nope', { as: 'admin' });
    expect(res.status).toBe(404);
    expect((await res.json()).code).toBe('IDENTITY_ACTOR_NOT_FOUND');
  });
});

describe('rotating, disabling, changing policies', () => {
  test('rotating the API key retires the old key and ends its sessions with reason key-rotated', async () => {
    const { actor, apiKey } = await createActor(p);
    const s = await openSession(p, apiKey);
    const res = await p.api('identity', `/actors/${actor.id}/keys/rotate`, { method: 'POST', as: 'admin' });
    expect(res.status).toBe(200);
    const rotated = await res.json();
    expect(rotated.apiKey).not.toBe(apiKey);
    expect(rotated.actor.keyRotatedAt).toBeNumber();
    expect((await postSession(p, { apiKey })).status).toBe(401);
    const scan = await guard.scan(s.accessToken);
    expect(scan.status).toBe(401);
    expect(await scan.json()).toMatchObject({ code: 'reauth-required', reason: 'key-rotated' });
    const next = await postSession(p, { apiKey: rotated.apiKey });
    expect(next.status).toBe(201);
    expect((await guard.scan((await next.json()).accessToken)).status).toBe(200);
  });

  test('a disabled actor cannot open sessions and its sessions need re-authentication', async () => {
    const { actor, apiKey } = await createActor(p);
    const s = await openSession(p, apiKey);
    const res = await p.api('identity', `/actors/${actor.id}`, { method: 'PATCH', as: 'admin', json: { disabled: true } });
    expect(res.status).toBe(200);
    expect((await res.json()).actor.disabled).toBe(true);
    expect(await (await guard.scan(s.accessToken)).json()).toMatchObject({ code: 'reauth-required', reason: 'actor-disabled' });
    expect((await postSession(p, { apiKey })).status).toBe(401);
    await p.api('identity', `/actors/${actor.id}`, { method: 'PATCH', as: 'admin', json: { disabled: false } });
    expect((await postSession(p, { apiKey })).status).toBe(201);
  });

  test('re-enabling an actor does not bring back the sessions that disabling ended', async () => {
    const { actor, apiKey } = await createActor(p);
    const s = await openSession(p, apiKey);
    for (const disabled of [true, false]) {
      const res = await p.api('identity', `/actors/${actor.id}`, { method: 'PATCH', as: 'admin', json: { disabled } });
      expect(res.status).toBe(200);
    }
    expect(await (await guard.scan(s.accessToken)).json()).toMatchObject({ code: 'reauth-required', reason: 'actor-disabled' });
    const refreshed = await refresh(p, s.refreshToken);
    expect(refreshed.status).toBe(401);
    expect(await refreshed.json()).toMatchObject({ code: 'reauth-required', reason: 'actor-disabled' });
    const next = await openSession(p, apiKey);
    expect((await guard.scan(next.accessToken)).status).toBe(200);
  });

  test('changing policies ends sessions (policies-changed); a new session carries the new policies', async () => {
    const { actor, apiKey } = await createActor(p, [SCAN]);
    const s = await openSession(p, apiKey);
    const res = await p.api('identity', `/actors/${actor.id}`, { method: 'PATCH', as: 'admin', json: { policies: [READ] } });
    expect(res.status).toBe(200);
    expect(await (await guard.scan(s.accessToken)).json()).toMatchObject({ code: 'reauth-required', reason: 'policies-changed' });
    const next = await openSession(p, apiKey);
    expect((await guard.works(next.accessToken)).status).toBe(200);
    expect((await guard.scan(next.accessToken)).status).toBe(403);
  });
});

describe('probes and description', () => {
  test('GET /health and /version answer without a token', async () => {
    const h = await fetch(p.url('identity') + '/health');
    expect(h.status).toBe(200);
    expect((await h.json()).status).toBe('ok');
    expect((await (await fetch(p.url('identity') + '/version')).json()).component).toBe('identity');
  });

  test('the OpenAPI description lists every identity route with its errors', async () => {
    const doc = await (await fetch(p.url('identity') + '/openapi.json')).json();
    for (const path of ['/actors', '/actors/{id}', '/actors/{id}/keys/rotate', '/sessions', '/sessions/refresh', '/sessions/{id}', '/.well-known/jwks.json', '/keys/rotate']) {
      expect(doc.paths[path]).toBeDefined();
    }
    expect(Object.keys(doc.paths['/sessions'].post.responses)).toEqual(expect.arrayContaining(['201', '401', '422']));
  });
});
