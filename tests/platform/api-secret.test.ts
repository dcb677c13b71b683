// APP_API_SECRET is the HMAC key as its exact UTF-8 bytes (CONTRACT: workspace API tokens): a secret
// written with uppercase hex is not the same key as its lowercase spelling.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { mintToken } from '../../src/platform/auth/workspace-token';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';

const SECRET = 'ABCDEF0123456789'.repeat(4);
let p: TestPlatform;
beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces'], env: { APP_API_SECRET: SECRET } });
});
afterAll(() => p.close());

const list = (token: string) => fetch(p.url('workspaces') + '/api/workspaces', { headers: { authorization: `Bearer ${token}` } });

test('a token signed with the secret exactly as given is accepted', async () => {
  const res = await list(mintToken(SECRET, { sub: 'alice', ttlSeconds: 600 }));
  expect(res.status).toBe(200);
});

test('a token signed with the lowercased secret is refused with 401', async () => {
  const res = await list(mintToken(SECRET.toLowerCase(), { sub: 'alice', ttlSeconds: 600 }));
  expect(res.status).toBe(401);
  expect((await res.json()).error.code).toBe('UNAUTHORIZED');
});
