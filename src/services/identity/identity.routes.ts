// The identity service's routes: actors (admin), sessions, the JWKS and key rotation. HTTP only;
// the rules live in identity.service.ts, who calls in callers.ts.
import { Elysia } from 'elysia';
import { forbidden } from '../../platform/auth/denials';
import { JwksSchema } from '../../platform/bus/identity-shapes';
import { rateLimited, type createTokenBucket } from '../../platform/http/rate-limit';
import {
  ActorAnswerSchema,
  ActorListSchema,
  ActorWithKey,
  CreateActorBody,
  CreateSessionBody,
  IdParams,
  RefreshBody,
  RevokedSession,
  RotateKeyBody,
  RotatedKey,
  TokenPair,
  UpdateActorBody,
} from './identity.model';
import type { Callers } from './callers';
import type { Identity } from './identity.service';
import type { KeyStore } from './keys';
import { identityOperation as op } from './identity.errors';

type TokenBucket = ReturnType<typeof createTokenBucket>;

/** `auth: 'admin'`: only admins; `auth: 'caller'`: any live session or admin. */
function callerAuth(callers: Callers) {
  return new Elysia({ name: 'identity.auth' }).macro({
    auth: (need: 'admin' | 'caller') => ({
      async resolve({ request }) {
        const caller = await callers.callerOf(request.headers.get('authorization'));
        if (need === 'admin' && !caller.admin) throw forbidden();
        return { caller };
      },
    }),
  });
}

/** The per-client-address budget on the routes that take a secret, checked before the body is validated. */
function clientBudget(bucket: TokenBucket) {
  return new Elysia({ name: 'identity.client-budget' }).macro({
    clientBudget: (on: boolean) => ({
      transform({ request, server }) {
        if (!on) return;
        const d = bucket.take(server?.requestIP(request)?.address ?? 'unknown');
        if (!d.allowed) throw rateLimited(d.retryAfter, d.limit);
      },
    }),
  });
}

/** What the admin and caller checks answer: no or a bad token, an ended session, not an admin. */
const ADMIN = ['unauthenticated', 'reauth-required', 'forbidden'] as const;

// Answers that carry a secret (an API key, a refresh token) must not be kept by any cache.
const noStore = { 'cache-control': 'no-store' };

