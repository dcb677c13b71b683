// Signing keys: rotation with an overlap window, automatic age-based rotation, persistence under
// APP_DATA_DIR, an operator-given key, and start-up refusal of bad key settings.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calculateJwkThumbprint, createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { sharedDatabase, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { bearer, createActor, openSession, sleep, startGuardedApp } from '../helpers/identity';

const jwksOf = async (p: TestPlatform) => ((await (await fetch(p.url('identity') + '/.well-known/jwks.json')).json()).keys as { kid: string }[]).map((k) => k.kid);
const kidOf = (token: string) => decodeProtectedHeader(token).kid;

describe('rotation with an overlap window', () => {
  let p: TestPlatform;
  let guard: ReturnType<typeof startGuardedApp>;
  beforeAll(async () => {
    // Lifetimes long enough that a busy machine cannot expire `before` mid-test, short enough to wait out.
    p = await startTestPlatform({ services: ['identity'], env: { APP_IDENTITY_ACCESS_TTL_S: '5', APP_IDENTITY_KEY_OVERLAP_S: '6' } });
    guard = startGuardedApp(p.bus);
  });
  afterAll(async () => {
    guard.stop();
    await p.close();
  });

  test('tokens of the previous key stay valid during the overlap; the key leaves the JWKS after it', async () => {
    const { apiKey } = await createActor(p);
    const before = await openSession(p, apiKey);
    expect((await guard.scan(before.accessToken)).status).toBe(200);

    const res = await p.api('identity', '/keys/rotate', { method: 'POST', as: 'admin' });
    expect(res.status).toBe(200);
    const rotated = await res.json();
    expect(rotated.previousKid).toBe(kidOf(before.accessToken));
    expect(rotated.kid).not.toBe(rotated.previousKid);
    expect(rotated.previousPublishedUntil).toBeGreaterThan(Date.now() + 2000);
    expect(await jwksOf(p)).toEqual([rotated.kid, rotated.previousKid]);

    // New tokens carry the new kid; the guard learns it over the bus on first sight.
    const after = await openSession(p, apiKey);
    expect(kidOf(after.accessToken)).toBe(rotated.kid);
    expect((await guard.scan(after.accessToken)).status).toBe(200);
    expect((await guard.scan(before.accessToken)).status).toBe(200);
    // An outside verifier sees both keys too.
    const jwks = createRemoteJWKSet(new URL(p.url('identity') + '/.well-known/jwks.json'));
    await jwtVerify(before.accessToken, jwks);
    await jwtVerify(after.accessToken, jwks);

    await sleep(Math.max(0, rotated.previousPublishedUntil - Date.now()) + 100);
    expect(await jwksOf(p)).toEqual([rotated.kid]);
  }, 30_000);

  test('rotation needs an admin', async () => {
    const res = await p.api('identity', '/keys/rotate', { method: 'POST', as: 'alice' });
    expect(res.status).toBe(403);
    expect((await res.json()).code).toBe('forbidden');
  });
});

describe('retiring a key at once', () => {
  let p: TestPlatform;
  let guard: ReturnType<typeof startGuardedApp>;
  beforeAll(async () => {
    p = await startTestPlatform({ services: ['identity'] });
    guard = startGuardedApp(p.bus);
  });
  afterAll(async () => {
    guard.stop();
    await p.close();
  });

  test('a token its guard has already verified and cached is refused once its key is retired', async () => {
    const { apiKey } = await createActor(p);
    const before = await openSession(p, apiKey);
    // Twice: the second answer comes from the guard's cache of verified tokens.
    expect((await guard.scan(before.accessToken)).status).toBe(200);
    expect((await guard.scan(before.accessToken)).status).toBe(200);

    const res = await p.api('identity', '/keys/rotate', { method: 'POST', as: 'admin', json: { retirePrevious: true } });
    expect(res.status).toBe(200);
    const rotated = await res.json();
    expect(rotated.previousKid).toBe(kidOf(before.accessToken));
    expect(rotated.previousPublishedUntil).toBeLessThanOrEqual(Date.now());
    expect(await jwksOf(p)).toEqual([rotated.kid]);

    // Promptly: the guard hears of it on the bus, well before its 5-minute re-read or the token's expiry.
    const started = Date.now();
    const refused = await guard.scan(before.accessToken);
    expect(refused.status).toBe(401);
    expect((await refused.json()).code).toBe('unauthenticated');
    expect(Date.now() - started).toBeLessThan(1000);
    // Identity itself refuses it too: the session cannot even be revoked with it.
    const own = await p.api('identity', `/sessions/${before.session.id}`, { method: 'DELETE', as: null, headers: bearer(before.accessToken) });
    expect(own.status).toBe(401);

    // The session is not the problem, the key is: a new token for the same actor works at once.
    const after = await openSession(p, apiKey);
    expect(kidOf(after.accessToken)).toBe(rotated.kid);
    expect((await guard.scan(after.accessToken)).status).toBe(200);
  });

  test('a guard started after the retirement never accepts the retired key', async () => {
    const { apiKey } = await createActor(p, undefined, 'late');
    const before = await openSession(p, apiKey);
    await p.api('identity', '/keys/rotate', { method: 'POST', as: 'admin', json: { retirePrevious: true } });
    const late = startGuardedApp(p.bus);
    try {
      expect((await late.scan(before.accessToken)).status).toBe(401);
    } finally {
      late.stop();
    }
  });

  test('a plain rotation, with no body or retirePrevious false, still keeps the previous key for the overlap', async () => {
    const plain = await (await p.api('identity', '/keys/rotate', { method: 'POST', as: 'admin' })).json();
    expect(await jwksOf(p)).toEqual([plain.kid, plain.previousKid]);
    const kept = await (await p.api('identity', '/keys/rotate', { method: 'POST', as: 'admin', json: { retirePrevious: false } })).json();
    expect(await jwksOf(p)).toEqual([kept.kid, plain.kid, plain.previousKid]);
    const bad = await p.api('identity', '/keys/rotate', { method: 'POST', as: 'admin', json: { retirePrevious: 'yes' } });
    expect(bad.status).toBe(422);
  });
});

