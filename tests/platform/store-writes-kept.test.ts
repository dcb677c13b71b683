// Issue 28, reproduced through the services: a write answered as done is never undone by another
// request's failure. Webhook creates at their quota throw inside their transaction (workspaces) while
// session revocations and API key rotations (identity) run on the same process's store; every
// revocation and rotation that was answered must still hold afterwards, on SQLite and PostgreSQL.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { startTestPlatform, type TestPlatform } from '../helpers/platform';
import { bearer, createActor, openSession, postSession, refresh } from '../helpers/identity';
import { closeAndClean } from '../helpers/workspaces';

const ROUNDS = 20;
let p: TestPlatform;

beforeAll(async () => {
  p = await startTestPlatform({ services: ['workspaces', 'identity'], env: { APP_QUOTA_WEBHOOKS: '1', APP_IDENTITY_SESSIONS_BURST: '1000' } });
});
afterAll(() => closeAndClean(p));

const createWebhook = () =>
  p.api('workspaces', '/api/webhooks', { method: 'POST', as: 'alice', json: { url: 'http://127.0.0.1:9/hook', events: ['*'], secret: 'a-shared-secret-of-some-length' } });

async function actorWithSession(name: string) {
  const { actor, apiKey } = await createActor(p, undefined, name);
  return { id: actor.id, apiKey, pair: await openSession(p, apiKey) };
}

test('revocations and key rotations answered while webhook creates fail at their quota all persist', async () => {
  expect((await createWebhook()).status).toBe(201); // alice is now at her quota of one
  const rounds: { revoked: Awaited<ReturnType<typeof actorWithSession>>; rotated: Awaited<ReturnType<typeof actorWithSession>> }[] = [];
  for (let i = 0; i < ROUNDS; i++) rounds.push({ revoked: await actorWithSession(`revoked-${i}`), rotated: await actorWithSession(`rotated-${i}`) });

  // Each revocation by the session's own access token (verified off the event loop), each rotation by an admin.
  const answers = await Promise.all(
    rounds.flatMap(({ revoked, rotated }) => [
      createWebhook(),
      p.api('identity', `/sessions/${revoked.pair.session.id}`, { method: 'DELETE', as: null, headers: bearer(revoked.pair.accessToken) }),
      createWebhook(),
      p.api('identity', `/actors/${rotated.id}/keys/rotate`, { method: 'POST', as: 'admin' }),
    ]),
  );
  const stride = 4;
  const statuses = answers.map((r) => r.status);
  for (let i = 0; i < ROUNDS; i++) {
    expect([statuses[stride * i], statuses[stride * i + 2]]).toEqual([429, 429]);
    expect(statuses[stride * i + 1]).toBeLessThan(300); // the revocation was answered as done
    expect(statuses[stride * i + 3]).toBe(200); // the rotation was answered as done
  }
  const keys = await Promise.all(rounds.map((_, i) => answers[stride * i + 3]!.json() as Promise<{ apiKey: string }>));

  const undone: string[] = [];
  for (const [i, { revoked, rotated }] of rounds.entries()) {
    if ((await refresh(p, revoked.pair.refreshToken)).status !== 401) undone.push(`the session of ${revoked.id} works again after its revocation`);
    if ((await postSession(p, { apiKey: rotated.apiKey })).status !== 401) undone.push(`the old API key of ${rotated.id} works again after its rotation`);
    if ((await postSession(p, { apiKey: keys[i]!.apiKey })).status !== 201) undone.push(`the new API key of ${rotated.id} is refused`);
  }
  expect(undone).toEqual([]);
});