export function identityRoutes(deps: { identity: Identity; keys: KeyStore; callers: Callers; sessionBudget: TokenBucket }) {
  const { identity, keys } = deps;
  return new Elysia({ name: 'identity.routes' })
    .use(callerAuth(deps.callers))
    .use(clientBudget(deps.sessionBudget))
    .get('/.well-known/jwks.json', ({ set }) => {
      set.headers['cache-control'] = 'public, max-age=60';
      return { keys: keys.publicJwks() };
    }, {
      response: { 200: JwksSchema },
      detail: { ...op('getJwks'), tags: ['keys'], summary: 'Public keys (Ed25519) that verify access tokens', security: [] },
    })
    .post('/keys/rotate', async ({ body }) => keys.rotate({ retirePrevious: body?.retirePrevious === true }), {
      auth: 'admin',
      body: RotateKeyBody,
      response: { 200: RotatedKey },
      detail: { ...op('rotateSigningKey', [...ADMIN, 'IDENTITY_KEYS_EXTERNAL']),
        tags: ['keys'],
        summary: 'Rotate the signing key',
        description: 'New tokens are signed with a new key; the previous one stays in the JWKS until previousPublishedUntil (APP_IDENTITY_KEY_OVERLAP_S), so the tokens it signed stay valid until they expire. With `{"retirePrevious": true}` it leaves the JWKS at once: identity and every guard refuse its tokens from then on (guards hear it on the bus, evt.identity.keysChanged). 409 IDENTITY_KEYS_EXTERNAL when the key comes from APP_IDENTITY_SIGNING_KEY.',
      },
    })
    .post('/actors', async ({ body, status, set }) => {
      Object.assign(set.headers, noStore);
      return status(201, await identity.createActor(body));
    }, {
      auth: 'admin',
      body: CreateActorBody,
      response: { 201: ActorWithKey },
      detail: { ...op('createActor', ADMIN), tags: ['actors'], summary: 'Create an actor', description: 'Answers the API key once; only its hash is kept.' },
    })
    .get('/actors', async () => ({ actors: await identity.listActors() }), {
      auth: 'admin',
      response: { 200: ActorListSchema },
      detail: { ...op('listActors', ADMIN), tags: ['actors'], summary: 'List actors' },
    })
    .get('/actors/:id', async ({ params }) => ({ actor: await identity.getActor(params.id) }), {
      auth: 'admin',
      params: IdParams,
      response: { 200: ActorAnswerSchema },
      detail: { ...op('getActor', [...ADMIN, 'IDENTITY_ACTOR_NOT_FOUND']), tags: ['actors'], summary: 'Get an actor' },
    })
    .patch('/actors/:id', async ({ params, body }) => ({ actor: await identity.updateActor(params.id, body) }), {
      auth: 'admin',
      params: IdParams,
      body: UpdateActorBody,
      response: { 200: ActorAnswerSchema },
      detail: { ...op('updateActor', [...ADMIN, 'IDENTITY_ACTOR_NOT_FOUND']),
        tags: ['actors'],
        summary: 'Rename, disable or re-enable an actor, or change its policies',
        description: 'Disabling or changing policies ends the actor\'s sessions: they answer 401 reauth-required (reason actor-disabled or policies-changed).',
      },
    })
    .post('/actors/:id/keys/rotate', async ({ params, set }) => {
      Object.assign(set.headers, noStore);
      return identity.rotateActorKey(params.id);
    }, {
      auth: 'admin',
      params: IdParams,
      response: { 200: ActorWithKey },
      detail: { ...op('rotateActorKey', [...ADMIN, 'IDENTITY_ACTOR_NOT_FOUND']),
        tags: ['actors'],
        summary: 'Rotate an actor\'s API key',
        description: 'Answers the new key once. The old key stops working now; sessions it opened answer 401 reauth-required (reason key-rotated).',
      },
    })
    .post('/sessions', async ({ body, status, set }) => {
      Object.assign(set.headers, noStore);
      return status(201, await identity.createSession(body.apiKey));
    }, {
      clientBudget: true,
      body: CreateSessionBody,
      response: { 201: TokenPair },
      detail: { ...op('createSession', ['unauthenticated', 'rate-limited']), tags: ['sessions'], summary: 'Open a session with an API key', security: [] },
    })
    .post('/sessions/refresh', async ({ body, set }) => {
      Object.assign(set.headers, noStore);
      return identity.refreshSession(body.refreshToken);
    }, {
      clientBudget: true,
      body: RefreshBody,
      response: { 200: TokenPair },
      detail: { ...op('refreshSession', ['unauthenticated', 'reauth-required', 'rate-limited']),
        tags: ['sessions'],
        summary: 'Exchange a refresh token for a new access and refresh token',
        description: 'Each refresh token works once. Presenting a used one revokes the session (401 reauth-required, reason refresh-reuse).',
        security: [],
      },
    })
    .delete('/sessions/:id', async ({ params, caller }) => ({ session: await identity.revokeSession(params.id, caller) }), {
      auth: 'caller',
      params: IdParams,
      response: { 200: RevokedSession },
      detail: { ...op('revokeSession', [...ADMIN, 'IDENTITY_SESSION_NOT_FOUND']),
        tags: ['sessions'],
        summary: 'Revoke a session',
        description: 'With an access token of the same actor, or as admin. Answers 200 {session} with revokedAt set (revoking again answers the same, with the first revocation\'s time). Another actor\'s session answers 404. Guards refuse the session within their live-cache time (2 s), and the playback URLs it opened end within 5 s (410 PLAYBACK_SESSION_ENDED).',
      },
    });
}
