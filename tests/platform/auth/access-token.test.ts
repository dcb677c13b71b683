// Local checks of access tokens (platform/auth/access-token.ts) against the real identity service's
// keys, fetched over the platform's bus; the verifier's clock is the test's, so expiry is exact.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { exportJWK, generateKeyPair } from 'jose';
import { bearerTokenOf, createAccessTokenVerifier, createBusKeySource, importJwks } from '../../../src/platform/auth/access-token';
import type { IdentityPublicJwk } from '../../../src/platform/bus/identity-shapes';
import { AppError, meaningOf } from '../../../src/platform/errors';
import { problemErrorTable } from '../../../src/platform/platform.errors';
import { identityWithSession, SCAN, type Pair } from '../../helpers/identity';
import type { TestPlatform } from '../../helpers/platform';

let p: TestPlatform;
let s: Pair;
let actorId: string;
beforeAll(async () => {
  ({ p, actorId, s } = await identityWithSession());
});
afterAll(() => p.close());

/** A refusal as the HTTP adapter renders it: its code, its status from the platform's table, its message. */
const refusal = (e: unknown) => ({ code: (e as { code?: string }).code, status: e instanceof AppError ? meaningOf(e, problemErrorTable).status : undefined, message: (e as Error).message });

describe('bearerTokenOf', () => {
  test('takes the token of a Bearer header, whatever the scheme\'s case', () => {
    expect(bearerTokenOf('Bearer a.b.c')).toBe('a.b.c');
    expect(bearerTokenOf('bearer a.b.c')).toBe('a.b.c');
  });

  test('refuses a missing header, another scheme and a token with spaces as 401 unauthenticated', () => {
    for (const header of [null, '', 'Basic YWxhZGRpbjpvcGVu', 'Bearer a b', 'Bearer ']) {
      let thrown: unknown;
      try {
        bearerTokenOf(header);
      } catch (e) {
        thrown = e;
      }
      expect(refusal(thrown)).toMatchObject({ code: 'unauthenticated', status: 401 });
    }
  });
});

describe('createAccessTokenVerifier with the bus key source', () => {
  test('a genuine token verifies to its actor, session, policies and key', async () => {
    const verify = createAccessTokenVerifier({ keyFor: createBusKeySource(p.bus) });
    const claims = await verify(s.accessToken);
    expect(claims).toMatchObject({ actorId, sessionId: s.session.id, policies: [SCAN] });
    expect(claims.kid).toBeString();
    expect(claims.expiresAt - claims.issuedAt).toBeLessThanOrEqual(900);
  });

  test('a token remembered as verified is still refused once the clock passes its expiry', async () => {
    let now = Date.now();
    const verify = createAccessTokenVerifier({ keyFor: createBusKeySource(p.bus), clock: { now: () => now }, clockToleranceS: 0 });
    const claims = await verify(s.accessToken);
    now = claims.expiresAt * 1000 + 1000;
    const e = await verify(s.accessToken).then(() => null, (x) => x);
    expect(refusal(e)).toEqual({ code: 'unauthenticated', status: 401, message: 'The access token has expired' });
  });

  test('with the cache off, a token the clock puts after its expiry is refused by the signature check too', async () => {
    const claims = await createAccessTokenVerifier({ keyFor: createBusKeySource(p.bus) })(s.accessToken);
    const late = createAccessTokenVerifier({ keyFor: createBusKeySource(p.bus), clock: { now: () => claims.expiresAt * 1000 + 60_000 }, cacheSize: 0 });
    expect(refusal(await late(s.accessToken).then(() => null, (x) => x))).toMatchObject({ code: 'unauthenticated', message: 'The access token has expired' });
  });

  test('a key the lookup does not know refuses the token without echoing it', async () => {
    const verify = createAccessTokenVerifier({ keyFor: async () => undefined });
    const e = await verify(s.accessToken).then(() => null, (x) => x);
    expect(refusal(e)).toMatchObject({ code: 'unauthenticated', message: 'The token names no known key' });
    expect(JSON.stringify(e)).not.toContain(s.accessToken);
  });
});

describe('importJwks', () => {
  test('imports the Ed25519 keys of a JWKS by kid and skips any other key type', async () => {
    const ed = await exportJWK((await generateKeyPair('EdDSA', { extractable: true })).publicKey);
    const ec = await exportJWK((await generateKeyPair('ES256', { extractable: true })).publicKey);
    const keys = await importJwks([
      { ...ed, kid: 'ed', alg: 'EdDSA', use: 'sig' } as IdentityPublicJwk,
      { ...ec, kid: 'ec', alg: 'EdDSA', use: 'sig' } as unknown as IdentityPublicJwk,
    ]);
    expect([...keys.keys()]).toEqual(['ed']);
  });
});
