// The life of a session through HTTP: open, use on a guarded app, refresh, reuse detection, revoke.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';
import { bearer, createActor, openSession, postSession, refresh, SCAN, sleep, startGuardedApp } from '../helpers/identity';

let p: TestPlatform;
let guard: ReturnType<typeof startGuardedApp>;
// No live cache here, so each assertion sees the identity service's answer at once;
// revocation latency with the default cache has its own test below.
let fresh: ReturnType<typeof startGuardedApp>;

beforeAll(async () => {
  p = await startTestPlatform({ services: ['identity'] });
  guard = startGuardedApp(p.bus);
  fresh = startGuardedApp(p.bus, { liveCacheMs: 0 });
});
afterAll(async () => {
  guard.stop();
  fresh.stop();
  await p.close();
});

describe('opening a session', () => {
  test('an API key opens a session with an EdDSA access token carrying the contract claims', async () => {
    const { actor, apiKey } = await createActor(p);
    const res = await postSession(p, { apiKey });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = await res.json();
    expect(Object.keys(body).sort()).toEqual(['accessToken', 'expiresIn', 'refreshToken', 'session', 'tokenType']);
    expect(body.refreshToken).toMatch(/^keel_rt_[A-Za-z0-9_-]{43}$/);
    const header = decodeProtectedHeader(body.accessToken);
    expect(header.alg).toBe('EdDSA');
    expect(typeof header.kid).toBe('string');
    const claims = decodeJwt(body.accessToken);
    expect(claims).toMatchObject({ sub: actor.id, sid: body.session.id, policies: [SCAN], iss: 'keel-identity', aud: 'keel-media' });
    expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(900);
    expect(body.expiresIn).toBe(claims.exp! - claims.iat!);
  });

  test('a wrong or malformed API key answers 401 unauthenticated without echoing it', async () => {
    for (const apiKey of ['keel_ak_' + 'A'.repeat(43), 'not-a-key-s3cr3t']) {
      const res = await postSession(p, { apiKey });
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      const text = await res.text();
      expect(JSON.parse(text).code).toBe('unauthenticated');
      expect(text).not.toContain(apiKey);
    }
  });

  test('a body without apiKey answers 422 validation', async () => {
    const res = await postSession(p, {});
    expect(res.status).toBe(422);
    expect((await res.json()).code).toBe('validation');
  });
});

describe('using, refreshing and revoking', () => {
  test('the access token passes the guard and the handler sees the actor and session', async () => {
    const { actor, apiKey } = await createActor(p);
    const s = await openSession(p, apiKey);
    const res = await guard.scan(s.accessToken);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ actorId: actor.id, sessionId: s.session.id, path: 'movies/a.mkv' });
  });

  test('refresh rotates both tokens and the new access token works', async () => {
    const { apiKey } = await createActor(p);
    const s = await openSession(p, apiKey);
    await sleep(1100); // a new iat, so the new access token differs
    const res = await refresh(p, s.refreshToken);
    expect(res.status).toBe(200);
    const next = await res.json();
    expect(next.session.id).toBe(s.session.id);
    expect(next.refreshToken).not.toBe(s.refreshToken);
    expect(next.accessToken).not.toBe(s.accessToken);
    expect((await fresh.scan(next.accessToken)).status).toBe(200);
    // The next link of the chain works too.
    expect((await refresh(p, next.refreshToken)).status).toBe(200);
  });

  test('presenting a used refresh token revokes the session (theft detection)', async () => {
    const { apiKey } = await createActor(p);
    const s = await openSession(p, apiKey);
    const stolen = s.refreshToken;
    const legit = await (await refresh(p, stolen)).json();
    const replay = await refresh(p, stolen);
    expect(replay.status).toBe(401);
    expect(await replay.json()).toMatchObject({ code: 'reauth-required', reason: 'refresh-reuse' });
    // Both holders are out: the newest refresh token and the access token stop working.
    const after = await refresh(p, legit.refreshToken);
    expect(after.status).toBe(401);
    expect((await after.json()).code).toBe('reauth-required');
    const scan = await fresh.scan(legit.accessToken);
    expect(scan.status).toBe(401);
    expect(await scan.json()).toMatchObject({ code: 'reauth-required', reason: 'refresh-reuse' });
  });

  test('two concurrent refreshes with one token: exactly one wins and the session is revoked', async () => {
    const s = await openSession(p, (await createActor(p)).apiKey);
    const [a, b] = await Promise.all([refresh(p, s.refreshToken), refresh(p, s.refreshToken)]);
    expect([a.status, b.status].sort()).toEqual([200, 401]);
    const winner = await (a.status === 200 ? a : b).json();
    expect((await (a.status === 401 ? a : b).json()).reason).toBe('refresh-reuse');
    expect((await fresh.scan(winner.accessToken)).status).toBe(401);
  });

  test('an unknown refresh token answers 401 unauthenticated', async () => {
    const res = await refresh(p, 'keel_rt_' + 'B'.repeat(43));
    expect(res.status).toBe(401);
    expect((await res.json()).code).toBe('unauthenticated');
  });

  test('a session revokes itself with its own access token; guards then refuse it', async () => {
    const { apiKey } = await createActor(p);
    const s = await openSession(p, apiKey);
    const del = await fetch(p.url('identity') + `/sessions/${s.session.id}`, { method: 'DELETE', headers: bearer(s.accessToken) });
    expect(del.status).toBe(200);
    const scan = await fresh.scan(s.accessToken);
    expect(scan.status).toBe(401);
    expect(await scan.json()).toMatchObject({ code: 'reauth-required', reason: 'session-revoked' });
    const r = await refresh(p, s.refreshToken);
    expect(r.status).toBe(401);
    expect((await r.json()).code).toBe('reauth-required');
  });

  test("another actor's session answers 404, and an admin may revoke any session", async () => {
    const a = await openSession(p, (await createActor(p)).apiKey);
    const b = await openSession(p, (await createActor(p)).apiKey);
    const other = await fetch(p.url('identity') + `/sessions/${a.session.id}`, { method: 'DELETE', headers: bearer(b.accessToken) });
    expect(other.status).toBe(404);
    expect((await other.json()).code).toBe('IDENTITY_SESSION_NOT_FOUND');
    expect((await fresh.scan(a.accessToken)).status).toBe(200);
    const admin = await p.api('identity', `/sessions/${a.session.id}`, { method: 'DELETE', as: 'admin' });
    expect(admin.status).toBe(200);
    expect((await admin.json()).session).toMatchObject({ id: a.session.id, actorId: a.session.actorId });
    expect((await fresh.scan(a.accessToken)).status).toBe(401);
  });

  test('DELETE answers 200 with the session as JSON, revokedAt set; revoking again answers the same', async () => {
    const s = await openSession(p, (await createActor(p)).apiKey);
    const before = Date.now();
    const del = await fetch(p.url('identity') + `/sessions/${s.session.id}`, { method: 'DELETE', headers: bearer(s.accessToken) });
    expect(del.status).toBe(200);
    expect(del.headers.get('content-type')).toContain('application/json');
    const { session } = await del.json();
    expect(session).toMatchObject({ id: s.session.id, actorId: s.session.actorId, expiresAt: s.session.expiresAt, refreshExpiresAt: null });
    expect(session.revokedAt).toBeGreaterThanOrEqual(before - 1000);
    const again = await p.api('identity', `/sessions/${s.session.id}`, { method: 'DELETE', as: 'admin' });
    expect(again.status).toBe(200);
    expect((await again.json()).session).toEqual(session);
  });

  test('revocation reaches a guard with the default live cache within 2 seconds', async () => {
    const s = await openSession(p, (await createActor(p)).apiKey);
    expect((await guard.scan(s.accessToken)).status).toBe(200); // now cached as live
    const revokedAt = Date.now();
    expect((await fetch(p.url('identity') + `/sessions/${s.session.id}`, { method: 'DELETE', headers: bearer(s.accessToken) })).status).toBe(200);
    let status = 200;
    while (status === 200 && Date.now() - revokedAt < 5000) {
      status = (await guard.scan(s.accessToken)).status;
      if (status === 200) await sleep(100);
    }
    expect(status).toBe(401);
    expect(Date.now() - revokedAt).toBeLessThanOrEqual(2300);
  });
});

