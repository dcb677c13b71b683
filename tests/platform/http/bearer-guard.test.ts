// The Bearer guard on a small app with the real plugin and the platform's bus: what it lets through
// and every refusal, as problem+json with the exact codes of the media spec.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHmac } from 'node:crypto';
import { generateKeyPair, SignJWT } from 'jose';
import { createActor, forge, identityWithSession, openSession, READ, SCAN, signingKeyOf, sleep, startGuardedApp, type Pair } from '../../helpers/identity';
import type { TestPlatform } from '../../helpers/platform';

let p: TestPlatform;
let guard: ReturnType<typeof startGuardedApp>;
let actorId: string;
let s: Pair;

beforeAll(async () => {
  ({ p, actorId, s } = await identityWithSession());
  guard = startGuardedApp(p.bus);
});
afterAll(async () => {
  guard.stop();
  await p.close();
});

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

async function expectRefused(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const body = await res.json();
  expect(body).toMatchObject({ status, code });
  return body;
}

describe('refusals', () => {
  test('no Authorization header, or not a Bearer one, answers 401 unauthenticated', async () => {
    const none = await expectRefused(await guard.scan(), 401, 'unauthenticated');
    expect(typeof none.type).toBe('string');
    const basic = await fetch(guard.url + '/scan', { method: 'POST', headers: { authorization: 'Basic YTpi', 'content-type': 'application/json' }, body: '{"path":"x"}' });
    await expectRefused(basic, 401, 'unauthenticated');
    await expectRefused(await guard.scan('not-a-jwt'), 401, 'unauthenticated');
  });

  test('alg none is refused', async () => {
    const claims = { sub: actorId, sid: s.session.id, policies: [SCAN], iss: 'keel-identity', aud: 'keel-media', iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 300 };
    await expectRefused(await guard.scan(`${b64({ alg: 'none', typ: 'at+jwt' })}.${b64(claims)}.`), 401, 'unauthenticated');
  });

  test('HS256 signed with the public key (algorithm confusion) is refused', async () => {
    const { kid, jwk } = await signingKeyOf(p);
    const claims = { sub: actorId, sid: s.session.id, policies: [SCAN], iss: 'keel-identity', aud: 'keel-media', iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 300 };
    const head = `${b64({ alg: 'HS256', typ: 'at+jwt', kid })}.${b64(claims)}`;
    for (const secret of [Buffer.from(jwk.x!, 'base64url'), JSON.stringify({ kty: 'OKP', crv: 'Ed25519', x: jwk.x })]) {
      const sig = createHmac('sha256', secret).update(head).digest('base64url');
      await expectRefused(await guard.scan(`${head}.${sig}`), 401, 'unauthenticated');
    }
  });

  test('a token signed by a key the identity service does not publish (unknown kid) is refused', async () => {
    const { privateKey } = await generateKeyPair('EdDSA');
    const now = Math.floor(Date.now() / 1000);
    const tok = await new SignJWT({ sid: s.session.id, policies: [SCAN] })
      .setProtectedHeader({ alg: 'EdDSA', kid: 'attacker-key', typ: 'at+jwt' })
      .setSubject(actorId).setIssuer('keel-identity').setAudience('keel-media').setIssuedAt(now).setExpirationTime(now + 300)
      .sign(privateKey);
    await expectRefused(await guard.scan(tok), 401, 'unauthenticated');
    // The same foreign key under the real kid fails the signature check.
    const { kid } = await signingKeyOf(p);
    const mimic = await new SignJWT({ sid: s.session.id, policies: [SCAN] })
      .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'at+jwt' })
      .setSubject(actorId).setIssuer('keel-identity').setAudience('keel-media').setIssuedAt(now).setExpirationTime(now + 300)
      .sign(privateKey);
    await expectRefused(await guard.scan(mimic), 401, 'unauthenticated');
  });

  test('a JWT of the identity key is refused unless typed at+jwt and naming its key by a short kid', async () => {
    const claims = { sub: actorId, sid: s.session.id };
    expect((await guard.scan(await forge(p, claims))).status).toBe(200);
    for (const header of [{ typ: 'JWT' }, { typ: undefined }, { kid: 'k'.repeat(129) }, { kid: 42 }]) {
      await expectRefused(await guard.scan(await forge(p, claims, header)), 401, 'unauthenticated');
    }
  });

  test('a tampered payload is refused', async () => {
    const a = await createActor(p, [READ]);
    const t = await openSession(p, a.apiKey);
    const [h, payload, sig] = t.accessToken.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    claims.policies = [READ, SCAN];
    await expectRefused(await guard.scan(`${h}.${b64(claims)}.${sig}`), 401, 'unauthenticated');
  });

  test('an expired token, a wrong audience or issuer, and a lifetime over 15 minutes are refused', async () => {
    const now = Math.floor(Date.now() / 1000);
    const base = { sub: actorId, sid: s.session.id };
    const bad = [
      await forge(p, { ...base, iat: now - 400, exp: now - 100 }),
      await forge(p, { ...base, aud: 'someone-else' }),
      await forge(p, { ...base, iss: 'evil-issuer' }),
      await forge(p, { ...base, iat: now, exp: now + 901 }),
      await forge(p, base, { typ: 'JWT' }),
    ];
    for (const tok of bad) await expectRefused(await guard.scan(tok), 401, 'unauthenticated');
    // The same forging path with genuine claims passes, so the refusals above are about the claim changed.
    expect((await guard.scan(await forge(p, base))).status).toBe(200);
  });

  test('a session that never existed answers 401 unauthenticated', async () => {
    await expectRefused(await guard.scan(await forge(p, { sub: actorId, sid: 'ses_doesnotexist' })), 401, 'unauthenticated');
  });

  test('a route whose policy the token lacks answers 403 forbidden', async () => {
    await expectRefused(await guard.works(s.accessToken), 403, 'forbidden');
    const reader = await openSession(p, (await createActor(p, [READ])).apiKey);
    expect((await guard.works(reader.accessToken)).status).toBe(200);
    await expectRefused(await guard.scan(reader.accessToken), 403, 'forbidden');
  });
});

describe('rate limits', () => {
  test('POST /scan allows a burst of 20 per actor, then 429 rate-limited with a Retry-After that holds', async () => {
    const t = await openSession(p, (await createActor(p)).apiKey);
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) statuses.push((await guard.scan(t.accessToken)).status);
    expect(statuses.every((x) => x === 200)).toBe(true);
    const refused = await guard.scan(t.accessToken);
    const body = await expectRefused(refused, 429, 'rate-limited');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBe(1); // 5 tokens per second: one token is back within a second
    expect(body.retryAfter).toBe(1);
    // Another actor has its own bucket.
    const other = await openSession(p, (await createActor(p)).apiKey);
    expect((await guard.scan(other.accessToken)).status).toBe(200);
    await sleep(retryAfter * 1000);
    expect((await guard.scan(t.accessToken)).status).toBe(200);
  });

  test('the service budget caps all actors together', async () => {
    const g = startGuardedApp(p.bus, { limits: { scan: { perActor: { ratePerSec: 5, burst: 20 }, service: { ratePerSec: 1, burst: 3 } } } });
    try {
      const a = await openSession(p, (await createActor(p)).apiKey);
      const b = await openSession(p, (await createActor(p)).apiKey);
      const statuses = [];
      for (const tok of [a, b, a, b].map((x) => x.accessToken)) statuses.push((await g.scan(tok)).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
    } finally {
      g.stop();
    }
  });
});
