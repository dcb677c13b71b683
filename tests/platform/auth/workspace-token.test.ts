// Workspace-API tokens (platform/auth/workspace-token.ts): minting on the Clock, the actor a token
// stands for, and the ownership rule every workspace feature applies.
import { describe, expect, test } from 'bun:test';
import { actorOf, canAccess, mintToken, verifyHs256 } from '../../../src/platform/auth/workspace-token';
import { TEST_SECRET } from '../../helpers/platform';

describe('mintToken and verifyHs256', () => {
  test('a minted token carries the clock\'s time and verifies to its subject and role', () => {
    const at = Date.UTC(2030, 0, 1);
    const token = mintToken(TEST_SECRET, { sub: 'alice', ttlSeconds: 60, role: 'admin', clock: { now: () => at } });
    expect(verifyHs256(token, TEST_SECRET, at)).toMatchObject({ sub: 'alice', role: 'admin', iat: at / 1000, exp: at / 1000 + 60 });
  });

  test('a token is refused once its expiry and the 60 s leeway have passed', () => {
    const at = Date.UTC(2030, 0, 1);
    const token = mintToken(TEST_SECRET, { sub: 'alice', ttlSeconds: 60, clock: { now: () => at } });
    expect(() => verifyHs256(token, TEST_SECRET, at + 120_000)).toThrow('token expired');
    expect(verifyHs256(token, TEST_SECRET, at + 119_000).sub).toBe('alice');
  });
});

describe('actors and ownership', () => {
  test('a token with role admin stands for an admin actor, any other for a plain one', () => {
    expect(actorOf({ sub: 'root', exp: 1, role: 'admin' })).toEqual({ id: 'root', admin: true });
    expect(actorOf({ sub: 'alice', exp: 1 })).toEqual({ id: 'alice', admin: false });
  });

  test('an actor reaches what it owns and nothing of another actor', () => {
    expect(canAccess({ id: 'alice', admin: false }, 'alice')).toBe(true);
    expect(canAccess({ id: 'alice', admin: false }, 'bob')).toBe(false);
  });

  test('an admin reaches every actor\'s resources', () => {
    expect(canAccess({ id: 'root', admin: true }, 'bob')).toBe(true);
  });
});