describe('expiry', () => {
  let q: TestPlatform;
  let g: ReturnType<typeof startGuardedApp>;
  beforeAll(async () => {
    q = await startTestPlatform({
      services: ['identity'],
      env: { APP_IDENTITY_ACCESS_TTL_S: '2', APP_IDENTITY_SESSION_TTL_S: '3', APP_IDENTITY_KEY_OVERLAP_S: '2' },
    });
    g = startGuardedApp(q.bus, { liveCacheMs: 0, clockToleranceS: 0 });
  });
  afterAll(async () => {
    g.stop();
    await q.close();
  });

  test('an access token expires after APP_IDENTITY_ACCESS_TTL_S and the session after APP_IDENTITY_SESSION_TTL_S', async () => {
    const s = await openSession(q, (await createActor(q)).apiKey);
    expect(s.expiresIn).toBe(2);
    expect((await g.scan(s.accessToken)).status).toBe(200);
    await sleep(2100);
    const expired = await g.scan(s.accessToken);
    expect(expired.status).toBe(401);
    expect((await expired.json()).code).toBe('unauthenticated');
    await sleep(1000); // past the 3 s session lifetime
    const r = await refresh(q, s.refreshToken);
    expect(r.status).toBe(401);
    expect(await r.json()).toMatchObject({ code: 'reauth-required', reason: 'session-expired' });
  });
});

describe('client budget', () => {
  test('POST /sessions past the per-address budget answers 429 rate-limited with Retry-After', async () => {
    const q = await startTestPlatform({ services: ['identity'], env: { APP_IDENTITY_SESSIONS_PER_S: '1', APP_IDENTITY_SESSIONS_BURST: '3' } });
    try {
      const { apiKey } = await createActor(q);
      const post = (body: string) => fetch(q.url('identity') + '/sessions', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      // Bad bodies count too: the budget is taken before validation.
      const statuses = [(await post('{}')).status, (await post(JSON.stringify({ apiKey }))).status, (await post(JSON.stringify({ apiKey }))).status];
      expect(statuses).toEqual([422, 201, 201]);
      const refused = await post(JSON.stringify({ apiKey }));
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect((await refused.json()).code).toBe('rate-limited');
      await sleep(1000);
      expect((await post(JSON.stringify({ apiKey }))).status).toBe(201);
    } finally {
      await q.close();
    }
  });
});
