// The cache of verified workspace-API tokens (createHs256Verifier): a hit is only ever a token that
// passed every check, the time claims are checked again on each hit, refusals are never kept, and
// the cache is bounded. Also through the workspace-auth plugin, where a cached token meets the clock.
import { describe, expect, test } from 'bun:test';
import { Elysia } from 'elysia';
import { createHs256Verifier, mintToken, signHs256, TokenError, CLOCK_LEEWAY_S } from '../../../src/platform/auth/workspace-token';
import { errorHandling } from '../../../src/platform/http/errors';
import { workspaceAuth } from '../../../src/platform/http/workspace-auth';
import { TEST_SECRET } from '../../helpers/platform';
import { envelopeErrorTable } from '../../../src/platform/platform.errors';

const T0 = Date.UTC(2030, 0, 1);
const fakeClock = () => {
  const c = { t: T0, now: () => c.t };
  return c;
};
const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(TokenError);
    return (e as Error).message;
  }
  throw new Error('expected a refusal');
};

describe('createHs256Verifier', () => {
  test('a cached token is refused once it expires, and leaves the cache', () => {
    const clock = fakeClock();
    const v = createHs256Verifier(TEST_SECRET, { clock });
    const tok = mintToken(TEST_SECRET, { sub: 'alice', ttlSeconds: 30, clock });
    expect(v.verify(tok).sub).toBe('alice');
    expect(v.verify(tok).sub).toBe('alice');
    expect(v.size()).toBe(1);
    clock.t += (30 + CLOCK_LEEWAY_S) * 1000; // exactly at exp + leeway: refused, as verifyHs256 does
    expect(refusal(() => v.verify(tok))).toBe('token expired');
    expect(v.size()).toBe(0);
    expect(refusal(() => v.verify(tok))).toBe('token expired');
  });

  test('a clock moved back before nbf or iat refuses a cached token as verifyHs256 would', () => {
    const clock = fakeClock();
    const v = createHs256Verifier(TEST_SECRET, { clock });
    const nowS = T0 / 1000;
    const tok = signHs256({ sub: 'alice', exp: nowS + 600, nbf: nowS, iat: nowS }, TEST_SECRET);
    expect(v.verify(tok).sub).toBe('alice');
    clock.t -= (CLOCK_LEEWAY_S + 5) * 1000;
    expect(refusal(() => v.verify(tok))).toBe('token not yet valid');
  });

  test('refusals are never cached: each wrong token is verified and refused every time', () => {
    const clock = fakeClock();
    const v = createHs256Verifier(TEST_SECRET, { clock });
    const good = mintToken(TEST_SECRET, { sub: 'alice', ttlSeconds: 600, clock });
    const [h, p, s] = good.split('.') as [string, string, string];
    const forgedPayload = Buffer.from(JSON.stringify({ sub: 'alice', exp: T0 / 1000 + 600, role: 'admin' })).toString('base64url');
    const bad = [
      `${h}.${forgedPayload}.${s}`, // the signature of another payload
      `${h}.${p}.${s.slice(0, -2)}AA`,
      mintToken('e'.repeat(64), { sub: 'alice', ttlSeconds: 600, clock }),
      `${Buffer.from('{"alg":"none"}').toString('base64url')}.${p}.`,
    ];
    expect(v.verify(good).role).toBeUndefined();
    for (const tok of bad) {
      refusal(() => v.verify(tok));
      refusal(() => v.verify(tok));
    }
    expect(v.size()).toBe(1);
  });

  test('the cache is bounded: the oldest token goes first, and a dropped one is simply verified again', () => {
    const clock = fakeClock();
    const v = createHs256Verifier(TEST_SECRET, { clock, cacheSize: 3 });
    const toks = ['a', 'b', 'c', 'd', 'e'].map((sub) => mintToken(TEST_SECRET, { sub, ttlSeconds: 600, clock }));
    for (const tok of toks) v.verify(tok);
    expect(v.size()).toBe(3);
    expect(v.verify(toks[0]!).sub).toBe('a');
    expect(v.size()).toBe(3);
  });

  test('cacheSize 0 keeps nothing and still verifies', () => {
    const clock = fakeClock();
    const v = createHs256Verifier(TEST_SECRET, { clock, cacheSize: 0 });
    expect(v.verify(mintToken(TEST_SECRET, { sub: 'a', ttlSeconds: 60, clock })).sub).toBe('a');
    expect(v.size()).toBe(0);
  });
});

describe('workspace auth with the token cache', () => {
  const clock = fakeClock();
  const app = new Elysia()
    .use(errorHandling('envelope', { production: false, errors: envelopeErrorTable }))
    .use(workspaceAuth({ secret: TEST_SECRET, anonymousLimit: 50, authenticatedLimit: 5, clock }))
    .get('/api/me', ({ actor }) => actor);
  const call = (tok: string) => app.handle(new Request('http://keel.test/api/me', { headers: { authorization: `Bearer ${tok}` } }));

  test('a token answered from the cache is refused with 401 once expired, with the rate-limit headers', async () => {
    const tok = mintToken(TEST_SECRET, { sub: 'erin', ttlSeconds: 10, clock });
    expect((await call(tok)).status).toBe(200);
    clock.t += (10 + CLOCK_LEEWAY_S) * 1000;
    const res = await call(tok);
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.code).toBe('UNAUTHORIZED');
    expect(res.headers.get('x-ratelimit-limit')).toBe('50'); // no valid token: the anonymous budget
  });

  test('cached tokens still count against the limit: 429 with Retry-After past it', async () => {
    clock.t += 60_000; // a fresh window
    const tok = mintToken(TEST_SECRET, { sub: 'frank', ttlSeconds: 600, clock });
    const remaining: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await call(tok);
      expect(res.status).toBe(200);
      remaining.push(res.headers.get('x-ratelimit-remaining')!);
    }
    expect(remaining).toEqual(['4', '3', '2', '1', '0']);
    const res = await call(tok);
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBeTruthy();
    expect(((await res.json()) as any).error.code).toBe('RATE_LIMITED');
  });
});