describe('automatic rotation and persistence', () => {
  test('a key older than APP_IDENTITY_KEY_MAX_AGE_S is rotated on the next signing', async () => {
    const p = await startTestPlatform({ services: ['identity'], env: { APP_IDENTITY_KEY_MAX_AGE_S: '1' } });
    try {
      const { apiKey } = await createActor(p);
      const first = await openSession(p, apiKey);
      await sleep(1100);
      const second = await openSession(p, apiKey);
      expect(kidOf(second.accessToken)).not.toBe(kidOf(first.accessToken));
      expect(await jwksOf(p)).toEqual([kidOf(second.accessToken)!, kidOf(first.accessToken)!]);
    } finally {
      await p.close();
    }
  });

  test('the generated key is kept under APP_DATA_DIR (mode 0600) and reused after a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'keel-identity-keys-'));
    // The same database after the restart too (on the PostgreSQL pass), so the session is still known.
    const database = await sharedDatabase();
    try {
      const a = await startTestPlatform({ services: ['identity'], dataDir, env: database.env });
      const kids = await jwksOf(a);
      const { apiKey } = await createActor(a);
      const s = await openSession(a, apiKey);
      await a.close();
      const file = join(dataDir, 'identity-keys.json');
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const b = await startTestPlatform({ services: ['identity'], dataDir, env: database.env });
      try {
        expect(await jwksOf(b)).toEqual(kids);
        const g = startGuardedApp(b.bus);
        expect((await g.scan(s.accessToken)).status).toBe(200); // a token from before the restart still works
        g.stop();
      } finally {
        await b.close();
      }
    } finally {
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('an operator-given key', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

  test('APP_IDENTITY_SIGNING_KEY (PKCS8 PEM) signs, is published under its thumbprint, and cannot be rotated here', async () => {
    const p = await startTestPlatform({ services: ['identity'], env: { APP_IDENTITY_SIGNING_KEY: pem } });
    try {
      const thumb = await calculateJwkThumbprint(publicKey.export({ format: 'jwk' }) as never);
      expect(await jwksOf(p)).toEqual([thumb]);
      const s = await openSession(p, (await createActor(p)).apiKey);
      expect(kidOf(s.accessToken)).toBe(thumb);
      const res = await p.api('identity', '/keys/rotate', { method: 'POST', as: 'admin' });
      expect(res.status).toBe(409);
      expect((await res.json()).code).toBe('IDENTITY_KEYS_EXTERNAL');
      expect(existsSync(join(p.dataDir, 'identity-keys.json'))).toBe(false);
    } finally {
      await p.close();
    }
  });

  test('a key that is not Ed25519, and out-of-range lifetimes, stop start-up naming the variable', async () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const cases: [Record<string, string>, string][] = [
      [{ APP_IDENTITY_SIGNING_KEY: rsa }, 'APP_IDENTITY_SIGNING_KEY:'],
      [{ APP_IDENTITY_SIGNING_KEY: 'garbage' }, 'APP_IDENTITY_SIGNING_KEY:'],
      [{ APP_IDENTITY_ACCESS_TTL_S: '901' }, 'APP_IDENTITY_ACCESS_TTL_S:'],
      [{ APP_IDENTITY_ACCESS_TTL_S: '600', APP_IDENTITY_KEY_OVERLAP_S: '60' }, 'APP_IDENTITY_KEY_OVERLAP_S:'],
    ];
    for (const [env, message] of cases) {
      const failed = await startTestPlatform({ services: ['identity'], env }).then(
        async (p) => {
          await p.close();
          return '';
        },
        (e: Error) => e.message,
      );
      expect(failed.startsWith(message)).toBe(true);
      expect(failed).not.toContain('BEGIN');
    }
  });
});
