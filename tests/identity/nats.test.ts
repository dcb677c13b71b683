// Identity and a guard on two platform instances joined only by a NATS server: the subjects
// qry.identity.jwks and qry.identity.session work across buses exactly as in process.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { decodeProtectedHeader } from 'jose';
import { requireTestEnv, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { bearer, createActor, openSession, startGuardedApp } from '../helpers/identity';

let identity: TestPlatform;
let media: TestPlatform;
let guard: ReturnType<typeof startGuardedApp>;

beforeAll(async () => {
  const nats = requireTestEnv('KEEL_TEST_NATS_URL');
  identity = await startTestPlatform({ services: ['identity'], env: { APP_BUS: nats } });
  media = await startTestPlatform({ services: ['workers'], env: { APP_BUS: nats } });
  guard = startGuardedApp(media.bus, { liveCacheMs: 0 });
});
afterAll(async () => {
  guard.stop();
  await media.close();
  await identity?.close().catch(() => {});
});

describe('identity over NATS', () => {
  test('a guard on another bus verifies tokens and follows revocation', async () => {
    const s = await openSession(identity, (await createActor(identity)).apiKey);
    expect((await guard.scan(s.accessToken)).status).toBe(200);
    const del = await fetch(identity.url('identity') + `/sessions/${s.session.id}`, { method: 'DELETE', headers: bearer(s.accessToken) });
    expect(del.status).toBe(200);
    expect((await del.json()).session.revokedAt).toBeNumber();
    const refused = await guard.scan(s.accessToken);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: 'reauth-required', reason: 'session-revoked' });
  });

  test('a key rotated in on the identity side is fetched over the bus on first sight', async () => {
    const { apiKey } = await createActor(identity);
    expect((await guard.scan((await openSession(identity, apiKey)).accessToken)).status).toBe(200);
    const rotated = await (await identity.api('identity', '/keys/rotate', { method: 'POST', as: 'admin' })).json();
    const s = await openSession(identity, apiKey);
    expect(decodeProtectedHeader(s.accessToken).kid).toBe(rotated.kid);
    expect((await guard.scan(s.accessToken)).status).toBe(200);
  });

  test('with the identity service gone the guard fails closed with 503 identity-unavailable', async () => {
    const s = await openSession(identity, (await createActor(identity)).apiKey);
    await identity.close();
    const res = await guard.scan(s.accessToken);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ code: 'identity-unavailable', retryable: true });
  });
});
