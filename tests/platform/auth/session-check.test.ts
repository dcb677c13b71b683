// The live-session check (platform/auth/session-check.ts) against the real identity service on the
// platform's bus: its cache, its shared requests, its failure mode and the principal it yields.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { AccessClaims } from '../../../src/platform/auth/access-token';
import { createSessionCheck, livePrincipal } from '../../../src/platform/auth/session-check';
import type { Bus } from '../../../src/platform/bus/bus';
import { createMemoryBus } from '../../../src/platform/bus/memory';
import { meaningOf, type AppError } from '../../../src/platform/errors';
import { problemErrorTable } from '../../../src/platform/platform.errors';
import { createLogger } from '../../../src/platform/runtime';
import { createActor, openSession, READ, SCAN, type Pair } from '../../helpers/identity';
import { startTestPlatform, type TestPlatform } from '../../helpers/platform';

let p: TestPlatform;
let actorId: string;
beforeAll(async () => {
  p = await startTestPlatform({ services: ['identity'] });
  actorId = (await createActor(p, [SCAN, READ])).actor.id;
});
afterAll(() => p.close());

const sessionOf = async (): Promise<Pair> => {
  const a = await createActor(p, [SCAN, READ]);
  actorId = a.actor.id;
  return openSession(p, a.apiKey);
};
const revoke = (sid: string) => p.api('identity', `/sessions/${sid}`, { method: 'DELETE', as: 'admin' });

/** The same bus, counting the session queries that reach it. */
const counting = (bus: Bus) => {
  const counter = { asked: 0 };
  const wrapped: Bus = { ...bus, request: ((subject: never, body: never, o?: never) => (counter.asked++, bus.request(subject, body, o))) as Bus['request'] };
  return { bus: wrapped, counter };
};

describe('createSessionCheck', () => {
  test('a live session answers live with the actor\'s current policies', async () => {
    const s = await sessionOf();
    const state = await createSessionCheck(p.bus)(s.session.id, actorId);
    expect(state).toMatchObject({ live: true });
    expect(state.policies?.sort()).toEqual([READ, SCAN].sort());
  });

  test('a revoked session is still answered from the cache inside its time, and refused after it', async () => {
    const s = await sessionOf();
    let now = 1_000_000;
    const check = createSessionCheck(p.bus, { ttlMs: 2000, clock: { now: () => now } });
    expect((await check(s.session.id, actorId)).live).toBe(true);
    expect((await revoke(s.session.id)).status).toBe(200);
    now += 1999;
    expect((await check(s.session.id, actorId)).live).toBe(true);
    now += 1;
    expect(await check(s.session.id, actorId)).toMatchObject({ live: false, reauth: true, reason: 'session-revoked' });
  });

  test('concurrent checks of one session share one bus request', async () => {
    const s = await sessionOf();
    const { bus, counter } = counting(p.bus);
    const check = createSessionCheck(bus);
    const states = await Promise.all(Array.from({ length: 10 }, () => check(s.session.id, actorId)));
    expect(states.every((x) => x.live)).toBe(true);
    expect(counter.asked).toBe(1);
  });

  test('the cache keeps at most maxEntries sessions, dropping the oldest', async () => {
    const [a, b] = [await sessionOf(), await sessionOf()];
    const { bus, counter } = counting(p.bus);
    const check = createSessionCheck(bus, { maxEntries: 1, clock: { now: () => 0 } });
    await check(a.session.id, a.session.actorId);
    await check(b.session.id, b.session.actorId);
    await check(b.session.id, b.session.actorId);
    expect(counter.asked).toBe(2);
    await check(a.session.id, a.session.actorId);
    expect(counter.asked).toBe(3);
  });

  test('a bus with no identity service fails closed with 503 identity-unavailable', async () => {
    const lonely = createMemoryBus(createLogger({}, 'error'));
    try {
      const e = await createSessionCheck(lonely)('ses_x', 'act_x').then(() => null, (x) => x);
      expect(e).toMatchObject({ code: 'identity-unavailable' });
      expect(meaningOf(e, problemErrorTable)).toMatchObject({ status: 503, retryable: true });
    } finally {
      await lonely.close();
    }
  });
});

describe('livePrincipal', () => {
  const claims: AccessClaims = { actorId: 'act_1', sessionId: 'ses_1', policies: [SCAN, READ], issuedAt: 0, expiresAt: 600, kid: 'k' };

  test('keeps only the policies the actor still holds', () => {
    expect(livePrincipal(claims, { live: true, reauth: false, policies: [READ] })).toEqual({ actorId: 'act_1', sessionId: 'ses_1', policies: [READ] });
  });

  const thrown = (fn: () => unknown): AppError => {
    try {
      fn();
    } catch (e) {
      return e as AppError;
    }
    throw new Error('nothing was thrown');
  };

  test('an ended session is 401 reauth-required with its reason', () => {
    const e = thrown(() => livePrincipal(claims, { live: false, reauth: true, reason: 'key-rotated' }));
    expect(e).toMatchObject({ code: 'reauth-required', details: { reason: 'key-rotated' } });
    expect(meaningOf(e, problemErrorTable).status).toBe(401);
  });

  test('an unknown session is 401 unauthenticated', () => {
    const e = thrown(() => livePrincipal(claims, { live: false, reauth: false, reason: 'unknown-session' }));
    expect(e).toMatchObject({ code: 'unauthenticated' });
    expect(meaningOf(e, problemErrorTable).status).toBe(401);
  });
});
