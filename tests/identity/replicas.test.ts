// Two identity processes on one PostgreSQL database, as replicas behind a load balancer: one
// operator-given signing key, a data dir each, the database the only state they share. What one
// writes the other answers, and the races between them end as they do in one process. On the
// PostgreSQL pass only: SQLite replicas share a data dir, which is one database by construction.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { generateKeyPairSync } from 'node:crypto';
import { freshPostgresDatabase, onPostgres, startTestPlatform, type TestPlatform } from '../helpers/platform';
import { bearer, createActor, openSession, refresh, startGuardedApp, type Pair } from '../helpers/identity';

if (onPostgres()) {
  describe('two identity replicas on one PostgreSQL database', () => {
    let database: Awaited<ReturnType<typeof freshPostgresDatabase>>;
    let a: TestPlatform;
    let b: TestPlatform;
    // A guard on a's bus asks a whether a session is live, whatever b did to it.
    let guardA: ReturnType<typeof startGuardedApp>;

    beforeAll(async () => {
      database = await freshPostgresDatabase();
      const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      const env = { APP_DATABASE_URL: database.url, APP_IDENTITY_SIGNING_KEY: pem, APP_IDENTITY_SESSIONS_BURST: '1000' };
      [a, b] = await Promise.all([startTestPlatform({ services: ['identity'], env }), startTestPlatform({ services: ['identity'], env })]);
      guardA = startGuardedApp(a.bus, { liveCacheMs: 0 });
    });
    afterAll(async () => {
      guardA?.stop();
      await Promise.all([a?.close(), b?.close()]);
      await database?.drop();
    });

    test('an actor created on one is read, and opens a session, on the other', async () => {
      const { actor, apiKey } = await createActor(a);
      const got = await b.api('identity', `/actors/${actor.id}`, { as: 'admin' });
      expect(got.status).toBe(200);
      expect((await got.json()).actor).toMatchObject({ id: actor.id, name: 'scanner' });
      const s = await openSession(b, apiKey);
      expect((await guardA.scan(s.accessToken)).status).toBe(200);
    });

    test('a session revoked on one is refused by the other at once', async () => {
      const s = await openSession(a, (await createActor(a)).apiKey);
      const del = await fetch(b.url('identity') + `/sessions/${s.session.id}`, { method: 'DELETE', headers: bearer(s.accessToken) });
      expect(del.status).toBe(200);
      const scan = await guardA.scan(s.accessToken);
      expect(scan.status).toBe(401);
      expect(await scan.json()).toMatchObject({ code: 'reauth-required', reason: 'session-revoked' });
      expect(await (await refresh(a, s.refreshToken)).json()).toMatchObject({ code: 'reauth-required', reason: 'session-revoked' });
    });

    test('a refresh token used on one is reuse on the other', async () => {
      const s = await openSession(a, (await createActor(a)).apiKey);
      expect((await refresh(b, s.refreshToken)).status).toBe(200);
      const replay = await refresh(a, s.refreshToken);
      expect(replay.status).toBe(401);
      expect(await replay.json()).toMatchObject({ code: 'reauth-required', reason: 'refresh-reuse' });
    });

    test('one refresh token sent to both at once: exactly one wins and the session ends, every time', async () => {
      const { apiKey } = await createActor(a);
      // Several rounds, so that the two transactions overlap in some of them.
      for (let round = 0; round < 8; round++) {
        const s = await openSession(a, apiKey);
        const answers = await Promise.all([refresh(a, s.refreshToken), refresh(b, s.refreshToken)]);
        expect(answers.map((r) => r.status).sort()).toEqual([200, 401]);
        const [won, lost] = answers[0]!.status === 200 ? answers : [answers[1]!, answers[0]!];
        expect((await lost!.json()).reason).toBe('refresh-reuse');
        expect((await guardA.scan(((await won!.json()) as Pair).accessToken)).status).toBe(401);
      }
    });

    test('sessions opened on one while the other disables the actor do not come back when it is re-enabled', async () => {
      const { actor, apiKey } = await createActor(a);
      const patch = (disabled: boolean) => b.api('identity', `/actors/${actor.id}`, { method: 'PATCH', as: 'admin', json: { disabled } });
      const before = await openSession(a, apiKey);
      // Sessions opened on a while b disables the actor: each is refused, or opened and revoked.
      const opening = Array.from({ length: 30 }, (_, i) => Bun.sleep(i).then(() => openSession(a, apiKey).catch(() => undefined)));
      await Bun.sleep(10);
      expect((await patch(true)).status).toBe(200);
      const opened = [before, ...(await Promise.all(opening)).filter((s): s is Pair => s !== undefined)];
      expect((await patch(false)).status).toBe(200);
      for (const s of opened) expect((await guardA.scan(s.accessToken)).status).toBe(401);
    });
  });
}
