// The identity service's public keys at /.well-known/jwks.json, as an outside client reads them.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { identityWithSession, type Pair } from '../helpers/identity';
import type { TestPlatform } from '../helpers/platform';

let p: TestPlatform;
let actorId: string;
let s: Pair;

beforeAll(async () => {
  ({ p, actorId, s } = await identityWithSession());
});
afterAll(() => p.close());

describe('jwks', () => {
  test('an outside client verifies access tokens with jose against /.well-known/jwks.json', async () => {
    const jwks = createRemoteJWKSet(new URL(p.url('identity') + '/.well-known/jwks.json'));
    const { payload, protectedHeader } = await jwtVerify(s.accessToken, jwks, { algorithms: ['EdDSA'], issuer: 'keel-identity', audience: 'keel-media' });
    expect(protectedHeader.alg).toBe('EdDSA');
    expect(payload.sub).toBe(actorId);
    expect(payload.sid).toBe(s.session.id);
  });

  test('the JWKS publishes Ed25519 public keys only, never the private part', async () => {
    const res = await fetch(p.url('identity') + '/.well-known/jwks.json');
    expect(res.status).toBe(200);
    const { keys } = await res.json();
    expect(keys.length).toBe(1);
    expect(keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
    expect(keys[0].d).toBeUndefined();
  });
});

