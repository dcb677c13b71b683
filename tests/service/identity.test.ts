// Identity's actors, API keys and sessions on a temp SQLite file and the memory bus, through
// app.handle: the rules of tests/identity (actors.test.ts, sessions.test.ts) in milliseconds. What
// needs the real parts stays there: guards on another process, NATS, replicas, PostgreSQL.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { decodeJwt } from 'jose';
import { startServiceApp, type ServiceApp } from '../helpers/service-app';
import { SCAN } from '../helpers/identity';

let s: ServiceApp;
beforeAll(async () => {
  s = await startServiceApp('identity');
});
afterAll(() => s.close());

async function createActor(policies = [SCAN]) {
  const res = await s.api('/actors', { method: 'POST', as: 'admin', json: { name: 'scanner', policies } });
  expect(res.status).toBe(201);
  return (await res.json()) as { actor: { id: string }; apiKey: string };
}
const openSession = async (apiKey: string) => {
  const res = await s.api('/sessions', { method: 'POST', as: null, json: { apiKey } });
  expect(res.status).toBe(201);
  return (await res.json()) as { accessToken: string; refreshToken: string; session: { id: string } };
};
const refresh = (refreshToken: string) => s.api('/sessions/refresh', { method: 'POST', as: null, json: { refreshToken } });

describe('actors', () => {
  test('an admin creates an actor and sees its API key once; reading it back never shows the key', async () => {
    const { actor, apiKey } = await createActor();
    expect(apiKey).toMatch(/^keel_ak_[A-Za-z0-9_-]{43}$/);
    const got = await s.api(`/actors/${actor.id}`, { as: 'admin' });
    expect(got.status).toBe(200);
    expect(await got.text()).not.toContain(apiKey);
  });

  test('without a token 401 unauthenticated, with a non-admin token 403 forbidden, both problem+json', async () => {
    const anon = await s.api('/actors', { method: 'POST', as: null, json: { name: 'x', policies: [] } });
    expect(anon.status).toBe(401);
    expect(anon.headers.get('content-type')).toBe('application/problem+json');
    expect((await anon.json()).code).toBe('unauthenticated');
    const alice = await s.api('/actors', { method: 'POST', json: { name: 'x', policies: [] } });
    expect(alice.status).toBe(403);
    expect((await alice.json()).code).toBe('forbidden');
  });
});

describe('sessions', () => {
  test("an API key opens a session whose access token carries the actor's policies", async () => {
    const { actor, apiKey } = await createActor();
    const body = await openSession(apiKey);
    expect(body.refreshToken).toMatch(/^keel_rt_[A-Za-z0-9_-]{43}$/);
    expect(decodeJwt(body.accessToken)).toMatchObject({ sub: actor.id, sid: body.session.id, policies: [SCAN], iss: 'keel-identity' });
  });

  test('a wrong API key answers 401 unauthenticated without echoing it', async () => {
    const apiKey = 'keel_ak_' + 'A'.repeat(43);
    const res = await s.api('/sessions', { method: 'POST', as: null, json: { apiKey } });
    expect(res.status).toBe(401);
    const text = await res.text();
    expect(JSON.parse(text).code).toBe('unauthenticated');
    expect(text).not.toContain(apiKey);
  });

  test('a body without apiKey answers 422 validation', async () => {
    const res = await s.api('/sessions', { method: 'POST', as: null, json: {} });
    expect(res.status).toBe(422);
    expect((await res.json()).code).toBe('validation');
  });

  test('a used refresh token presented again revokes the session (theft detection)', async () => {
    const first = await openSession((await createActor()).apiKey);
    const next = await refresh(first.refreshToken);
    expect(next.status).toBe(200);
    const replay = await refresh(first.refreshToken);
    expect(replay.status).toBe(401);
    expect(await replay.json()).toMatchObject({ code: 'reauth-required', reason: 'refresh-reuse' });
    const after = await refresh((await next.json()).refreshToken);
    expect((await after.json()).code).toBe('reauth-required');
  });

  test("another actor's session is 404; its owner revokes it with 200 and the session as JSON", async () => {
    const a = await openSession((await createActor()).apiKey);
    const b = await openSession((await createActor()).apiKey);
    const other = await s.api(`/sessions/${a.session.id}`, { method: 'DELETE', as: null, headers: { authorization: `Bearer ${b.accessToken}` } });
    expect(other.status).toBe(404);
    expect((await other.json()).code).toBe('IDENTITY_SESSION_NOT_FOUND');
    const own = await s.api(`/sessions/${a.session.id}`, { method: 'DELETE', as: null, headers: { authorization: `Bearer ${a.accessToken}` } });
    expect(own.status).toBe(200);
    expect((await own.json()).session).toMatchObject({ id: a.session.id, revokedAt: expect.any(Number) });
    expect((await refresh(a.refreshToken)).status).toBe(401);
  });
});
